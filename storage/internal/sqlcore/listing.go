package sqlcore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
)

// OpsWriter is what Ops needs of a store's writer: where its
// administrative transactions and statements, its reads and its point reads
// run.
type OpsWriter interface {
	// InTx runs fn as an administrative transaction: fn's error undoes
	// its changes and is returned as is.
	InTx(ctx context.Context, fn func(tx *sql.Tx) error) error
	Reader() Querier
	ReadRow(ctx context.Context, query string, args ...any) Scanner
	// Committed tells the engine's loops that a write committed work for
	// them.
	Committed()
}

// execAlone runs one administrative statement as a transaction of its own.
func (o *Ops) execAlone(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// Ops are a store's operations whose statements are the same on both
// databases: the reads and listings, and the administrative writes
// (workspaces, keys, staff, sessions, sign-in failures). Each store embeds
// them, bound to its writer (NewOps); what differs between the databases
// comes in an OpsConfig.
type Ops struct {
	// w runs the statements: the store's own connections, or the caller's
	// transaction.
	w OpsWriter
	c OpsConfig
	// judge is JudgeCreate's statement, rendered once.
	judge string
	// cache is what JudgeCreate read of the workspaces' controls (Fast).
	cache *controlsCache
}

// OpsConfig is what differs between the databases for Ops.
type OpsConfig struct {
	// TS is a time as the store's database stores it.
	TS func(time.Time) any
	// Translate is the store's error mapping.
	Translate func(ctx context.Context, op string, err error) error
	// Detach returns the context an administrative transaction's statements
	// run with.
	Detach func(context.Context) context.Context
	// StaffLockSQL finds ($1 e-mail, $2 workspace) the staff user that
	// DeleteStaffUser deletes, locking it where the database needs it.
	StaffLockSQL string
	// WorkspaceLockSQL finds ($1) a workspace, locking it against other
	// changes of its staff's roles where the database needs it.
	WorkspaceLockSQL string
	// Param renders the placeholder of the nth argument of a listing of
	// newest rows, typed as cast where the database needs it.
	Param func(n int, cast string) string
	// From renders the FROM clause of a listing of newest rows of table
	// filtered by f (the place for an index hint).
	From func(table string, f NewestFilter) string
	// LockBalanceSQL locks ($1) a workspace's balance row for the rest of
	// a transaction, where the database needs it ("" on SQLite, whose
	// writer holds the whole database). It is a statement of its own: a
	// read that waited for a row lock still sees the snapshot it started
	// with, so the reads after the lock must be later statements.
	LockBalanceSQL string
	// TextList renders a list of texts given as argument n, for IN, and
	// TextListArg that argument.
	TextList    func(n int) string
	TextListArg func([]string) any
	// InsertEventSQL inserts an event: $1 its workspace, $2... EventArgs.
	InsertEventSQL string
	// Exec and QueryRow run a statement of a create or a settlement in its
	// transaction, prepared where the store prepares it; nil runs it as
	// it comes.
	Exec     func(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error)
	QueryRow func(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row
}

// NewOps binds the common operations to w.
func NewOps(w OpsWriter, c OpsConfig) Ops {
	return Ops{w: w, c: c, judge: judgeSQL(c.Param), cache: new(controlsCache)}
}

// List reads one newest-first page: query takes $1 the workspace, $2 the
// seq to start below, $3 the number of rows and $4... the args, and selects
// seq last. It asks for one row more than the page holds to learn whether a
// next page exists.
func List[T any](ctx context.Context, l *Ops, op, workspaceID string, req payoutkit.PageRequest, query string,
	scan func(Scanner, ...any) (T, error), args ...any,
) (payoutkit.Page[T], error) {
	req = req.Normalize()
	before, err := ParseCursor(req.Cursor)
	if err != nil {
		return payoutkit.Page[T]{}, err
	}
	rows, err := l.w.Reader().QueryContext(ctx, query, append([]any{workspaceID, before, req.Limit + 1}, args...)...)
	if err != nil {
		return payoutkit.Page[T]{}, l.c.Translate(ctx, op, err)
	}
	items, seqs, err := CollectSeqs(rows, scan)
	if err != nil {
		return payoutkit.Page[T]{}, l.c.Translate(ctx, op, err)
	}
	var page payoutkit.Page[T]
	if len(items) > req.Limit {
		items = items[:req.Limit]
		page.Next = strconv.FormatInt(seqs[req.Limit-1], 10)
	}
	page.Items = items
	if len(items) == 0 {
		if err := WorkspaceExists(ctx, l.w.Reader(), workspaceID); err != nil {
			return payoutkit.Page[T]{}, l.c.Translate(ctx, op, err)
		}
	}
	return page, nil
}

// WorkspaceExists tells a listing of an unknown workspace (sql.ErrNoRows)
// from an empty one.
func WorkspaceExists(ctx context.Context, q Querier, id string) error {
	var one int
	return q.QueryRowContext(ctx, `SELECT 1 FROM workspaces WHERE id = $1`, id).Scan(&one)
}

// ParseCursor reads a Page.Next of List: the decimal seq of the last row
// shown. The empty cursor starts at the newest row.
func ParseCursor(c string) (int64, error) {
	if c == "" {
		return 1<<63 - 1, nil
	}
	for i := 0; i < len(c); i++ {
		if c[i] < '0' || c[i] > '9' {
			return 0, payoutkit.ErrInvalidInput
		}
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n <= 0 {
		return 0, payoutkit.ErrInvalidInput
	}
	return n, nil
}

// NewestFilter is a payout or order listing's filter; zero members keep all.
type NewestFilter struct {
	Status, PayerID string
	From, To        time.Time
	// Approval keeps the payouts in this approval state.
	Approval string
}

// ListNewest reads one page of payouts or orders (table), newest first by
// (created_at, seq), through the table's (workspace_id, created_at, seq),
// (workspace_id, status, created_at, seq) or (workspace_id, payer_id,
// created_at, seq) index: the created_at range and the page's position are
// one range of the index. The cursor is the last row's created_at in Unix
// microseconds and its seq, "micros.seq". It asks for one row more than the
// page holds to learn whether a next page exists.
func ListNewest[T any](ctx context.Context, l *Ops, table, cols, workspaceID string, f NewestFilter, req payoutkit.PageRequest,
	scan func(Scanner, ...any) (T, error), created func(T) time.Time,
) (payoutkit.Page[T], error) {
	req = req.Normalize()
	query, args, err := l.newestQuery(table, cols, workspaceID, f, req)
	if err != nil {
		return payoutkit.Page[T]{}, err
	}
	rows, err := l.w.Reader().QueryContext(ctx, query, args...)
	if err != nil {
		return payoutkit.Page[T]{}, l.c.Translate(ctx, table, err)
	}
	items, seqs, err := CollectSeqs(rows, scan)
	if err != nil {
		return payoutkit.Page[T]{}, l.c.Translate(ctx, table, err)
	}
	var page payoutkit.Page[T]
	if len(items) > req.Limit {
		items = items[:req.Limit]
		last := req.Limit - 1
		page.Next = strconv.FormatInt(created(items[last]).UnixMicro(), 10) + "." + strconv.FormatInt(seqs[last], 10)
	}
	page.Items = items
	if len(items) == 0 {
		if err := WorkspaceExists(ctx, l.w.Reader(), workspaceID); err != nil {
			return payoutkit.Page[T]{}, l.c.Translate(ctx, table, err)
		}
	}
	return page, nil
}

// newestQuery builds ListNewest's statement and its arguments: one
// statement per combination of filters, so that each has its index.
func (l *Ops) newestQuery(table, cols, workspaceID string, f NewestFilter, req payoutkit.PageRequest) (string, []any, error) {
	where := []string{"workspace_id = $1"}
	args := []any{workspaceID}
	arg := func(v any, cast string) string {
		args = append(args, v)
		return l.c.Param(len(args), cast)
	}
	if f.Status != "" {
		where = append(where, "status = "+arg(f.Status, "text"))
	}
	if f.PayerID != "" {
		where = append(where, "payer_id = "+arg(f.PayerID, "text"))
	}
	if f.Approval != "" {
		where = append(where, "approval = "+arg(f.Approval, "text"))
	}
	if !f.From.IsZero() {
		where = append(where, "created_at >= "+arg(l.c.TS(f.From), "timestamptz"))
	}
	if !f.To.IsZero() {
		where = append(where, "created_at < "+arg(l.c.TS(f.To), "timestamptz"))
	}
	if req.Cursor != "" {
		at, seq, ok := ParseTimeCursor(req.Cursor)
		if !ok {
			return "", nil, payoutkit.ErrInvalidInput
		}
		where = append(where, "(created_at, seq) < ("+arg(l.c.TS(time.UnixMicro(at)), "timestamptz")+", "+arg(seq, "bigint")+")")
	}
	query := "SELECT " + cols + ", seq FROM " + l.c.From(table, f) + " WHERE " + strings.Join(where, " AND ") +
		" ORDER BY created_at DESC, seq DESC LIMIT " + arg(req.Limit+1, "integer")
	return query, args, nil
}

// ParseTimeCursor reads a ListNewest cursor, "micros.seq". The micros are
// a stored time's, within the years 1 to 9999.
func ParseTimeCursor(c string) (at, seq int64, ok bool) {
	a, b, found := strings.Cut(c, ".")
	if !found || !digits(strings.TrimPrefix(a, "-")) || !digits(b) {
		return 0, 0, false
	}
	at, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	const minMicros, maxMicros = -62135596800_000000, 253402300799_999999 // 0001-01-01, 9999-12-31
	return at, seq, err1 == nil && err2 == nil && seq > 0 && at >= minMicros && at <= maxMicros
}

func digits(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// NewestQuery is the statement and arguments ListNewest runs for table, for
// tests that check its plan.
func NewestQuery(o *Ops, table, cols, workspaceID string, f NewestFilter, req payoutkit.PageRequest) (string, []any, error) {
	return o.newestQuery(table, cols, workspaceID, f, req)
}
