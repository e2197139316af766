package sqlcore

// The debit of a create, on both databases: the one place in SQL of the
// no-overdraft rule and of the 24-hour limit. Each store renders it once,
// into the one statement (SQLite) or the one CTE of the one statement
// (PostgreSQL) that debits every create, judged or not.

// Debit renders the balance row's debit of a create: set is its SET list,
// where its condition (after the row's key). amount and created are the
// expressions of the payout's amount and creation; param renders the
// placeholder of argument n, typed as cast where the database needs it;
// the judgement's arguments (Ops.DebitArgs) are first to first+7.
//
// The debit happens only if the available balance covers the amount
// (available >= amount, the no-overdraft rule). A create that JudgeCreate
// judged writes the window it computed, and nothing else holds it back: its
// judgement read the row under its lock. Any other create is debited only
// if the workspace has no controls or still has the version the create was
// judged by from memory (a version NULL: not judged, so no controls), and
// within the daily limit (WithinDailyLimit); it adds its amount to the
// window's sum and its creation to window_next. Without a daily limit
// window_pos is NULL and the window is left as it is.
func Debit(param func(n int, cast string) string, amount, created string, first int) (set, where string) {
	version, limit := param(first, "bigint"), param(first+1, "bigint")
	cutoff, stale := param(first+2, "timestamptz"), param(first+3, "timestamptz")
	judged := param(first+4, "boolean")
	pos, spent, next := param(first+5, "timestamptz"), param(first+6, "bigint"), param(first+7, "timestamptz")
	set = `available = available - ` + amount + `, in_progress = in_progress + ` + amount + `,
		window_pos = CASE WHEN ` + judged + ` THEN ` + pos + ` ELSE window_pos END,
		window_spent = CASE WHEN ` + judged + ` THEN ` + spent + ` WHEN window_pos IS NULL THEN window_spent ELSE window_spent + ` + amount + ` END,
		window_next = CASE WHEN ` + judged + ` THEN ` + next + ` WHEN window_pos IS NULL OR window_next < ` + created + ` THEN window_next ELSE ` + created + ` END`
	where = `available >= ` + amount + ` AND (` + judged + ` OR (NOT controls OR controls_version = ` + version + `)
		AND ` + WithinDailyLimit(amount, created, limit, cutoff, stale) + `)`
	return set, where
}

// WithinDailyLimit is the 24-hour limit as a create's debit judges it, a
// condition on the balance row: true without a daily limit (window_pos
// NULL); otherwise the payout is after the window's edge, the window's sum
// with it stays within limit, and either no payout has to leave the window
// (window_next after cutoff, now-24h) or its edge moved less than WindowLag
// ago (window_pos at or after stale, cutoff less WindowLag). A sum with
// payouts in it that have left the window is larger than the window's:
// within the limit, so is the window's.
func WithinDailyLimit(amount, created, limit, cutoff, stale string) string {
	return `(window_pos IS NULL OR window_pos < ` + created + ` AND window_spent + ` + amount + ` <= ` + limit + `
		AND (window_next IS NULL OR window_next > ` + cutoff + ` OR window_pos >= ` + stale + `))`
}

// WindowRefund is the SET of a settlement's balance row that gives a failed
// payout's amount back to the 24-hour window, if the window still holds it
// (created after window_pos): failed is the condition that it failed.
func WindowRefund(failed, amount, created string) string {
	return `window_spent = window_spent - CASE WHEN ` + failed + ` AND window_pos < ` + created + ` THEN ` + amount + ` ELSE 0 END`
}

// DebitArgs are the arguments of a create's judgement, as Debit takes
// them: a create not judged (f and j nil), which is debited only in a
// workspace without controls; one judged from memory (f); one JudgeCreate
// judged (j), with the window after it.
func (o *Ops) DebitArgs(f *Fast, j *Judged) []any {
	args := []any{nil, nil, nil, nil, j != nil, nil, nil, nil}
	if f != nil {
		args[0], args[1], args[2], args[3] = f.Version, f.Limit, f.Cutoff, f.Stale
	}
	if j != nil {
		copy(args[5:], o.WindowArgs(j.Window))
	}
	return args
}
