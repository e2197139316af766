package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
)

// newestFilter is a payout or order listing's filter; zero members keep all.
type newestFilter struct {
	status, payerID string
	from, to        time.Time
}

// listNewest reads one page of payouts or orders (table), newest first by
// (created_at, seq), through the table's (workspace_id, created_at, seq),
// (workspace_id, status, created_at, seq) or (workspace_id, payer_id,
// created_at, seq) index: the created_at range and the page's position are
// one range of the index. The cursor is the last row's created_at in Unix
// microseconds and its seq, "micros.seq". It asks for one row more than the
// page holds to learn whether a next page exists.
func listNewest[T any](ctx context.Context, s *Store, table, cols, workspaceID string, f newestFilter, req payoutkit.PageRequest,
	scan func(scanner, ...any) (T, error), created func(T) time.Time,
) (payoutkit.Page[T], error) {
	req = req.Normalize()
	query, args, err := s.newestQuery(table, cols, workspaceID, f, req)
	if err != nil {
		return payoutkit.Page[T]{}, err
	}
	rows, err := s.reader().QueryContext(ctx, query, args...)
	if err != nil {
		return payoutkit.Page[T]{}, translate(ctx, table, err)
	}
	items, seqs, err := collectSeqs(rows, scan)
	if err != nil {
		return payoutkit.Page[T]{}, translate(ctx, table, err)
	}
	var page payoutkit.Page[T]
	if len(items) > req.Limit {
		items = items[:req.Limit]
		last := req.Limit - 1
		page.Next = strconv.FormatInt(created(items[last]).UnixMicro(), 10) + "." + strconv.FormatInt(seqs[last], 10)
	}
	page.Items = items
	if len(items) == 0 {
		if err := s.workspaceExists(ctx, s.reader(), workspaceID); err != nil {
			return payoutkit.Page[T]{}, translate(ctx, table, err)
		}
	}
	return page, nil
}

// newestQuery builds listNewest's statement and its arguments: one
// statement per combination of filters, so that each has its index.
func (s *Store) newestQuery(table, cols, workspaceID string, f newestFilter, req payoutkit.PageRequest) (string, []any, error) {
	where := []string{"workspace_id = $1"}
	args := []any{workspaceID}
	arg := func(v any, cast string) string {
		args = append(args, v)
		p := "$" + strconv.Itoa(len(args))
		if s.pg() {
			p += "::" + cast
		}
		return p
	}
	if f.status != "" {
		where = append(where, "status = "+arg(f.status, "text"))
	}
	if f.payerID != "" {
		where = append(where, "payer_id = "+arg(f.payerID, "text"))
	}
	if !f.from.IsZero() {
		where = append(where, "created_at >= "+arg(s.ts(f.from), "timestamptz"))
	}
	if !f.to.IsZero() {
		where = append(where, "created_at < "+arg(s.ts(f.to), "timestamptz"))
	}
	if req.Cursor != "" {
		at, seq, ok := parseTimeCursor(req.Cursor)
		if !ok {
			return "", nil, payoutkit.ErrInvalidInput
		}
		where = append(where, fmt.Sprintf("(created_at, seq) < (%s, %s)",
			arg(s.ts(time.UnixMicro(at)), "timestamptz"), arg(seq, "bigint")))
	}
	from := table
	if !s.pg() {
		// SQLite plans from the schema alone, and would take a created_at
		// range with two bounds over an equality on status: name the index
		// whose equality prefix covers the most of the filter. (PostgreSQL
		// plans from statistics.)
		index := table + "_workspace_created"
		switch {
		case f.payerID != "":
			index = table + "_workspace_payer_created"
		case f.status != "":
			index = table + "_workspace_status_created"
		}
		from += " INDEXED BY " + index
	}
	query := "SELECT " + cols + ", seq FROM " + from + " WHERE " + strings.Join(where, " AND ") +
		" ORDER BY created_at DESC, seq DESC LIMIT " + arg(req.Limit+1, "integer")

	return query, args, nil
}

// parseTimeCursor reads a listNewest cursor, "micros.seq". The micros are
// a stored time's, within the years 1 to 9999.
func parseTimeCursor(c string) (at, seq int64, ok bool) {
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
