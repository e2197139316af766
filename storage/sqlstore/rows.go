package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
)

// Statements are written once for both dialects with $1, $2... placeholders
// (SQLite reads $N as the Nth argument) and run through database/sql with
// bound arguments, beneath bun's query builder: bun interpolates arguments
// into the SQL text, which would make every statement a new one to parse and
// plan, and so rule out prepared statements (pgx's statement cache on
// PostgreSQL, the statements prepare keeps on SQLite).

// querier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inTx runs fn in a write transaction: on SQLite one that holds the write
// lock from its BEGIN (IMMEDIATE), on PostgreSQL READ COMMITTED. fn's error
// rolls the transaction back and is returned as is.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.tx != nil {
		return s.inCallerTx(ctx, fn)
	}
	s.waitForPriority()
	s.claimWrite()
	return s.w.RunInTx(s.detach(ctx), nil, func(_ context.Context, tx bun.Tx) error { return fn(tx.Tx) })
}

// writeTx runs fn as one atomic write, as inTx does, with fn's error rolling
// back its changes and returned as is. fn joins the committer's next batch
// and runs with the committer's context.
// key names the workspace whose balance fn may change ("" for none): on
// PostgreSQL it chooses the committer, so that one workspace's writes share
// one, and orders the batch.
func (s *Store) writeTx(ctx context.Context, key string, fn txFunc) error {
	if s.tx != nil {
		return s.inCallerTx(ctx, func(tx *sql.Tx) error { return fn(ctx, tx) })
	}
	if s.batch == nil {
		return s.inTx(ctx, func(tx *sql.Tx) error { return fn(s.detach(ctx), tx) })
	}
	return s.committerFor(key).do(ctx, key, false, fn)
}

// writeTxRefusalSafe is writeTx for a write that, when it refuses
// (errNothingToCommit, an overdraft, a conflict), has changed nothing: on
// SQLite it runs without a savepoint of its own.
func (s *Store) writeTxRefusalSafe(ctx context.Context, key string, fn txFunc) error {
	if s.tx != nil {
		return s.inCallerTx(ctx, func(tx *sql.Tx) error { return fn(ctx, tx) })
	}
	if s.batch == nil {
		return s.inTx(ctx, func(tx *sql.Tx) error { return fn(s.detach(ctx), tx) })
	}
	return s.committerFor(key).do(ctx, key, true, fn)
}

// writeExec runs a single write statement, prepared if it is one of
// preparedWrites, in the committer's next batch.
func (s *Store) writeExec(ctx context.Context, key, query string, args ...any) (sql.Result, error) {
	if s.batch == nil || s.tx != nil {
		return s.exec(ctx, query, args...)
	}
	var res sql.Result
	fn := func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = s.txExec(ctx, tx, query, args...)
		return err
	}
	var pipe *pgPipe
	if s.pg() {
		pipe = execPipe(query, args, func(n int64) { res = rowsAffected(n) })
	}
	err := s.committerFor(key).submit(ctx, key, true, fn, pipe)
	return res, err
}

// rowsAffected is the sql.Result of a pipelined statement.
type rowsAffected int64

func (n rowsAffected) RowsAffected() (int64, error) { return int64(n), nil }

func (rowsAffected) LastInsertId() (int64, error) {
	return 0, errors.New("sqlstore: no LastInsertId on PostgreSQL")
}

// writeRows runs a single write statement that returns rows (UPDATE ...
// RETURNING) and hands them to read, which must consume and close them, in
// the committer's next batch.
func (s *Store) writeRows(ctx context.Context, read func(rowIter) error, query string, args ...any) error {
	if s.batch == nil || s.tx != nil {
		rows, err := s.writer().QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		return read(rows)
	}
	return s.batch.do(ctx, "", true, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := s.txQuery(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		return read(rows)
	})
}

// pgClaimSettings make PostgreSQL walk the event claim's index in its order
// and stop at the claim's LIMIT. Left to itself, the planner picks that plan
// only with fresh statistics: on a table it has not analyzed since it was
// small (a new deployment's first minute, or autovacuum off) it reads every
// due row through a bitmap and sorts them, and a backlog of ten thousand
// due events makes each claim 50 ms instead of 2 (TestPostgresClaimPlans).
// They are local to the claim's transaction; in a caller's transaction
// (WithTx) pgResetSettings restores the defaults after it.
const (
	pgClaimSettings = `SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true)`
	pgResetSettings = `SET LOCAL enable_sort TO DEFAULT; SET LOCAL enable_bitmapscan TO DEFAULT`
)

// rowIter is the rows of a query: database/sql's, or pgx's (pgxRows).
type rowIter interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// claimRows runs a claim: on SQLite as writeRows does; on PostgreSQL under
// pgClaimSettings when pinPlan is set, in a transaction of its own, beside
// the committers rather than in the outbox's batches: a claim's SKIP
// LOCKED needs no ordering with other writes, and in a batch it waited for
// the batch before and for its own batch's attempts (30-220 ms per claim
// under the spread payout load), while every delivery worker it would feed
// held its slot waiting for its record. Its COMMIT needs no company either:
// claims come a few dozen times a second at most.
func (s *Store) claimRows(ctx context.Context, pinPlan bool, read func(rowIter) error, query string, args ...any) error {
	if !s.pg() {
		return s.writeRows(ctx, read, query, args...)
	}
	if s.tx == nil && !s.reads.ungrouped.Load() {
		if err := s.claimPipelined(ctx, pinPlan, read, query, args); err != errNotPgx {
			return err
		}
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		ctx := s.detach(ctx)
		if pinPlan {
			if _, err := tx.ExecContext(ctx, pgClaimSettings); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, query, args...)
		if err == nil {
			err = read(rows)
		}
		if pinPlan && s.tx != nil {
			if _, rerr := tx.ExecContext(ctx, pgResetSettings); err == nil {
				err = rerr
			}
		}
		return err
	})
}

// bunReader runs reads built with bun's query builder, where the caller's
// transaction (WithTx), if any, sees them.
func (s *Store) bunReader() bun.IDB {
	if s.tx != nil {
		return s.btx
	}
	return s.r
}

// detach returns the context a statement runs with: on PostgreSQL, ctx
// without its cancellation (its values kept). pgx answers a cancellation
// in the middle of a statement by closing the connection, and when that
// races with the statement's end, database/sql can hand the dying
// connection to the next caller, whose statement then fails with "driver:
// bad connection": a client that hangs up could fail another client's
// request (TestPostgresCancelledCallersSpareOthers). A statement takes
// milliseconds; a caller that gave up gets its answer late and drops it.
// SQLite's driver interrupts a statement cleanly, so there ctx is kept
// (but for the point reads, which readRow runs detached on both).
func (s *Store) detach(ctx context.Context) context.Context {
	if s.pg() {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// detached is a querier whose statements run with detach's context.
type detached struct{ q querier }

func (d detached) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return d.q.ExecContext(context.WithoutCancel(ctx), query, args...)
}

func (d detached) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return d.q.QueryContext(context.WithoutCancel(ctx), query, args...)
}

func (d detached) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return d.q.QueryRowContext(context.WithoutCancel(ctx), query, args...)
}

// reader runs reads: SQLite's read pool, or PostgreSQL's pool.
func (s *Store) reader() querier {
	switch {
	case s.tx != nil:
		return s.tx
	case s.pg():
		return detached{s.r.DB}
	}
	return s.r.DB
}

// writer runs single-statement writes outside a transaction.
func (s *Store) writer() querier {
	if s.tx != nil {
		return s.tx
	}
	s.claimWrite()
	if s.pg() {
		return detached{s.w.DB}
	}
	return s.w.DB
}

// On SQLite, parsing a statement costs about as much as running it, so the
// statements of the hot paths are prepared once per connection: the write
// ones on the writer connection, the read ones on each read connection as
// it first runs them. (On PostgreSQL, pgx prepares and caches every
// statement per connection by itself.) Measured with these lists emptied,
// alternating runs: BenchmarkCreatePayout/sqlite/parallelx32 88-90 µs
// prepared against 133-136 µs, BenchmarkBalance/sqlite/serial 15-16.5 µs
// against 19.5-19.9 µs. The cold paths (listing, admin, the audit) parse
// their statements each time, and may use bun's query builder.
var (
	preparedWrites = []string{insertPayoutSQL, debitSQL, insertLedgerSQL, insertEventSQL,
		settlePayoutSQL, settleBalanceSQL, insertOrderSQL, payOrderSQL, creditSQL, moveCustomerSQL,
		savepointSQL, releaseSQL, rollbackToSQL, recordAttemptSQL, insertAttemptSQL, markHandedOffSQL}
	preparedReads = []string{selectPayoutSQL, selectOrderSQL, balanceSQL, apiKeySQL, workspaceSQL, apiKeyBalanceSQL}
)

// prepare prepares the SQLite statements of the hot paths.
func (s *Store) prepare(ctx context.Context) error {
	if s.pg() {
		return nil
	}
	s.wstmts, s.rstmts = make(map[string]*sql.Stmt), make(map[string]*sql.Stmt)
	// The claims differ between the dialects.
	for _, q := range append(slices.Clip(preparedWrites), s.q.claimEvents, s.q.claimHandoffs) {
		st, err := s.w.DB.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlstore: preparing statements: %w", err)
		}
		s.wstmts[q] = st
	}
	for _, q := range preparedReads {
		st, err := s.r.DB.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlstore: preparing statements: %w", err)
		}
		s.rstmts[q] = st
	}
	return nil
}

// txExec runs a write statement in tx, prepared if it is one of
// preparedWrites or a claim.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.wstmts[query]; st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQueryRow runs a statement that returns one row in tx, prepared if it is
// one of preparedWrites.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.wstmts[query]; st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// txQuery runs a statement that returns rows in tx, prepared if it is one
// of preparedWrites or a claim.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.wstmts[query]; st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// exec runs a single write statement outside a transaction.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := s.wstmts[query]; st != nil {
		return st.ExecContext(ctx, args...)
	}
	return s.writer().ExecContext(ctx, query, args...)
}

// readRow runs a read that returns one row when it is scanned: prepared if
// it is one of preparedReads (SQLite), grouped with others (PostgreSQL,
// readgroup.go).
//
// A prepared read runs without its caller's cancellation: each is a look-up
// by key that takes microseconds, and with a context that can be cancelled
// database/sql and the SQLite driver each start a goroutine per statement
// to watch it (7% of the server's CPU under the balance load).
func (s *Store) readRow(ctx context.Context, query string, args ...any) scanner {
	if st := s.rstmts[query]; st != nil {
		return st.QueryRowContext(context.WithoutCancel(ctx), args...)
	}
	if s.tx == nil && s.reads != nil {
		return s.reads.row(query, args)
	}
	return s.reader().QueryRowContext(ctx, query, args...)
}

// ts is a time as the dialect stores it: NULL for the zero time, otherwise
// UTC at microsecond precision, as TIMESTAMPTZ on PostgreSQL and as INTEGER
// microseconds since the Unix epoch on SQLite.
func (s *Store) ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	t = t.UTC().Truncate(time.Microsecond)
	if s.pg() {
		return t
	}
	return t.UnixMicro()
}

// timeCol scans what ts stored back into a UTC time.Time.
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.t = time.Time{}
	case int64:
		*c.t = time.UnixMicro(v).UTC()
	case time.Time:
		*c.t = v.UTC()
	default:
		return fmt.Errorf("sqlstore: cannot read a time from %T", src)
	}
	return nil
}

// hashCol scans a 32-byte BLOB/BYTEA (an API key's or a session token's hash).
type hashCol struct{ h *[32]byte }

func (c hashCol) Scan(src any) error {
	b, ok := src.([]byte)
	if !ok || len(b) != len(c.h) {
		return fmt.Errorf("sqlstore: stored hash is not %d bytes", len(c.h))
	}
	copy(c.h[:], b)
	return nil
}

// cleanText makes a string from outside (a webhook receiver's answer, an
// error naming it) storable as TEXT on both dialects: PostgreSQL refuses
// invalid UTF-8 and NUL characters, which would otherwise fail the delivery
// log instead of recording it.
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

type scanner interface{ Scan(dest ...any) error }

// payoutCols are the columns a new payout is inserted with; payoutReadCols
// add the settlement details, which only a completion sets.
const (
	payoutCols     = `workspace_id, payout_id, status, amount, asset, network, address, payer_id, txid, failure_reason, created_at, updated_at`
	payoutReadCols = payoutCols + `, asset_amount, network_fee`
)

// scanPayout scans payoutReadCols, then extra.
func scanPayout(sc scanner, extra ...any) (payoutkit.Payout, error) {
	var p payoutkit.Payout
	err := sc.Scan(append([]any{&p.WorkspaceID, &p.PayoutID, &p.Status, &p.Amount, &p.Asset, &p.Network, &p.Address,
		&p.PayerID, &p.TxID, &p.FailureReason, timeCol{&p.CreatedAt}, timeCol{&p.UpdatedAt},
		decimalCol{&p.AssetAmount}, decimalCol{&p.NetworkFee}}, extra...)...)
	return p, err
}

// decimalCol scans a nullable exact decimal: TEXT on SQLite, NUMERIC on
// PostgreSQL (which pgx hands over as text too).
type decimalCol struct{ d *decimal.NullDecimal }

func (c decimalCol) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*c.d = decimal.NullDecimal{}
		return nil
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("sqlstore: cannot read a decimal from %T", src)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return fmt.Errorf("sqlstore: stored decimal %q: %w", s, err)
	}
	*c.d = decimal.NullDecimal{Decimal: d, Valid: true}
	return nil
}

// decimalArg is a nullable decimal as both dialects store it: plain
// decimal text, or NULL.
func decimalArg(d decimal.NullDecimal) any {
	if !d.Valid {
		return nil
	}
	return d.Decimal.String()
}

func (s *Store) payoutArgs(p payoutkit.Payout) []any {
	return []any{p.WorkspaceID, p.PayoutID, string(p.Status), int64(p.Amount), p.Asset, p.Network, p.Address,
		p.PayerID, p.TxID, p.FailureReason, s.ts(p.CreatedAt), s.ts(p.UpdatedAt)}
}

const orderCols = `workspace_id, order_id, status, amount, payer_id, description, created_at, updated_at, paid_at`

func scanOrder(sc scanner, extra ...any) (payoutkit.Order, error) {
	var o payoutkit.Order
	err := sc.Scan(append([]any{&o.WorkspaceID, &o.OrderID, &o.Status, &o.Amount, &o.PayerID, &o.Description,
		timeCol{&o.CreatedAt}, timeCol{&o.UpdatedAt}, timeCol{&o.PaidAt}}, extra...)...)
	return o, err
}

const ledgerCols = `workspace_id, kind, amount, ref, event_id, created_at`

func scanLedger(sc scanner, extra ...any) (payoutkit.LedgerEntry, error) {
	var l payoutkit.LedgerEntry
	err := sc.Scan(append([]any{&l.WorkspaceID, &l.Kind, &l.Amount, &l.Ref, &l.EventID, timeCol{&l.CreatedAt}}, extra...)...)
	return l, err
}

const eventCols = `id, workspace_id, type, subject, created_at, body, state, attempts, next_attempt_at, last_error`

func scanEvent(sc scanner, extra ...any) (payoutkit.Event, error) {
	var e payoutkit.Event
	err := sc.Scan(append([]any{&e.ID, &e.WorkspaceID, &e.Type, &e.Subject, timeCol{&e.CreatedAt}, &e.Body,
		&e.State, &e.Attempts, timeCol{&e.NextAttemptAt}, &e.LastError}, extra...)...)
	if e.Body == nil && err == nil {
		e.Body = []byte{}
	}
	return e, err
}

// eventArgs are an event's columns after workspace_id, in eventCols order.
func (s *Store) eventArgs(ev payoutkit.Event) []any {
	return []any{ev.ID, string(ev.Type), ev.Subject, s.ts(ev.CreatedAt), ev.Body, string(ev.State),
		ev.Attempts, s.ts(ev.NextAttemptAt), cleanText(ev.LastError)}
}

const keyCols = `prefix, workspace_id, hash, created_at, revoked_at, last_used_at`

func scanKey(sc scanner) (payoutkit.APIKey, error) {
	var k payoutkit.APIKey
	err := sc.Scan(&k.Prefix, &k.WorkspaceID, hashCol{&k.Hash}, timeCol{&k.CreatedAt}, timeCol{&k.RevokedAt}, timeCol{&k.LastUsedAt})
	return k, err
}

const attemptCols = `event_id, attempt, attempted_at, status_code, latency_ns, error_message, response_head`

func scanAttempt(sc scanner) (payoutkit.DeliveryAttempt, error) {
	var a payoutkit.DeliveryAttempt
	err := sc.Scan(&a.EventID, &a.Attempt, timeCol{&a.At}, &a.StatusCode, &a.Latency, &a.Error, &a.ResponseHead)
	return a, err
}

// collect scans every row, closing rows.
func collect[T any](rows rowIter, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// collectSeqs is collect for rows that end with their seq: it returns the
// values and, beside them, their seqs (for the next page's position).
func collectSeqs[T any](rows *sql.Rows, scan func(scanner, ...any) (T, error)) ([]T, []int64, error) {
	var seqs []int64
	items, err := collect(rows, func(sc scanner) (T, error) {
		var seq int64
		v, err := scan(sc, &seq)
		seqs = append(seqs, seq)
		return v, err
	})
	return items, seqs, err
}

// claim runs a claiming UPDATE … RETURNING on the write path and returns the
// claimed rows oldest first (by seq): RETURNING promises no order. With
// pinPlan, on PostgreSQL it runs under pgClaimSettings.
func claim[T any](ctx context.Context, s *Store, pinPlan bool, scan func(scanner, *int64) (T, error), query string, args ...any) ([]T, error) {
	type claimed struct {
		v   T
		seq int64
	}
	var got []claimed
	err := s.claimRows(ctx, pinPlan, func(rows rowIter) error {
		var err error
		got, err = collect(rows, func(sc scanner) (claimed, error) {
			var c claimed
			var err error
			c.v, err = scan(sc, &c.seq)
			return c, err
		})
		return err
	}, query, args...)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(got, func(a, b claimed) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]T, len(got))
	for i, c := range got {
		out[i] = c.v
	}
	return out, nil
}
