package storetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// PathsStore is one input's store for FuzzMoneyPaths.
type PathsStore struct {
	Store payoutkit.Store
	// Begin, when set, begins a transaction of the caller's on the store's
	// database and returns the store bound to it (the store's WithTx). A
	// store without WithTx (memstore) leaves it nil: its inputs' caller's
	// transactions run as concurrent callers instead.
	Begin func(ctx context.Context) (CallerTx, error)
}

// CallerTx is a transaction of the caller's with the store bound to it.
type CallerTx struct {
	Store            payoutkit.Store
	Commit, Rollback func() error
}

// OpenPaths returns a new, empty store for one input of FuzzMoneyPaths.
// The fuzz closes the store.
type OpenPaths func(t *testing.T) PathsStore

// MaxPathOps bounds the operations one input of FuzzMoneyPaths runs.
const MaxPathOps = 64

// FuzzMoneyPaths runs the money rules on every path a store has: rounds of
// operations on two workspaces, each round either concurrent callers
// released together (so that their writes share a group commit on SQLite
// and a pipelined batch on PostgreSQL, refusals among accepted writes) or
// the operations of one transaction of the caller's (WithTx), which the
// caller commits or rolls back, with concurrent callers on the other
// workspace beside it.
//
// An input is a list of rounds. A round's first byte h says its kind
// (h&3: 0 concurrent callers on one workspace, 1 concurrent callers on
// both, 2 a caller's transaction committed, 3 one rolled back), its number
// of operations ((h>>2&7)+1), its workspace (h>>7) and, for a transaction,
// how many concurrent callers run beside it on the other workspace
// (h>>5&3). One byte per operation follows, the low four bits the
// operation and the high four its argument, much as FuzzMoneyInvariants
// reads them (12 funds the workspace: an order created and paid; 3
// creates an earlier payout_id again, with its first amount when the
// argument is 8 or more).
//
// After every round (and after every operation in a transaction, read
// through it) the workspaces' Audit must Check (no balance is negative),
// and equal a model computed from what the store answered: an accepted
// create debits exactly its amount, a refused one changes nothing, a
// failed or rejected payout is credited back, a paid order is credited
// once. No balance read while a round runs is negative. Every error
// carries a contract code; a replay returns the stored payout and a
// payout is created once; a payout is settled once, and a held one only
// after its approval; the payout policy judges every create (exactly when
// the round's operations run one at a time, within the bounds concurrency
// leaves otherwise: the 24-hour limit holds for the round's creates
// together); a refusal must have a cause (an overdraft refused while the
// balance surely covered it fails). A rolled-back transaction changes
// nothing; a committed one leaves what it read inside.
func FuzzMoneyPaths(f *testing.F, open OpenPaths) {
	for _, seed := range pathSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runPaths(t, open, data) })
}

// Operations, by the low four bits of their byte.
const (
	pathOrder        = 0  // create an order
	pathPay          = 1  // pay an order (maybe again, maybe unknown)
	pathCreate       = 2  // create a new payout; also 14
	pathReplay       = 3  // create an earlier payout_id again, with its amount or another
	pathComplete     = 4  // complete a payout; also 15
	pathFail         = 5  // fail a payout
	pathDaily        = 6  // set a daily limit
	pathNoLimits     = 7  // clear every limit
	pathMax          = 8  // max_payout, or none
	pathApprovalOver = 9  // approval_over, or none
	pathApprove      = 10 // approve a held payout
	pathReject       = 11 // reject a held payout
	pathFund         = 12 // create an order and pay it
	pathBatch        = 13 // a batch of new payouts, all or nothing when the argument is odd
)

var (
	pathAmounts = []string{"0.01", "1.00", "2.50", "10", "0", "99.99"}
	pathLimits  = []payoutkit.Amount{1, 100, 250, 1000, 0, 9999}
)

// pathKind names what an operation does, as the model applies it.
type pathKind int

const (
	kindOrder pathKind = iota
	kindFund
	kindPay
	kindCreate
	kindComplete
	kindFail
	kindPolicy
	kindApprove
	kindReject
	kindBatch
)

// pathOp is one operation of a round, decided before the round runs, and
// its answer.
type pathOp struct {
	ws     *pathWS
	b      byte
	kind   pathKind
	id     string // the order or payout it names
	amount string
	a      payoutkit.Amount
	payer  string
	patch  payoutkit.PolicyPatch

	// A batch's items, each a create answered as the batch answered it.
	items        []*pathOp
	allOrNothing bool

	createErr error // a fund's order create
	err       error
	replayed  bool
	order     payoutkit.Order
	payout    payoutkit.Payout
	policy    payoutkit.PayoutPolicy
}

func (o *pathOp) String() string {
	return fmt.Sprintf("op %#02x (%s %s %s) on %s", o.b, o.kind, o.id, o.amount, o.ws.name)
}

func (k pathKind) String() string {
	return [...]string{"order", "fund", "pay", "create", "complete", "fail", "policy", "approve", "reject", "batch"}[k]
}

// pathWS is one workspace of an input: its model (what is committed) and
// the ids handed out so far (never taken back, so that an id of a
// rolled-back transaction or of a refused create is used again).
type pathWS struct {
	name, id string
	m        *pathModel
	orders   int
	payouts  []payoutkit.Amount // the amount each payout id was first asked with
}

// pathModel is a workspace's money as the store's answers say it is.
type pathModel struct {
	orders  map[string]*orderState
	payouts map[string]*payoutkit.Payout
	policy  payoutkit.PayoutPolicy
}

type orderState struct {
	amount payoutkit.Amount
	payer  string
	paid   bool
	paidAt time.Time
}

func newPathModel() *pathModel {
	return &pathModel{orders: map[string]*orderState{}, payouts: map[string]*payoutkit.Payout{}, policy: payoutkit.DefaultPayoutPolicy()}
}

func (m *pathModel) clone() *pathModel {
	c := &pathModel{orders: make(map[string]*orderState, len(m.orders)), payouts: make(map[string]*payoutkit.Payout, len(m.payouts)), policy: m.policy}
	for id, o := range m.orders {
		c.orders[id] = new(*o)
	}
	for id, p := range m.payouts {
		c.payouts[id] = new(*p)
	}
	return c
}

// audit is the model's Audit (its money sums and payout counts).
func (m *pathModel) audit() (a payoutkit.Audit) {
	for _, o := range m.orders {
		if o.paid {
			a.PaidOrders += o.amount
		}
	}
	for _, p := range m.payouts {
		switch p.Status {
		case payoutkit.PayoutSubmitted:
			a.SubmittedPayouts += p.Amount
			a.PayoutCounts[0]++
		case payoutkit.PayoutCompleted:
			a.CompletedPayouts += p.Amount
			a.PayoutCounts[1]++
		case payoutkit.PayoutFailed:
			a.PayoutCounts[2]++
		}
	}
	a.Available = a.PaidOrders - a.SubmittedPayouts - a.CompletedPayouts
	a.InProgress = a.SubmittedPayouts
	return a
}

// spent is what the 24-hour limit counts: every payout that has not failed.
func (m *pathModel) spent() (sum payoutkit.Amount) {
	for _, p := range m.payouts {
		if p.Status != payoutkit.PayoutFailed {
			sum += p.Amount
		}
	}
	return sum
}

// check compares the store's audit with the model.
func (m *pathModel) check(a payoutkit.Audit) error {
	if err := a.Check(); err != nil {
		return err
	}
	w := m.audit()
	if a.Available != w.Available || a.InProgress != w.InProgress || a.PaidOrders != w.PaidOrders ||
		a.SubmittedPayouts != w.SubmittedPayouts || a.CompletedPayouts != w.CompletedPayouts || a.PayoutCounts != w.PayoutCounts {
		return fmt.Errorf("the store's money differs from the model of its answers: available %v (model %v), in_progress %v (%v), paid orders %v (%v), submitted %v (%v), completed %v (%v), payouts submitted/completed/failed %v (%v)",
			a.Available, w.Available, a.InProgress, w.InProgress, a.PaidOrders, w.PaidOrders,
			a.SubmittedPayouts, w.SubmittedPayouts, a.CompletedPayouts, w.CompletedPayouts, a.PayoutCounts, w.PayoutCounts)
	}
	return nil
}

// pathRun is one input: its engine, store and workspaces.
type pathRun struct {
	t     *testing.T
	ctx   context.Context
	store payoutkit.Store
	begin func(ctx context.Context) (CallerTx, error)
	eng   *payoutkit.Engine
	ws    [2]*pathWS
}

func runPaths(t *testing.T, open OpenPaths, data []byte) {
	ctx := context.Background()
	ps := open(t)
	defer ps.Store.Close()
	eng, err := payoutkit.New(ps.Store, &payoutkit.Config{PasswordCost: 4, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := &pathRun{t: t, ctx: ctx, store: ps.Store, begin: ps.Begin, eng: eng}
	for i, name := range []string{"A", "B"} {
		nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "fuzz " + name})
		if err != nil {
			t.Fatal(err)
		}
		r.ws[i] = &pathWS{name: name, id: nw.Workspace.ID, m: newPathModel()}
	}
	var all []*pathOp
	defer func() {
		t.Log(tally(all))
		if t.Failed() { // what each operation was answered, in the input's order
			for _, o := range all {
				t.Logf("%v: %s", o, o.answer())
			}
		}
	}()
	ops := 0
	for round := 0; len(data) > 0 && ops < MaxPathOps; round++ {
		h := data[0]
		data = data[1:]
		n := min(int(h>>2&7)+1, len(data), MaxPathOps-ops)
		if n == 0 {
			break
		}
		body := data[:n]
		data = data[n:]
		ops += n
		ws := int(h >> 7)
		switch kind := h & 3; {
		case kind <= 1:
			direct := make([]*pathOp, n)
			for i, b := range body {
				w := ws
				if kind == 1 {
					w = (ws + i) % 2
				}
				direct[i] = r.decide(r.ws[w], b)
			}
			all = append(all, direct...)
			r.concurrent(round, direct)
		default:
			m := min(int(h>>5&3), len(data), MaxPathOps-ops)
			beside := data[:m]
			data = data[m:]
			ops += m
			inTx := make([]*pathOp, n)
			for i, b := range body {
				inTx[i] = r.decide(r.ws[ws], b)
			}
			others := make([]*pathOp, m)
			for i, b := range beside {
				others[i] = r.decide(r.ws[1-ws], b)
			}
			all = append(append(all, inTx...), others...)
			if r.begin == nil {
				r.concurrent(round, append(inTx, others...))
				continue
			}
			r.callerTx(round, kind == 2, inTx, others)
		}
	}
}

// answer is what the operation was answered, for the log.
func (o *pathOp) answer() string {
	switch {
	case o.createErr != nil:
		return "order refused: " + o.createErr.Error()
	case o.err != nil:
		return "error: " + o.err.Error()
	case o.kind == kindPolicy:
		return fmt.Sprintf("policy %+v", o.policy)
	case o.kind == kindOrder || o.kind == kindFund || o.kind == kindPay:
		return fmt.Sprintf("order %s %s %v", o.order.OrderID, o.order.Status, o.order.Amount)
	case o.replayed:
		return fmt.Sprintf("replayed payout %s %s %v", o.payout.PayoutID, o.payout.Status, o.payout.Amount)
	}
	return fmt.Sprintf("payout %s %s %v approval %s", o.payout.PayoutID, o.payout.Status, o.payout.Amount, o.payout.Approval)
}

// tally counts the answers of ops by operation and outcome, for the log.
func tally(ops []*pathOp) string {
	counts := map[string]int{}
	for _, o := range ops {
		outcome := errorKind(o.err)
		switch {
		case outcome == "" && o.replayed:
			outcome = "replayed"
		case outcome == "":
			outcome = "ok"
		}
		counts[o.kind.String()+" "+outcome]++
	}
	keys := slices.Sorted(maps.Keys(counts))
	out := "answers:"
	for _, k := range keys {
		out += fmt.Sprintf(" %s %d,", k, counts[k])
	}
	return strings.TrimSuffix(out, ",")
}

// decide turns an operation's byte into the operation, handing out the
// ids it creates.
func (r *pathRun) decide(w *pathWS, b byte) *pathOp {
	arg := int(b >> 4)
	o := &pathOp{ws: w, b: b, amount: pathAmounts[arg%len(pathAmounts)], a: pathLimits[arg%len(pathLimits)]}
	payout := func(n int) string { return fmt.Sprint("p", 1+arg%(n+1)) }
	limit := func(a payoutkit.Amount, noneAt int) *payoutkit.Limit {
		l := payoutkit.LimitOf(a)
		if arg%len(pathLimits) == noneAt {
			l = payoutkit.Limit{}
		}
		return &l
	}
	switch b % 16 {
	case pathOrder, pathFund:
		o.kind = kindOrder
		if b%16 == pathFund {
			o.kind = kindFund
		}
		w.orders++
		o.id = fmt.Sprint("o", w.orders)
		if w.orders%2 == 1 {
			o.payer = "c1"
		}
	case pathPay:
		o.kind, o.id = kindPay, fmt.Sprint("o", 1+arg%(w.orders+1))
	case pathBatch:
		o.kind, o.allOrNothing = kindBatch, arg%2 == 1
		for i := range 1 + arg%3 {
			a := pathLimits[(arg+i)%len(pathLimits)]
			if a == 0 { // a batch with an invalid item is refused whole: keep to valid ones
				a = 1
			}
			w.payouts = append(w.payouts, a)
			n := len(w.payouts)
			o.items = append(o.items, &pathOp{ws: w, b: b, kind: kindCreate, id: fmt.Sprint("p", n), amount: a.String(), a: a, payer: fmt.Sprint("c", n%2)})
		}
		o.id = fmt.Sprint("b", len(w.payouts))
	case pathCreate, pathReplay, 14:
		o.kind = kindCreate
		n := len(w.payouts)
		if b%16 != pathReplay || n == 0 {
			w.payouts = append(w.payouts, o.a)
			n++
		} else if i := arg % n; true {
			n = i + 1
			if arg >= 8 { // the amount it was first asked with: a true replay
				o.a = w.payouts[i]
				o.amount = o.a.String()
			}
		}
		o.id = fmt.Sprint("p", n)
		o.payer = fmt.Sprint("c", n%2)
	case pathComplete, 15:
		o.kind, o.id = kindComplete, payout(len(w.payouts))
	case pathFail:
		o.kind, o.id = kindFail, payout(len(w.payouts))
	case pathApprove:
		o.kind, o.id = kindApprove, payout(len(w.payouts))
	case pathReject:
		o.kind, o.id = kindReject, payout(len(w.payouts))
	case pathDaily:
		o.kind, o.patch.DailyLimit = kindPolicy, new(payoutkit.LimitOf(pathLimits[arg%len(pathLimits)]*4))
	case pathNoLimits:
		var none payoutkit.Limit
		o.kind, o.patch = kindPolicy, payoutkit.PolicyPatch{DailyLimit: &none, MaxPayout: &none, ApprovalOver: &none}
	case pathMax:
		o.kind, o.patch.MaxPayout = kindPolicy, limit(pathLimits[arg%len(pathLimits)], 4)
	case pathApprovalOver:
		o.kind, o.patch.ApprovalOver = kindPolicy, limit(pathLimits[arg%len(pathLimits)], 4)
	}
	return o
}

// do runs the operation on eng and records its answer.
func (o *pathOp) do(ctx context.Context, eng *payoutkit.Engine) {
	ws := o.ws.id
	switch o.kind {
	case kindOrder, kindFund:
		o.order, o.replayed, o.err = eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: o.id, Amount: o.amount, PayerID: o.payer})
		if o.kind == kindFund {
			if o.createErr = o.err; o.err == nil {
				o.order, o.err = eng.MarkOrderPaid(ctx, ws, o.id)
			}
		}
	case kindPay:
		o.order, o.err = eng.MarkOrderPaid(ctx, ws, o.id)
	case kindCreate:
		o.payout, o.replayed, o.err = eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
			PayoutID: o.id, Amount: o.amount, Asset: "USDT", Network: "TRON", Address: TronAddress, PayerID: o.payer,
		})
	case kindComplete:
		o.payout, o.err = eng.CompletePayout(ctx, ws, o.id, payoutkit.Completion{TxID: "tx"})
	case kindFail:
		o.payout, o.err = eng.FailPayout(ctx, ws, o.id, "")
	case kindPolicy:
		o.policy, o.err = eng.SetPayoutPolicy(ctx, ws, o.patch, payoutkit.ActorCLI)
	case kindApprove:
		o.payout, o.err = eng.ApprovePayout(ctx, ws, o.id, payoutkit.ActorCLI)
	case kindReject:
		o.payout, o.err = eng.RejectPayout(ctx, ws, o.id, "no", payoutkit.ActorCLI)
	case kindBatch:
		req := payoutkit.CreatePayoutBatchRequest{BatchID: o.id, AllOrNothing: o.allOrNothing}
		for _, it := range o.items {
			req.Payouts = append(req.Payouts, payoutkit.CreatePayoutRequest{
				PayoutID: it.id, Amount: it.amount, Asset: "USDT", Network: "TRON", Address: TronAddress, PayerID: it.payer,
			})
		}
		var b payoutkit.PayoutBatch
		if b, o.replayed, o.err = eng.CreatePayoutBatch(ctx, ws, req); o.err != nil {
			return
		}
		for i, r := range b.Results {
			it := o.items[i]
			if it.err = r.Err(); r.Payout != nil {
				it.payout, it.replayed = *r.Payout, !r.Created
			}
		}
	}
}

// expand replaces each batch of ops by its items, as creates: apply holds
// what the model applies, check what verify reads back. A refused
// all-or-nothing batch applies nothing, and none of its payouts may exist.
func expand(ops []*pathOp) (apply, check []*pathOp) {
	for _, o := range ops {
		if o.kind != kindBatch {
			apply, check = append(apply, o), append(check, o)
			continue
		}
		switch kind := errorKind(o.err); {
		case o.err == nil:
			apply, check = append(apply, o.items...), append(check, o.items...)
		case o.allOrNothing && (kind == "insufficient" || kind == "limit"):
			for _, it := range o.items {
				check = append(check, &pathOp{ws: it.ws, b: it.b, kind: kindCreate, id: it.id, err: o.err})
			}
		default: // the model refuses any other answer of a batch as a create's
			apply = append(apply, &pathOp{ws: o.ws, b: o.b, kind: kindCreate, id: o.id, err: o.err})
		}
	}
	return apply, check
}

// watch reads the workspaces' balances until stop is called, and returns
// the first negative one it saw.
func (r *pathRun) watch() (stop func() error) {
	var done atomic.Bool
	var seen error
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			for _, w := range r.ws {
				b, err := r.store.Balance(r.ctx, w.id)
				if err == nil && (b.Available < 0 || b.InProgress < 0) && seen == nil {
					seen = fmt.Errorf("workspace %s's balance read while the round ran is negative: %+v", w.name, b)
				}
			}
			time.Sleep(time.Millisecond)
		}
	})
	return func() error {
		done.Store(true)
		wg.Wait()
		return seen
	}
}

// concurrent runs ops at once, released together, then checks each
// workspace against its model. A round of one operation is checked as
// FuzzMoneyInvariants checks a step: exactly, and an error must have
// changed nothing.
func (r *pathRun) concurrent(round int, ops []*pathOp) {
	t := r.t
	if len(ops) == 0 {
		return
	}
	var before payoutkit.Audit
	if len(ops) == 1 {
		before = r.audit(ops[0].ws)
	}
	stop := r.watch()
	Race(len(ops), func(i int) { ops[i].do(r.ctx, r.eng) })
	if err := stop(); err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	if len(ops) == 1 && ops[0].err != nil {
		if after := r.audit(ops[0].ws); after != before {
			t.Fatalf("round %d: %v failed with %v but changed money: %+v -> %+v", round, ops[0], ops[0].err, before, after)
		}
	}
	for _, w := range r.ws {
		var mine []*pathOp
		for _, o := range ops {
			if o.ws == w {
				mine = append(mine, o)
			}
		}
		r.settle(round, "concurrent callers", w, w.m, mine, r.store)
	}
}

// callerTx runs inTx one at a time in a transaction of the caller's, which
// it then commits or rolls back, while beside runs at once on the other
// workspace, through the store's own writes.
func (r *pathRun) callerTx(round int, commit bool, inTx, beside []*pathOp) {
	t := r.t
	w := inTx[0].ws
	before := r.audit(w)
	stop := r.watch()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, o := range beside {
		wg.Go(func() {
			<-start
			o.do(r.ctx, r.eng)
		})
	}
	close(start)
	last, m, err := r.inTx(commit, inTx)
	wg.Wait()
	if serr := stop(); err == nil {
		err = serr
	}
	what := "a caller's transaction rolled back"
	if commit {
		what = "a caller's transaction committed"
	}
	if err != nil {
		t.Fatalf("round %d (%s): %v", round, what, err)
	}
	after := r.audit(w)
	switch {
	case !commit && after != before:
		t.Fatalf("round %d: %s changed money: %+v -> %+v", round, what, before, after)
	case commit && after != last:
		t.Fatalf("round %d: %s: its money is not what it read inside: %+v, then %+v", round, what, last, after)
	case commit:
		w.m = m
	}
	if err := w.m.check(after); err != nil {
		t.Fatalf("round %d (%s): workspace %s: %v", round, what, w.name, err)
	}
	_, check := expand(inTx)
	if err := r.verify(w.m, w, check, r.store); err != nil {
		t.Fatalf("round %d (%s): workspace %s: %v", round, what, w.name, err)
	}
	if len(beside) > 0 {
		other := beside[0].ws
		r.settle(round, "concurrent callers beside a caller's transaction", other, other.m, beside, r.store)
	}
}

// inTx runs ops one at a time in a new transaction of the caller's,
// checking each against a copy of its workspace's model through the
// transaction, and ends it. It returns the last audit read inside and the
// model as the transaction left it.
func (r *pathRun) inTx(commit bool, ops []*pathOp) (last payoutkit.Audit, m *pathModel, err error) {
	ctx := r.ctx
	w := ops[0].ws
	tx, err := r.begin(ctx)
	if err != nil {
		return last, nil, err
	}
	defer func() {
		end := tx.Rollback
		if commit && err == nil {
			end = tx.Commit
		}
		if eerr := end(); err == nil && eerr != nil {
			err = fmt.Errorf("ending the transaction: %w", eerr)
		}
	}()
	eng := r.eng.WithStore(tx.Store)
	m = w.m.clone()
	if last, err = tx.Store.Audit(ctx, w.id); err != nil {
		return last, nil, err
	}
	for i, o := range ops {
		before := last
		o.do(ctx, eng)
		if last, err = tx.Store.Audit(ctx, w.id); err != nil {
			return last, nil, err
		}
		if o.err != nil && last != before {
			return last, nil, fmt.Errorf("in the transaction, step %d: %v failed with %v but changed money: %+v -> %+v", i, o, o.err, before, last)
		}
		applied, _ := expand([]*pathOp{o})
		if err := m.apply(applied, nil); err != nil {
			return last, nil, fmt.Errorf("in the transaction, step %d: %w", i, err)
		}
		if err := m.check(last); err != nil {
			return last, nil, fmt.Errorf("in the transaction, step %d (%v): workspace %s: %w", i, o, w.name, err)
		}
	}
	return last, m, nil
}

// settle applies a round's operations on w to m, as the store answered
// them, and checks the store (through s) against it.
func (r *pathRun) settle(round int, what string, w *pathWS, m *pathModel, ops []*pathOp, s payoutkit.Store) {
	t := r.t
	t.Helper()
	readPolicy := func() (payoutkit.PayoutPolicy, error) { return s.PayoutPolicy(r.ctx, w.id) }
	ops, check := expand(ops)
	if err := m.apply(ops, readPolicy); err != nil {
		t.Fatalf("round %d (%s), workspace %s: %v", round, what, w.name, err)
	}
	a, err := s.Audit(r.ctx, w.id)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.check(a); err != nil {
		t.Fatalf("round %d (%s), workspace %s: %v", round, what, w.name, err)
	}
	b, err := s.Balance(r.ctx, w.id)
	if err != nil {
		t.Fatal(err)
	}
	if b.Available != a.Available || b.InProgress != a.InProgress {
		t.Fatalf("round %d (%s), workspace %s: balance %+v differs from its audit %+v", round, what, w.name, b, a)
	}
	if err := r.verify(m, w, check, s); err != nil {
		t.Fatalf("round %d (%s), workspace %s: %v", round, what, w.name, err)
	}
}

// verify reads back, through s, the orders and payouts that ops named and
// compares them with m: one the model has is stored as it says (status,
// approval, amount), one it has not is not stored; and the policy, when
// ops changed it.
func (r *pathRun) verify(m *pathModel, w *pathWS, ops []*pathOp, s payoutkit.Store) error {
	ctx := r.ctx
	seen := map[string]bool{}
	for _, o := range ops {
		if o.kind == kindPolicy {
			if pol, err := s.PayoutPolicy(ctx, w.id); err != nil || pol != m.policy {
				return fmt.Errorf("the policy is %+v (%v), the model's %+v", pol, err, m.policy)
			}
			continue
		}
		if seen[o.id] {
			continue
		}
		seen[o.id] = true
		var err error
		switch o.kind {
		case kindOrder, kindFund, kindPay:
			var got payoutkit.Order
			got, err = s.Order(ctx, w.id, o.id)
			want := m.orders[o.id]
			switch {
			case want == nil && errors.Is(err, payoutkit.ErrNotFound):
				err = nil
			case want == nil && err == nil:
				err = fmt.Errorf("order %s is stored (%+v), but no answer created it", o.id, got)
			case err == nil && (got.Amount != want.amount || (got.Status == payoutkit.OrderPaid) != want.paid || want.paid && !got.PaidAt.Equal(want.paidAt)):
				err = fmt.Errorf("order %s is stored as %+v, the model's %+v", o.id, got, *want)
			}
		default:
			var got payoutkit.Payout
			got, err = s.Payout(ctx, w.id, o.id)
			want := m.payouts[o.id]
			switch {
			case want == nil && errors.Is(err, payoutkit.ErrNotFound):
				err = nil
			case want == nil && err == nil:
				err = fmt.Errorf("payout %s is stored (%+v), but no answer created it", o.id, got)
			case err == nil && (got.Amount != want.Amount || got.Status != want.Status || got.Approval != want.Approval ||
				!got.CreatedAt.Equal(want.CreatedAt) || got.PayerID != want.PayerID):
				err = fmt.Errorf("payout %s is stored as %+v, the model's %+v", o.id, got, *want)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *pathRun) audit(w *pathWS) payoutkit.Audit {
	a, err := r.store.Audit(r.ctx, w.id)
	if err != nil {
		r.t.Fatal(err)
	}
	return a
}

// errorKind names an operation's error as the model tells them apart.
func errorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, payoutkit.ErrInsufficientBalance):
		return "insufficient"
	case errors.Is(err, payoutkit.ErrPayoutLimit):
		return "limit"
	case errors.Is(err, payoutkit.ErrConflict):
		return "conflict"
	case errors.Is(err, payoutkit.ErrNotFound):
		return "not found"
	case errors.Is(err, payoutkit.ErrInvalidInput):
		return "invalid"
	}
	return "other"
}

// apply applies to m the operations of one round on its workspace, run at
// once (or one alone), as the store answered them, and checks that the
// answers are possible: in some order of the operations, each answer is
// what the money rules give. readPolicy reads the policy the round left
// when its policy changes could leave more than one (nil: they cannot).
func (m *pathModel) apply(ops []*pathOp, readPolicy func() (payoutkit.PayoutPolicy, error)) error {
	for _, o := range ops {
		for _, err := range []error{o.createErr, o.err} {
			if err != nil && payoutkit.CodeOf(err) == 0 {
				return fmt.Errorf("%v: an error without a contract code: %v", o, err)
			}
		}
	}
	by := func(kinds ...pathKind) []*pathOp {
		var out []*pathOp
		for _, o := range ops {
			if slices.Contains(kinds, o.kind) {
				out = append(out, o)
			}
		}
		return out
	}

	// The policy: every state the round's changes could have passed
	// through in some order (nil when there are too many to tell).
	var patches []payoutkit.PolicyPatch
	for _, o := range by(kindPolicy) {
		if o.err == nil {
			patches = append(patches, o.patch)
		}
	}
	states, finals := policyStates(m.policy, patches)
	for _, o := range by(kindPolicy) {
		if o.err == nil && states != nil && !slices.Contains(states, o.policy) {
			return fmt.Errorf("%v returned policy %+v, which no order of the round's changes gives", o, o.policy)
		}
		if o.err != nil && !errors.Is(o.err, payoutkit.ErrInvalidInput) {
			return fmt.Errorf("%v: %v", o, o.err)
		}
	}

	// Orders.
	newOrders := map[string]*orderState{}
	for _, o := range by(kindOrder, kindFund) {
		err := o.err
		if o.kind == kindFund {
			err = o.createErr
		}
		switch {
		case err != nil && o.a != 0:
			return fmt.Errorf("%v: a new order refused: %v", o, err)
		case err != nil && !errors.Is(err, payoutkit.ErrInvalidInput):
			return fmt.Errorf("%v: an order of 0 refused with %v", o, err)
		case err == nil && (o.replayed || o.order.Amount != o.a && o.kind == kindOrder):
			return fmt.Errorf("%v: a new order answered %+v (replayed %v)", o, o.order, o.replayed)
		case err == nil:
			newOrders[o.id] = &orderState{amount: o.a, payer: o.payer}
		}
	}
	paid := map[string]time.Time{}
	for _, o := range by(kindPay, kindFund) {
		if o.kind == kindFund && o.createErr != nil {
			continue
		}
		known := m.orders[o.id]
		switch kind := errorKind(o.err); {
		case kind == "not found" && known != nil:
			return fmt.Errorf("%v: not found, but the order exists", o)
		case kind == "not found" && o.kind == kindPay:
		case o.err != nil:
			return fmt.Errorf("%v: %v", o, o.err)
		case o.order.Status != payoutkit.OrderPaid || o.order.OrderID != o.id:
			return fmt.Errorf("%v: answered %+v, not paid", o, o.order)
		case known == nil && newOrders[o.id] == nil:
			return fmt.Errorf("%v: paid an order that was never created", o)
		case known != nil && known.paid && !o.order.PaidAt.Equal(known.paidAt),
			!paid[o.id].IsZero() && !o.order.PaidAt.Equal(paid[o.id]):
			return fmt.Errorf("%v: paid at %v, but it was paid at %v", o, o.order.PaidAt, paid[o.id])
		default:
			paid[o.id] = o.order.PaidAt
		}
	}

	// Settlements first: the creates' bounds need what they gave back.
	settles := by(kindComplete, kindFail, kindApprove, kindReject)
	created := map[string]*payoutkit.Payout{}
	var accepted payoutkit.Amount // the round's accepted creates
	for _, o := range by(kindCreate) {
		if o.err == nil && !o.replayed {
			if created[o.id] != nil {
				return fmt.Errorf("%v: payout %s created twice in one round", o, o.id)
			}
			if m.payouts[o.id] != nil {
				return fmt.Errorf("%v: payout %s created again: it exists (%+v)", o, o.id, *m.payouts[o.id])
			}
			p := o.payout
			if p.PayoutID != o.id || p.Amount != o.a || p.Status != payoutkit.PayoutSubmitted ||
				p.Approval != payoutkit.ApprovalNone && p.Approval != payoutkit.ApprovalPending {
				return fmt.Errorf("%v: created %+v", o, p)
			}
			created[o.id] = &p
			accepted += o.a
		}
	}
	succeeded := func(id string, kinds ...pathKind) (n int) {
		for _, o := range settles {
			if o.id == id && o.err == nil && slices.Contains(kinds, o.kind) {
				n++
			}
		}
		return n
	}
	var failedBefore, failedAll payoutkit.Amount // refunds of payouts from before the round, and of all
	for _, o := range settles {
		rec, old := m.payouts[o.id], m.payouts[o.id] != nil
		if rec == nil {
			rec = created[o.id]
		}
		kind := errorKind(o.err)
		switch {
		case kind == "not found" && old:
			return fmt.Errorf("%v: not found, but the payout exists", o)
		case kind == "not found":
			continue
		case kind == "conflict":
			if !old || rec.Status != payoutkit.PayoutSubmitted {
				continue
			}
			others := succeeded(o.id, kindComplete, kindFail, kindReject)
			held := rec.Approval == payoutkit.ApprovalPending
			switch o.kind {
			case kindComplete:
				if !held && others == 0 {
					return fmt.Errorf("%v: refused (%v), but the payout is submitted and nothing else settled it", o, o.err)
				}
			case kindFail:
				if others == 0 {
					return fmt.Errorf("%v: refused (%v), but the payout is submitted and nothing else settled it", o, o.err)
				}
			case kindApprove, kindReject:
				if held && others+succeeded(o.id, kindApprove) == 0 {
					return fmt.Errorf("%v: refused (%v), but the payout is held and nothing else decided it", o, o.err)
				}
			}
			continue
		case o.err != nil:
			return fmt.Errorf("%v: %v", o, o.err)
		case rec == nil:
			return fmt.Errorf("%v: succeeded on a payout that was never created (%+v)", o, o.payout)
		case rec.Status != payoutkit.PayoutSubmitted:
			return fmt.Errorf("%v: succeeded on a payout already %s", o, rec.Status)
		}
		if n := succeeded(o.id, kindComplete, kindFail, kindReject); n > 1 {
			return fmt.Errorf("%v: payout %s settled %d times in one round", o, o.id, n)
		}
		held := rec.Approval == payoutkit.ApprovalPending
		approved := succeeded(o.id, kindApprove)
		p := o.payout
		switch o.kind {
		case kindComplete:
			if held && approved == 0 {
				return fmt.Errorf("%v: completed a payout held for approval", o)
			}
			if p.Status != payoutkit.PayoutCompleted {
				return fmt.Errorf("%v: answered %+v", o, p)
			}
		case kindFail, kindReject:
			if o.kind == kindReject && (!held || approved > 0) {
				return fmt.Errorf("%v: rejected a payout that was not held (approval %s, approved in the round %d)", o, rec.Approval, approved)
			}
			if p.Status != payoutkit.PayoutFailed || o.kind == kindReject && p.Approval != payoutkit.ApprovalRejected {
				return fmt.Errorf("%v: answered %+v", o, p)
			}
			failedAll += rec.Amount
			if old {
				failedBefore += rec.Amount
			}
		case kindApprove:
			if !held || approved > 1 || succeeded(o.id, kindReject) > 0 {
				return fmt.Errorf("%v: approved a payout that was not held, or twice (approval %s)", o, rec.Approval)
			}
			if p.Approval != payoutkit.ApprovalApproved {
				return fmt.Errorf("%v: answered %+v", o, p)
			}
		}
	}

	// Creates.
	spent, available := m.spent(), m.audit().Available
	for _, o := range by(kindCreate) {
		old := m.payouts[o.id]
		stored := old
		if stored == nil {
			stored = created[o.id]
		}
		switch kind := errorKind(o.err); {
		case kind == "" && !o.replayed: // created
			p := created[o.id]
			if !anyState(states, func(pol payoutkit.PayoutPolicy) bool {
				return allows(pol, spent-failedBefore, o.a) && (p.Approval == payoutkit.ApprovalPending) == holds(pol, o.a)
			}) {
				return fmt.Errorf("%v: accepted with approval %s, which no policy of the round (%+v) allows with %v spent before, %v given back", o, p.Approval, states, spent, failedBefore)
			}
		case kind == "": // replayed
			if stored == nil {
				return fmt.Errorf("%v: a replay of a payout that does not exist: %+v", o, o.payout)
			}
			p := o.payout
			if p.PayoutID != stored.PayoutID || p.Amount != stored.Amount || p.Amount != o.a || p.PayerID != stored.PayerID ||
				p.Address != stored.Address || p.Asset != stored.Asset || p.Network != stored.Network || !p.CreatedAt.Equal(stored.CreatedAt) {
				return fmt.Errorf("%v: the replay returned %+v, not the stored payout %+v", o, p, *stored)
			}
		case kind == "conflict":
			if stored == nil || stored.Amount == o.a {
				return fmt.Errorf("%v: a conflict (%v), but the payout_id is free or asked the same (%v)", o, o.err, stored)
			}
		case kind == "limit", kind == "insufficient":
			if old != nil {
				return fmt.Errorf("%v: a replay refused (%v): the payout exists (%+v)", o, o.err, *old)
			}
			if kind == "limit" && !anyState(states, func(pol payoutkit.PayoutPolicy) bool { return !allows(pol, spent+accepted, o.a) }) {
				return fmt.Errorf("%v: refused (%v), but every policy of the round (%+v) allows it with at most %v spent", o, o.err, states, spent+accepted)
			}
			if kind == "insufficient" {
				if states != nil && !anyState(states, func(pol payoutkit.PayoutPolicy) bool { return allows(pol, spent-failedBefore, o.a) }) {
					return fmt.Errorf("%v: refused for the balance, but the policy refuses it first (%+v, %v spent)", o, states, spent-failedBefore)
				}
				if o.a <= available-accepted {
					return fmt.Errorf("%v: refused (%v), but at least %v was available", o, o.err, available-accepted)
				}
			}
		case kind == "invalid" && o.a == 0:
		default:
			return fmt.Errorf("%v: %v", o, o.err)
		}
	}
	// The last create to be accepted counted every other: the round's
	// creates together keep to the 24-hour limit.
	if accepted > 0 && states != nil {
		limit, all := payoutkit.Amount(0), true
		for _, pol := range states {
			all = all && pol.DailyLimit.Set
			limit = max(limit, pol.DailyLimit.Amount)
		}
		if all && spent-failedAll+accepted > limit {
			return fmt.Errorf("the round's accepted creates (%v) with %v spent before and %v given back pass the daily limit %v", accepted, spent, failedAll, limit)
		}
	}

	// The round as the model keeps it.
	for id, o := range newOrders {
		m.orders[id] = o
	}
	for id, at := range paid {
		if o := m.orders[id]; !o.paid {
			o.paid, o.paidAt = true, at
		}
	}
	for id, p := range created {
		m.payouts[id] = p
	}
	for _, o := range settles {
		if o.err != nil {
			continue
		}
		p := m.payouts[o.id]
		switch o.kind {
		case kindApprove:
			p.Approval = payoutkit.ApprovalApproved
		case kindComplete:
			p.Status = payoutkit.PayoutCompleted
		case kindFail:
			p.Status = payoutkit.PayoutFailed
		case kindReject:
			p.Status, p.Approval = payoutkit.PayoutFailed, payoutkit.ApprovalRejected
		}
	}
	switch {
	case len(finals) == 1:
		m.policy = finals[0]
	case readPolicy != nil:
		pol, err := readPolicy()
		if err != nil {
			return err
		}
		if finals != nil && !slices.Contains(finals, pol) {
			return fmt.Errorf("the policy after the round is %+v, which no order of its changes gives", pol)
		}
		m.policy = pol
	default:
		return fmt.Errorf("the round's policy changes leave %d policies possible", len(finals))
	}
	return nil
}

// policyStates returns every policy that from can pass through while
// patches apply one at a time in some order, and those they can end with;
// both nil when there are too many orders to tell.
func policyStates(from payoutkit.PayoutPolicy, patches []payoutkit.PolicyPatch) (states, finals []payoutkit.PayoutPolicy) {
	if len(patches) > 4 {
		return nil, nil
	}
	var walk func(p payoutkit.PayoutPolicy, left []payoutkit.PolicyPatch)
	walk = func(p payoutkit.PayoutPolicy, left []payoutkit.PolicyPatch) {
		if !slices.Contains(states, p) {
			states = append(states, p)
		}
		if len(left) == 0 && !slices.Contains(finals, p) {
			finals = append(finals, p)
		}
		for i, patch := range left {
			walk(patch.Apply(p), append(slices.Clone(left[:i]), left[i+1:]...))
		}
	}
	walk(from, patches)
	return states, finals
}

// anyState reports whether ok holds for a policy of states; with states
// unknown (nil), it gives the benefit of the doubt.
func anyState(states []payoutkit.PayoutPolicy, ok func(payoutkit.PayoutPolicy) bool) bool {
	return states == nil || slices.ContainsFunc(states, ok)
}

// allows reports whether policy lets a payout of a through with spent
// counted against its daily limit.
func allows(policy payoutkit.PayoutPolicy, spent, a payoutkit.Amount) bool {
	return !(policy.MaxPayout.Set && a > policy.MaxPayout.Amount) && !(policy.DailyLimit.Set && spent+a > policy.DailyLimit.Amount)
}

// holds reports whether policy holds a payout of a for approval.
func holds(policy payoutkit.PayoutPolicy, a payoutkit.Amount) bool {
	return policy.ApprovalOver.Set && a > policy.ApprovalOver.Amount
}

// Seed rounds, for pathSeeds.

// pop is an operation's byte: code, and arg its argument (0 to 15).
func pop(code, arg byte) byte { return code | arg<<4 }

// together is a round of concurrent callers on workspace ws (0 A, 1 B), or
// on both, alternately from ws, when spread.
func together(ws byte, spread bool, ops ...byte) []byte {
	h := byte(len(ops)-1)<<2 | ws<<7
	if spread {
		h |= 1
	}
	return append([]byte{h}, ops...)
}

// alone is a round of one operation on workspace A, for each of ops.
func alone(ops ...byte) (out []byte) {
	for _, o := range ops {
		out = append(out, 0, o)
	}
	return out
}

// inTx is a caller's transaction on workspace ws running ops, committed or
// rolled back, with beside (at most three) concurrent callers on the
// other workspace.
func inTx(ws byte, commit bool, ops []byte, beside ...byte) []byte {
	h := byte(3) | byte(len(ops)-1)<<2 | byte(len(beside))<<5 | ws<<7
	if commit {
		h = h&^3 | 2
	}
	return append(append([]byte{h}, ops...), beside...)
}

// pathSeeds is the seed corpus of FuzzMoneyPaths: overdrafts, replays,
// policy refusals and settlements racing in one batch, caller's
// transactions committed and rolled back beside concurrent callers.
func pathSeeds() [][]byte {
	var (
		fund10, fund99, fund1 = pop(pathFund, 3), pop(pathFund, 5), pop(pathFund, 1)
		cents, one, two50     = pop(pathCreate, 0), pop(pathCreate, 1), pop(pathCreate, 2)
		ten, big              = pop(pathCreate, 3), pop(pathCreate, 5)
	)
	// replay is a create of payout n (of the n handed out) with its first
	// amount; other with amounts[arg%6].
	replay := func(id, n byte) byte {
		arg := byte(8)
		for arg%n != id-1 {
			arg++
		}
		return pop(pathReplay, arg)
	}
	seeds := [][]byte{
		// Eight creates of 2.50 race for 10.00; then settlements race.
		slices.Concat(alone(fund10), together(0, false, two50, two50, two50, two50, two50, two50, two50, two50),
			together(0, false, pop(pathComplete, 0), pop(pathFail, 1), pop(pathFail, 1), pop(pathComplete, 1), two50, two50, fund1, pop(pathPay, 0))),
		// A payout and its replays race, the same and other parameters, and an overdraft with its own replay.
		slices.Concat(alone(fund10), together(0, false, one, replay(1, 1), pop(pathReplay, 2), replay(1, 1), big, replay(2, 2), pop(pathReplay, 3), two50)),
		// max_payout 10.00: refusals by the policy and by the balance among accepted creates.
		slices.Concat(alone(fund99, pop(pathMax, 3)), together(0, false, cents, one, two50, ten, big, big, ten, two50),
			together(0, false, ten, ten, ten, ten, ten, ten, ten, ten)),
		// A daily limit of 10.00: one create of 2.50 alone (its policy is read, and then judged
		// from memory), three of eight more pass; then one fails and creates race again.
		slices.Concat(alone(fund99, pop(pathDaily, 2), two50), together(0, false, two50, two50, two50, two50, two50, two50, two50, two50),
			together(0, false, pop(pathFail, 1), two50, two50, two50, two50, two50, two50, two50)),
		// approval_over 1.00: held payouts approved, rejected, completed and failed at once.
		slices.Concat(alone(fund99, pop(pathApprovalOver, 1)), together(0, false, two50, two50, two50, one),
			together(0, false, pop(pathApprove, 0), pop(pathReject, 0), pop(pathComplete, 0), pop(pathApprove, 1), pop(pathApprove, 1), pop(pathFail, 2), pop(pathReject, 2), pop(pathComplete, 3)),
			together(0, false, pop(pathComplete, 1), pop(pathComplete, 1), pop(pathFail, 1), pop(pathReject, 1))),
		// A caller's transaction committed: creates, a replay, an overdraft, a refund, a credit; creates beside it on B.
		slices.Concat(alone(fund10), inTx(0, true, []byte{two50, two50, replay(1, 2), big, pop(pathFail, 0), fund1, pop(pathPay, 0), two50}, fund10, two50, two50),
			together(0, true, two50, two50, two50, two50, two50, two50)),
		// One rolled back, policy and all: its payout_ids are free again, its limits never held.
		slices.Concat(alone(fund10), inTx(0, false, []byte{two50, ten, pop(pathFail, 0), pop(pathDaily, 0), pop(pathMax, 1), cents, fund99}, fund10, one, one),
			together(0, false, replay(1, 2), replay(2, 2), two50, one, two50)),
		// A policy committed in a transaction, then concurrent callers on both workspaces under it.
		slices.Concat(inTx(0, true, []byte{fund99, pop(pathMax, 2), pop(pathApprovalOver, 1), two50, ten, one}),
			alone(pop(pathFund, 5)), together(1, false, fund10),
			together(0, true, two50, two50, ten, ten, one, one, pop(pathApprove, 0), pop(pathApprove, 0))),
		// The same payout_ids on both workspaces in one batch.
		slices.Concat(together(0, true, fund10, fund10), together(0, true, two50, two50, two50, two50, two50, two50, two50, two50),
			together(0, true, pop(pathFail, 0), pop(pathFail, 0), pop(pathComplete, 1), pop(pathComplete, 1))),
		// Policy changes race creates.
		slices.Concat(alone(fund99), together(0, false, pop(pathDaily, 2), two50, two50, two50, two50, two50, pop(pathMax, 1), pop(pathApprovalOver, 0)),
			together(0, false, pop(pathNoLimits, 0), ten, ten, ten)),
		// A transaction rolled back with an overdraft and a refund, beside creates on B, then one committed on B.
		slices.Concat(together(0, true, fund10, fund10), inTx(0, false, []byte{ten, two50, pop(pathFail, 0)}, two50, two50, big),
			inTx(1, true, []byte{pop(pathFail, 0), two50, big}, two50, two50, two50)),
		// Batches race creates on a small balance, one of them all or nothing; then a batch alone.
		slices.Concat(alone(fund10), together(0, false, pop(pathBatch, 2), two50, two50, pop(pathBatch, 3), two50, pop(pathBatch, 1)),
			alone(pop(pathBatch, 4))),
		// Batches under a daily limit and an approval hold, beside creates and settlements.
		slices.Concat(alone(fund99, pop(pathDaily, 2), pop(pathApprovalOver, 1)), together(0, false, pop(pathBatch, 5), two50, pop(pathBatch, 4), pop(pathApprove, 0)),
			together(0, false, pop(pathFail, 1), pop(pathBatch, 0), pop(pathReject, 2))),
		// Batches in a caller's transaction, committed and rolled back, beside a batch on B.
		slices.Concat(together(0, true, fund10, fund10), inTx(0, true, []byte{pop(pathBatch, 2), pop(pathBatch, 3), two50}, pop(pathBatch, 2)),
			inTx(0, false, []byte{pop(pathBatch, 0), pop(pathBatch, 1)}, two50)),
		// Two of FuzzMoneyInvariants' seeds, one operation at a time.
		alone(0x30, 0x31, 0x36, 0x02, 0x12, 0x22, 0x05, 0x22, 0x32, 0x12),
		alone(0x30, 0x31, 0x19, 0x22, 0x12, 0x0a, 0x22, 0x1b, 0x09, 0x08, 0x52, 0x12),
	}
	return seeds
}
