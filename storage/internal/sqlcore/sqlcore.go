// Package sqlcore is what storage/sqlite and storage/postgres share: the
// column lists and scanners of payoutkit's tables, the time, hash and
// decimal column types, the listing queries, the error sentinels and the
// part of error mapping that is not the driver's, the migration runner, and
// the writer that runs a store's statements in its caller's transaction.
//
// It holds no statement that differs between the databases, and imports
// neither database's driver.
package sqlcore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
)

// Statements are written with $1, $2... placeholders (SQLite reads $N as the
// Nth argument) and run through database/sql with bound arguments, so that
// each statement text stays the same from one call to the next and can be
// prepared once (pgx's statement cache on PostgreSQL, the statements the
// SQLite store prepares).

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Scanner is one row to scan: *sql.Row, *sql.Rows, or a grouped read.
type Scanner interface{ Scan(dest ...any) error }

// RowIter is the rows of a query: database/sql's, or a driver's own.
type RowIter interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// TxFunc is one write, run in tx with ctx. It returns nil to keep its
// changes, or an error to have them undone and reported. A group committer
// may run it more than once, so it sets its results afresh each time.
type TxFunc func(ctx context.Context, tx *sql.Tx) error

// Errors for conditions that no payoutkit sentinel describes. Each store
// package re-exports them, so that errors.Is works the same on both.
var (
	// ErrBusy reports that the database stayed locked until the operation
	// gave up. Retrying later may succeed.
	ErrBusy = errors.New("sqlstore: database is busy")
	// ErrReadOnly reports that the database refuses writes.
	ErrReadOnly = errors.New("sqlstore: database is read-only")
	// ErrClosed reports a write submitted to a store after (or while) it
	// was closed. Nothing of that write was applied.
	ErrClosed = errors.New("sqlstore: store is closed")
	// ErrNoSchema reports that a store opened without migrating found no
	// payoutkit database: no file, or no payoutkit tables in it.
	ErrNoSchema = errors.New("sqlstore: no payoutkit database")
	// ErrSchemaOutdated reports that a store opened without migrating found
	// a schema older than the one its binary needs.
	ErrSchemaOutdated = errors.New("sqlstore: the database's schema is older than this binary's")
	// ErrNothingToCommit rolls back a write that succeeded without a change.
	ErrNothingToCommit = errors.New("sqlstore: nothing to commit")
	// ErrUnknownWorkspace refuses a write for a workspace that has no
	// balance row, having changed nothing (where no foreign key refuses it
	// first).
	ErrUnknownWorkspace = fmt.Errorf("sqlstore: unknown workspace: %w", payoutkit.ErrNotFound)
)

// Refusal reports whether err is a write's own refusal, after which its
// transaction is still sound: the write changed nothing.
func Refusal(err error) bool {
	return errors.Is(err, ErrNothingToCommit) || errors.Is(err, ErrUnknownWorkspace) || errors.Is(err, payoutkit.ErrInsufficientBalance) ||
		errors.Is(err, payoutkit.ErrConflict) || errors.Is(err, payoutkit.ErrPayoutLimit) || errors.Is(err, payoutkit.ErrForbidden) ||
		errors.Is(err, payoutkit.ErrBatchRefused)
}

// Apply runs fn, turning a panic into an error: a panic must not kill a
// committer, which every writer depends on.
func Apply(ctx context.Context, tx *sql.Tx, fn TxFunc) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlstore: panic in a write: %v", p)
		}
	}()
	return fn(ctx, tx)
}

// Translate is the part of a store's error mapping that is not its
// driver's: sentinels pass as they are, missing rows are
// payoutkit.ErrNotFound, a cancelled caller gets its context's error.
// driver maps what remains, returning nil for an error it does not know,
// which is then wrapped with op for the logs.
func Translate(ctx context.Context, op string, err error, driver func(op string, err error) error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*payoutkit.Error](err); ok {
		return err // already a sentinel (ErrInsufficientBalance, ...)
	}
	if errors.Is(err, ErrClosed) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return payoutkit.ErrNotFound
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The driver reports a cancelled statement in its own words
		// (SQLITE_INTERRUPT, 57014); the caller wants its context's error.
		return fmt.Errorf("sqlstore: %s: %w", op, ctxErr)
	}
	if e := driver(op, err); e != nil {
		return e
	}
	return fmt.Errorf("sqlstore: %s: %w", op, err)
}

// MustAffect returns errNone unless res changed a row.
func MustAffect(res sql.Result, errNone error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if n == 0 {
		return errNone
	}
	return nil
}

// RunInTx runs fn in a transaction of db: fn's error (or panic) rolls it
// back and is returned as is; otherwise it commits.
func RunInTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		done = true
		_ = tx.Rollback()
		return err
	}
	done = true
	return tx.Commit()
}

// CleanText makes a string from outside (a webhook receiver's answer, an
// error naming it) storable as TEXT on both databases: PostgreSQL refuses
// invalid UTF-8 and NUL characters, which would otherwise fail the delivery
// log instead of recording it.
func CleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// TimeCol scans a stored time (INTEGER microseconds since the Unix epoch on
// SQLite, TIMESTAMPTZ on PostgreSQL, NULL for the zero time) into a UTC
// time.Time.
type TimeCol struct{ T *time.Time }

// Scan implements sql.Scanner.
func (c TimeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.T = time.Time{}
	case int64:
		*c.T = time.UnixMicro(v).UTC()
	case time.Time:
		*c.T = v.UTC()
	default:
		return fmt.Errorf("sqlstore: cannot read a time from %T", src)
	}
	return nil
}

// TextCol scans a nullable text, NULL as "".
type TextCol struct{ S *string }

// Scan implements sql.Scanner.
func (c TextCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.S = ""
	case string:
		*c.S = v
	case []byte:
		*c.S = string(v)
	default:
		return fmt.Errorf("sqlstore: cannot read a text from %T", src)
	}
	return nil
}

// HashCol scans a 32-byte BLOB/BYTEA (an API key's or a session token's hash).
type HashCol struct{ H *[32]byte }

// Scan implements sql.Scanner.
func (c HashCol) Scan(src any) error {
	b, ok := src.([]byte)
	if !ok || len(b) != len(c.H) {
		return fmt.Errorf("sqlstore: stored hash is not %d bytes", len(c.H))
	}
	copy(c.H[:], b)
	return nil
}

// DecimalCol scans a nullable exact decimal: TEXT on SQLite, NUMERIC on
// PostgreSQL (which pgx hands over as text too).
type DecimalCol struct{ D *decimal.NullDecimal }

// Scan implements sql.Scanner.
func (c DecimalCol) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*c.D = decimal.NullDecimal{}
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
	*c.D = decimal.NullDecimal{Decimal: d, Valid: true}
	return nil
}

// DecimalArg is a nullable decimal as both databases store it: plain
// decimal text, or NULL.
func DecimalArg(d decimal.NullDecimal) any {
	if !d.Valid {
		return nil
	}
	return d.Decimal.String()
}

// Column lists of payoutkit's tables. PayoutCols are the columns a new
// payout is inserted with; PayoutReadCols add the settlement details, which
// only a completion sets, and the approval hold, which the create's policy
// check sets.
const (
	PayoutCols     = `workspace_id, payout_id, status, amount, asset, network, address, payer_id, txid, failure_reason, created_at, updated_at`
	PayoutReadCols = PayoutCols + `, asset_amount, network_fee, approval, batch_id`
	OrderCols      = `workspace_id, order_id, status, amount, payer_id, description, created_at, updated_at, paid_at`
	LedgerCols     = `workspace_id, kind, amount, ref, event_id, created_at`
	EventCols      = `id, workspace_id, type, subject, created_at, body, state, attempts, next_attempt_at, last_error`
	KeyCols        = `prefix, workspace_id, hash, created_at, revoked_at, last_used_at, scopes, allow_ips`
	AttemptCols    = `event_id, attempt, attempted_at, status_code, latency_ns, error_message, response_head`
	CustomerCols   = `workspace_id, payer_id, paid_in, paid_out, in_progress, first_seen_at`
	SessionCols    = `token_hash, workspace_id, staff_email, created_at, last_seen_at`
)

// PayoutLeaseCols are a new payout's hand-off lease columns, and
// EventLeaseCols a new event's lease columns, as a create leased to its
// engine (payoutkit.Lease) writes them: LeaseArgs gives their values.
const (
	PayoutLeaseCols = `handoff_owner, handoff_token, handoff_lease_until`
	EventLeaseCols  = `lease_owner, lease_until`
)

// LeaseArgs are l's owner (NULL for none), the hand-off's fencing token
// (1 when leased, as a first claim's, otherwise 0) and l's end (NULL for
// none), its time as ts stores it.
func LeaseArgs(l payoutkit.Lease, ts func(time.Time) any) (owner, token, until any) {
	if l.Owner == "" {
		return nil, 0, nil
	}
	return l.Owner, 1, ts(l.Until)
}

// ScanPayout scans PayoutReadCols, then extra.
func ScanPayout(sc Scanner, extra ...any) (payoutkit.Payout, error) {
	var p payoutkit.Payout
	err := sc.Scan(append([]any{&p.WorkspaceID, &p.PayoutID, &p.Status, &p.Amount, &p.Asset, &p.Network, &p.Address,
		&p.PayerID, &p.TxID, &p.FailureReason, TimeCol{&p.CreatedAt}, TimeCol{&p.UpdatedAt},
		DecimalCol{&p.AssetAmount}, DecimalCol{&p.NetworkFee}, &p.Approval, TextCol{&p.BatchID}}, extra...)...)
	return p, err
}

// PayoutArgs are a payout's PayoutCols, its times as ts stores them.
func PayoutArgs(p payoutkit.Payout, ts func(time.Time) any) []any {
	return []any{p.WorkspaceID, p.PayoutID, string(p.Status), int64(p.Amount), p.Asset, p.Network, p.Address,
		p.PayerID, p.TxID, p.FailureReason, ts(p.CreatedAt), ts(p.UpdatedAt)}
}

// ScanOrder scans OrderCols, then extra.
func ScanOrder(sc Scanner, extra ...any) (payoutkit.Order, error) {
	var o payoutkit.Order
	err := sc.Scan(append([]any{&o.WorkspaceID, &o.OrderID, &o.Status, &o.Amount, &o.PayerID, &o.Description,
		TimeCol{&o.CreatedAt}, TimeCol{&o.UpdatedAt}, TimeCol{&o.PaidAt}}, extra...)...)
	return o, err
}

// ScanLedger scans LedgerCols, then extra.
func ScanLedger(sc Scanner, extra ...any) (payoutkit.LedgerEntry, error) {
	var l payoutkit.LedgerEntry
	err := sc.Scan(append([]any{&l.WorkspaceID, &l.Kind, &l.Amount, &l.Ref, &l.EventID, TimeCol{&l.CreatedAt}}, extra...)...)
	return l, err
}

// ScanEvent scans EventCols, then extra. A stored empty body reads as an
// empty, not nil, slice.
func ScanEvent(sc Scanner, extra ...any) (payoutkit.Event, error) {
	var e payoutkit.Event
	err := sc.Scan(append([]any{&e.ID, &e.WorkspaceID, &e.Type, &e.Subject, TimeCol{&e.CreatedAt}, &e.Body,
		&e.State, &e.Attempts, TimeCol{&e.NextAttemptAt}, &e.LastError}, extra...)...)
	if e.Body == nil && err == nil {
		e.Body = []byte{}
	}
	return e, err
}

// EventArgs are an event's columns after workspace_id, in EventCols order,
// its times as ts stores them.
func EventArgs(ev payoutkit.Event, ts func(time.Time) any) []any {
	return []any{ev.ID, string(ev.Type), ev.Subject, ts(ev.CreatedAt), ev.Body, string(ev.State),
		ev.Attempts, ts(ev.NextAttemptAt), CleanText(ev.LastError)}
}

// ScanKey scans KeyCols.
func ScanKey(sc Scanner) (payoutkit.APIKey, error) {
	var k payoutkit.APIKey
	err := sc.Scan(&k.Prefix, &k.WorkspaceID, HashCol{&k.Hash}, TimeCol{&k.CreatedAt}, TimeCol{&k.RevokedAt}, TimeCol{&k.LastUsedAt},
		ScopesCol{&k.Scopes}, AllowIPsCol{&k.AllowIPs})
	return k, err
}

// KeyControlArgs are an API key's scopes and allowlist as the columns
// scopes and allow_ips store them: comma-separated text.
func KeyControlArgs(k payoutkit.APIKey) (scopes, allowIPs string) {
	s := make([]string, len(k.Scopes))
	for i, sc := range k.Scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ","), strings.Join(payoutkit.FormatAllowIPs(k.AllowIPs), ",")
}

// ScopesCol scans the scopes column: a key's scopes, comma-separated,
// never nil (empty text is a read-only key).
type ScopesCol struct{ S *[]payoutkit.Scope }

// Scan implements sql.Scanner.
func (c ScopesCol) Scan(src any) error {
	text, err := textOf(src)
	if err != nil {
		return err
	}
	*c.S = []payoutkit.Scope{}
	for w := range strings.SplitSeq(text, ",") {
		if w != "" {
			*c.S = append(*c.S, payoutkit.Scope(w))
		}
	}
	return nil
}

// AllowIPsCol scans the allow_ips column: CIDR ranges and addresses,
// comma-separated (empty text is no allowlist).
type AllowIPsCol struct{ P *[]netip.Prefix }

// Scan implements sql.Scanner.
func (c AllowIPsCol) Scan(src any) error {
	text, err := textOf(src)
	if err != nil {
		return err
	}
	*c.P = nil
	if text == "" {
		return nil
	}
	list, err := payoutkit.ParseAllowIPs(strings.Split(text, ","))
	if err != nil {
		return fmt.Errorf("sqlstore: stored allow_ips %q: %w", text, err)
	}
	*c.P = list
	return nil
}

// textOf reads a TEXT column, which drivers hand over as a string or bytes.
func textOf(src any) (string, error) {
	switch v := src.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	default:
		return "", fmt.Errorf("sqlstore: cannot read text from %T", src)
	}
}

// ScanAttempt scans AttemptCols.
func ScanAttempt(sc Scanner) (payoutkit.DeliveryAttempt, error) {
	var a payoutkit.DeliveryAttempt
	err := sc.Scan(&a.EventID, &a.Attempt, TimeCol{&a.At}, &a.StatusCode, &a.Latency, &a.Error, &a.ResponseHead)
	return a, err
}

// ScanCustomer scans CustomerCols, then extra.
func ScanCustomer(sc Scanner, extra ...any) (payoutkit.Customer, error) {
	var c payoutkit.Customer
	err := sc.Scan(append([]any{&c.WorkspaceID, &c.PayerID, &c.PaidIn, &c.PaidOut, &c.InProgress, TimeCol{&c.FirstSeenAt}}, extra...)...)
	return c, err
}

// ScanSession scans SessionCols.
func ScanSession(sc Scanner) (payoutkit.StaffSession, error) {
	var ss payoutkit.StaffSession
	err := sc.Scan(HashCol{&ss.TokenHash}, &ss.WorkspaceID, &ss.StaffEmail, TimeCol{&ss.CreatedAt}, TimeCol{&ss.LastSeenAt})
	return ss, err
}

// Collect scans every row, closing rows.
func Collect[T any](rows RowIter, scan func(Scanner) (T, error)) ([]T, error) {
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

// CollectSeqs is Collect for rows that end with their seq: it returns the
// values and, beside them, their seqs (for the next page's position).
func CollectSeqs[T any](rows RowIter, scan func(Scanner, ...any) (T, error)) ([]T, []int64, error) {
	var seqs []int64
	items, err := Collect(rows, func(sc Scanner) (T, error) {
		var seq int64
		v, err := scan(sc, &seq)
		seqs = append(seqs, seq)
		return v, err
	})
	return items, seqs, err
}

// Claim runs a claiming UPDATE … RETURNING through run, which hands the
// rows to its read function, and returns the claimed rows oldest first (by
// seq): RETURNING promises no order.
func Claim[T any](run func(read func(RowIter) error) error, scan func(Scanner, *int64) (T, error)) ([]T, error) {
	type claimed struct {
		v   T
		seq int64
	}
	var got []claimed
	err := run(func(rows RowIter) error {
		var err error
		got, err = Collect(rows, func(sc Scanner) (claimed, error) {
			var c claimed
			var err error
			c.v, err = scan(sc, &c.seq)
			return c, err
		})
		return err
	})
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
