package postgres

import (
	"fmt"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// claimEventsSQL locks the due events with FOR UPDATE SKIP LOCKED, so that
// instances claim disjoint sets.
var claimEventsSQL = sqlcore.ClaimEventsSQL("SELECT jsonb_array_elements_text($5::jsonb)", "FOR UPDATE OF e SKIP LOCKED")

// claimHandoffsSQL claims the payouts of payout_handoffs after seq $5 whose
// hand-off is due (submitted, not handed off, not held, lease free, judged
// on the payout's own row), in their order, locked with FOR UPDATE SKIP
// LOCKED so that instances claim disjoint sets. A held payout waits in the
// queue until approved; a handed-off or settled one has left it.
const claimHandoffsSQL = `WITH due AS MATERIALIZED (
	SELECT p.seq FROM payout_handoffs q, LATERAL (
		SELECT p.seq FROM payouts p
		WHERE p.seq = q.seq AND p.status = 'submitted' AND p.handed_off_at IS NULL AND p.approval <> 'pending'
			AND (p.handoff_lease_until IS NULL OR p.handoff_lease_until <= $1)
		FOR UPDATE SKIP LOCKED
	) p
	WHERE q.seq > $5
	ORDER BY q.seq
	LIMIT $3
)
UPDATE payouts SET handoff_lease_until = $2, handoff_owner = $4, handoff_token = handoff_token + 1
WHERE seq IN (SELECT seq FROM due)
RETURNING ` + sqlcore.PayoutReadCols + `, seq, handoff_token`

// The money movements as one statement each.

// pgDay is the UTC day (since the Unix epoch) of a TIMESTAMPTZ expression,
// as payoutkit.PayoutDay counts it: the day counters of payout_days.
func pgDay(t string) string {
	return "((" + t + " AT TIME ZONE 'UTC')::date - date '1970-01-01')::bigint"
}

// pgAddDay adds the payout debited in CTE from to its day's counters:
// created is its creation time.
func pgAddDay(from, created string) string {
	return `INSERT INTO payout_days (workspace_id, day, submitted)
	SELECT workspace_id, ` + pgDay(created) + `, 1 FROM ` + from + `
	ON CONFLICT (workspace_id, day) DO UPDATE SET submitted = payout_days.submitted + 1`
}

// pgEventInsert inserts an event whose columns after workspace_id are the
// parameters from $first on (eventArgs order), for each row of from.
func pgEventInsert(from string, first int) string {
	return fmt.Sprintf(`INSERT INTO events (%s)
	SELECT %s FROM %s f JOIN workspaces w ON w.id = f.workspace_id`, sqlcore.EventCols, pgEventValues(first), from)
}

// pgCreatedEventInsert is pgEventInsert for a new payout's event, with the
// parameters $owner and $until its lease's owner and end (NULL for none),
// which a workspace with a webhook URL stores it leased with.
func pgCreatedEventInsert(from string, first, owner, until int) string {
	leased := func(n int, cast string) string {
		return fmt.Sprintf(`CASE WHEN w.webhook_url = '' THEN NULL ELSE $%d::%s END`, n, cast)
	}
	return fmt.Sprintf(`INSERT INTO events (%s, %s)
	SELECT %s, %s, %s FROM %s f JOIN workspaces w ON w.id = f.workspace_id`, sqlcore.EventCols, sqlcore.EventLeaseCols,
		pgEventValues(first), leased(owner, "text"), leased(until, "timestamptz"), from)
}

// pgEventValues are an event's EventCols values from the parameters from
// $first on, for a row f naming the workspace and its row w.
func pgEventValues(first int) string {
	casts := []string{"text", "text", "text", "timestamptz", "bytea", "text", "integer", "timestamptz", "text"}
	p := make([]string, len(casts))
	for i, c := range casts {
		p[i] = fmt.Sprintf("$%d::%s", first+i, c)
	}
	return p[0] + ", f.workspace_id, " + sqlcore.EventValues(p[1:])
}

// pgCreatePayoutSQL is every create: $1-$12 the payout (payoutArgs),
// $13-$21 the event (eventArgs), $22-$24 the lease (sqlcore.LeaseArgs),
// which the payout's hand-off and the event are stored with, $25-$32 how
// the create was judged (sqlcore.Ops.DebitArgs). It inserts the payout
// unless its id is taken, debits the balance (sqlcore.Debit, the store's one
// statement of the no-overdraft rule and of the 24-hour limit) only if the
// payout was inserted, and records the ledger entry, the customer's
// in_progress, the day counter, the event and the hand-off's queue row only
// if the debit happened. It reports (inserted, debited); the caller commits
// only when both are 1.
var pgCreatePayoutSQL = func() string {
	set, where := sqlcore.Debit(pgParam, "$4", "$11::timestamptz", 25)
	return `WITH p AS (
	INSERT INTO payouts (` + sqlcore.PayoutCols + `, ` + sqlcore.PayoutLeaseCols + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $22, $23, $24)
	ON CONFLICT (workspace_id, payout_id) DO NOTHING
	RETURNING workspace_id, seq
), d AS (
	UPDATE balances SET ` + set + `
	WHERE workspace_id = (SELECT workspace_id FROM p) AND ` + where + `
	RETURNING workspace_id
), l AS (
	INSERT INTO ledger_entries (` + sqlcore.LedgerCols + `)
	SELECT workspace_id, 'payout_debit', -$4::bigint, $2::text, $13::text, $16::timestamptz FROM d
), c AS (
	INSERT INTO customers (workspace_id, payer_id, in_progress, first_seen_at)
	SELECT workspace_id, $8::text, $4::bigint, $11::timestamptz FROM d
	ON CONFLICT (workspace_id, payer_id) DO UPDATE SET in_progress = customers.in_progress + EXCLUDED.in_progress
), n AS (
	` + pgAddDay("d", "$11::timestamptz") + `
), e AS (
	` + pgCreatedEventInsert("d", 13, 22, 24) + `
), h AS (
	INSERT INTO payout_handoffs (seq) SELECT seq FROM p WHERE EXISTS (SELECT 1 FROM d)
)
SELECT (SELECT count(*) FROM p), (SELECT count(*) FROM d)`
}()

// pgParam is the placeholder of argument n, typed as cast.
func pgParam(n int, cast string) string { return fmt.Sprintf("$%d::%s", n, cast) }

// pgSettlePayoutSQL: $1 workspace, $2 payout_id, $3 status, $4 txid,
// $5 failure reason, $6 updated at, $7-$15 the event, $16 asset amount,
// $17 network fee. Everything hangs on
// the conditional UPDATE of the payout, so the statement moves all or
// nothing; it returns how many payouts it settled. The customer's row to
// insert cannot carry the negative in_progress change (CHECK constraints
// judge it before the conflict does), so the update reads the amount from p.
// The payout moves from submitted to completed or failed on the counters
// of its creation day (payout_days), after the balance row's lock.
// A failed payout gives its amount back to the 24-hour window that still
// holds it, on the balance row.
var pgSettlePayoutSQL = pgSettleSQL("", "")

// pgRejectPayoutSQL is pgSettlePayoutSQL for a held payout's rejection.
var pgRejectPayoutSQL = pgSettleSQL(", approval = 'rejected'", " AND approval = 'pending'")

func pgSettleSQL(set, where string) string {
	return `WITH p AS (
	UPDATE payouts SET status = $3, txid = $4, failure_reason = $5, updated_at = $6,
		asset_amount = $16::numeric, network_fee = $17::numeric` + set + `
	WHERE workspace_id = $1 AND payout_id = $2 AND status = 'submitted'` + where + `
	RETURNING workspace_id, payer_id, amount, created_at, seq
), q AS (
	DELETE FROM payout_handoffs WHERE seq IN (SELECT seq FROM p)
), b AS (
	UPDATE balances SET in_progress = balances.in_progress - p.amount,
		available = balances.available + CASE WHEN $3 = 'failed' THEN p.amount ELSE 0 END,
		` + sqlcore.WindowRefund("$3 = 'failed'", "p.amount", "p.created_at") + `
	FROM p WHERE balances.workspace_id = p.workspace_id
	RETURNING p.workspace_id, p.payer_id, p.amount, p.created_at
), c AS (
	INSERT INTO customers (workspace_id, payer_id, paid_out, first_seen_at)
	SELECT workspace_id, payer_id, CASE WHEN $3 = 'completed' THEN amount ELSE 0 END, $6::timestamptz FROM b
	ON CONFLICT (workspace_id, payer_id) DO UPDATE SET
		in_progress = customers.in_progress - (SELECT amount FROM p), paid_out = customers.paid_out + EXCLUDED.paid_out
), n AS (
	UPDATE payout_days SET submitted = payout_days.submitted - 1,
		completed = payout_days.completed + CASE WHEN $3 = 'completed' THEN 1 ELSE 0 END,
		failed = payout_days.failed + CASE WHEN $3 = 'completed' THEN 0 ELSE 1 END
	FROM b WHERE payout_days.workspace_id = b.workspace_id AND payout_days.day = ` + pgDay("b.created_at") + `
), l AS (
	INSERT INTO ledger_entries (` + sqlcore.LedgerCols + `)
	SELECT workspace_id, 'payout_refund', amount, $2::text, $7::text, $10::timestamptz FROM p WHERE $3::text = 'failed'
), e AS (
	` + pgEventInsert("p", 7) + `
)
SELECT count(*) FROM p`
}

// pgMarkOrderPaidSQL: $1 workspace, $2 order_id, $3 paid at, $4 updated at,
// $5-$13 the event; it returns how many orders it marked paid. An order
// without a payer_id moves no customer.
var pgMarkOrderPaidSQL = `WITH o AS (
	UPDATE orders SET status = 'paid', paid_at = $3, updated_at = $4
	WHERE workspace_id = $1 AND order_id = $2 AND status = 'pending'
	RETURNING workspace_id, payer_id, amount
), b AS (
	UPDATE balances SET available = balances.available + o.amount
	FROM o WHERE balances.workspace_id = o.workspace_id
	RETURNING o.workspace_id, o.payer_id, o.amount
), c AS (
	INSERT INTO customers (workspace_id, payer_id, paid_in, first_seen_at)
	SELECT workspace_id, payer_id, amount, $3::timestamptz FROM b WHERE payer_id <> ''
	ON CONFLICT (workspace_id, payer_id) DO UPDATE SET paid_in = customers.paid_in + EXCLUDED.paid_in
), l AS (
	INSERT INTO ledger_entries (` + sqlcore.LedgerCols + `)
	SELECT workspace_id, 'order_credit', amount, $2::text, $5::text, $8::timestamptz FROM o
), e AS (
	` + pgEventInsert("o", 5) + `
)
SELECT count(*) FROM o`

// pgRecordAttemptSQL: $1 event id, $2 owner, $3-$6 the next delivery state,
// $7-$12 the attempt; it inserts the attempt only if owner held the lease.
// A leased event is pending (the events_lease_pending constraint): the
// condition leaves the state out so that the plan is always the lookup by
// id, never a walk of the due events' index (see migration 0007).
const pgRecordAttemptSQL = `WITH u AS (
	UPDATE events SET state = $3, attempts = $4, next_attempt_at = $5, last_error = $6, lease_owner = NULL, lease_until = NULL
	WHERE id = $1 AND lease_owner = $2
	RETURNING id
)
INSERT INTO delivery_attempts (` + sqlcore.AttemptCols + `)
SELECT id, $7::integer, $8::timestamptz, $9::integer, $10::bigint, $11::text, $12::text FROM u`

// pgRecordDeliveredSQL is pgRecordAttemptSQL for a delivered event, which
// keeps its attempt, $7-$10 (sqlcore.DeliveredArgs), on its own row: one
// update of the event, no row of delivery_attempts.
const pgRecordDeliveredSQL = `UPDATE events SET state = $3, attempts = $4, next_attempt_at = $5, last_error = $6, lease_owner = NULL, lease_until = NULL,
	(` + sqlcore.DeliveredCols + `) = ($7::timestamptz, $8::integer, $9::bigint, $10::text)
	WHERE id = $1 AND lease_owner = $2`

// pgInsertEventSQL inserts one event: $1 its workspace, $2-$10 EventArgs.
var pgInsertEventSQL = pgEventInsert("(SELECT $1::text AS workspace_id)", 2)
