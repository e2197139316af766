package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit/processor/bitcoin"
	"github.com/payoutkit/payoutkit/processor/bitcoin/btcdtest"
	"github.com/payoutkit/payoutkit/processor/evm/evmtest"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// bitcoinRig is a btcd --regtest whose mined coins fund a hot wallet, a
// miner mining a block every 300 ms, and the -bitcoin-config file that
// points the server at them.
type bitcoinRig struct {
	node   *btcdtest.Node
	hot    btcutil.Address // the hot wallet, which every block mined pays
	config string
}

// newBitcoinRig starts the rig. Its -bitcoin-config batches for 1s, settles
// at one confirmation, polls every 100ms and prices BTC at 50,000 USD;
// options change it.
func newBitcoinRig(t *testing.T, options ...func(*bitcoin.FileConfig)) *bitcoinRig {
	t.Helper()
	priv, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	hot, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(priv.PubKey().SerializeCompressed()), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	node := btcdtest.Start(t, hot.EncodeAddress())
	node.Generate(t, btcdtest.ActivationHeight+1)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
				node.Client.Generate(1)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hot-wallet.key"), []byte(hex.EncodeToString(priv.Serialize())), 0o600); err != nil {
		t.Fatal(err)
	}
	fc := bitcoin.FileConfig{
		Network: "regtest", RPCHost: node.Host, RPCUser: btcdtest.User, RPCPass: btcdtest.Pass,
		KeyFile: "hot-wallet.key", StartHeight: 300, BatchWindow: "1s", Confirmations: 1,
		PollInterval: "100ms", Lease: "1s", Rates: map[string]string{"BTC": "50000"}, ExplorerTxURL: "https://mempool.invalid/tx/{txid}",
	}
	for _, o := range options {
		o(&fc)
	}
	body, err := json.Marshal(fc)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "bitcoin.json")
	if err := os.WriteFile(config, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return &bitcoinRig{node: node, hot: hot, config: config}
}

// payees returns a regtest address of each type paid: P2PKH, P2SH
// (P2SH-P2WPKH), P2WPKH and P2TR.
func btcPayees(t *testing.T) []btcutil.Address {
	t.Helper()
	net := &chaincfg.RegressionNetParams
	key := func() *btcec.PublicKey {
		k, err := btcec.NewPrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return k.PubKey()
	}
	p2pkh, _ := btcutil.NewAddressPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	nested, _ := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	redeem, _ := txscript.PayToAddrScript(nested)
	p2sh, _ := btcutil.NewAddressScriptHash(redeem, net)
	p2wpkh, _ := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	p2tr, _ := btcutil.NewAddressTaproot(schnorr.SerializePubKey(txscript.ComputeTaprootKeyNoScript(key())), net)
	return []btcutil.Address{p2pkh, p2sh, p2wpkh, p2tr}
}

// btcAddresses returns n new regtest addresses, of each type paid in turn.
func btcAddresses(t *testing.T, n int) []btcutil.Address {
	t.Helper()
	var addrs []btcutil.Address
	for len(addrs) < n {
		addrs = append(addrs, btcPayees(t)...)
	}
	return addrs[:n]
}

// btcPayoutBody is the API's body creating a BTC payout of cents (USD) to a.
func btcPayoutBody(id string, cents int64, a btcutil.Address) string {
	return fmt.Sprintf(`{"payout_id":%q,"amount":"%d.%02d","asset":"BTC","network":"BTC","address":%q,"payer_id":"c"}`, id, cents/100, cents%100, a.EncodeAddress())
}

// btcSats is cents (USD) in satoshis at the rig's 50,000 USD/BTC.
func btcSats(cents int64) int64 { return cents * 100_000_000 / (50_000 * 100) }

// btcChain is what the node's blocks after the rig's funding hold.
type btcChain struct {
	paid map[string][]int64 // the outputs paying each script, in satoshis
	// fees is the fee (inputs less outputs) of each transaction spending
	// the hot wallet's outputs, by txid; spent is what those transactions
	// took from the wallet, less their change.
	fees  map[string]int64
	spent int64
}

// chain reads the node's blocks after the rig's funding.
func (r *bitcoinRig) chain(t *testing.T) *btcChain {
	t.Helper()
	c := &btcChain{paid: map[string][]int64{}, fees: map[string]int64{}}
	wallet, _ := txscript.PayToAddrScript(r.hot)
	outs := map[wire.OutPoint]*wire.TxOut{} // the outputs of the blocks read
	prevOut := func(op wire.OutPoint) *wire.TxOut {
		if o, ok := outs[op]; ok {
			return o
		}
		tx, err := r.node.Client.GetRawTransaction(&op.Hash) // btcd runs with --txindex
		if err != nil {
			t.Fatalf("getrawtransaction %s: %v", op.Hash, err)
		}
		return tx.MsgTx().TxOut[op.Index]
	}
	tip, err := r.node.Client.GetBlockCount()
	if err != nil {
		t.Fatal(err)
	}
	for h := int64(btcdtest.ActivationHeight + 1); h <= tip; h++ {
		hash, err := r.node.Client.GetBlockHash(h)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.node.Client.GetBlock(hash)
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range b.Transactions {
			txid := tx.TxHash()
			var in, out, fromWallet, change int64
			for vout, o := range tx.TxOut {
				c.paid[string(o.PkScript)] = append(c.paid[string(o.PkScript)], o.Value)
				outs[wire.OutPoint{Hash: txid, Index: uint32(vout)}] = o
				out += o.Value
				if bytes.Equal(o.PkScript, wallet) {
					change += o.Value
				}
			}
			if i == 0 {
				continue // the coinbase
			}
			for _, ti := range tx.TxIn {
				prev := prevOut(ti.PreviousOutPoint)
				in += prev.Value
				if bytes.Equal(prev.PkScript, wallet) {
					fromWallet += prev.Value
				}
			}
			if fromWallet > 0 {
				c.fees[txid.String()] = in - out
				c.spent += fromWallet - change
			}
		}
	}
	return c
}

// received returns the outputs paying addr, in satoshis.
func (c *btcChain) received(addr btcutil.Address) []int64 {
	script, _ := txscript.PayToAddrScript(addr)
	return c.paid[string(script)]
}

// btcPaid is a BTC payout as it completed.
type btcPaid struct {
	id   string
	addr btcutil.Address
	sats int64
	txid string
	fee  int64 // network_fee, in satoshis
}

// btcCompleted checks that the payout p (as /v1/payouts/info shows it)
// completed with a txid of 64 hex digits, asset_amount sats and a
// network_fee, and returns it.
func btcCompleted(t *testing.T, p map[string]any, addr btcutil.Address, sats int64) btcPaid {
	t.Helper()
	txid, _ := p["txid"].(string)
	if _, err := hex.DecodeString(txid); err != nil || len(txid) != 64 || p["status"] != "completed" || p["network_fee"] == nil {
		t.Fatalf("payout %v, want it completed with a txid and a network_fee", p)
	}
	if want := decimal.New(sats, -8).String(); p["asset_amount"] != want {
		t.Fatalf("payout %v: asset_amount, want %s BTC", p, want)
	}
	return btcPaid{id: p["payout_id"].(string), addr: addr, sats: sats, txid: txid, fee: satoshis(t, p["network_fee"])}
}

// satoshis parses an amount of BTC the API shows.
func satoshis(t *testing.T, v any) int64 {
	t.Helper()
	s, _ := v.(string)
	d, err := decimal.NewFromString(s)
	if err != nil || !d.Shift(8).IsInteger() || d.IsNegative() {
		t.Fatalf("%v is not an amount of BTC", v)
	}
	return d.Shift(8).IntPart()
}

// checkPaid checks the chain against the payouts completed: each one's
// address received exactly its satoshis, once; the network_fee of the
// payouts of each txid add up to that transaction's fee on chain; the hot
// wallet spent in no other transaction; and it paid out exactly the
// payouts and their fees.
func (c *btcChain) checkPaid(t *testing.T, paid []btcPaid) {
	t.Helper()
	shares := map[string]int64{}
	var total int64
	for _, p := range paid {
		if got := c.received(p.addr); len(got) != 1 || got[0] != p.sats {
			t.Errorf("payout %s: %s received %v, want [%d]", p.id, p.addr, got, p.sats)
		}
		shares[p.txid] += p.fee
		total += p.sats + p.fee
	}
	for txid, share := range shares {
		if fee, ok := c.fees[txid]; !ok || fee != share {
			t.Errorf("transaction %s: on chain %t with a fee of %d satoshis; its payouts' network_fee add up to %d", txid, ok, fee, share)
		}
	}
	for txid := range c.fees {
		if _, ok := shares[txid]; !ok {
			t.Errorf("the hot wallet spent in %s, no payout's transaction", txid)
		}
	}
	if c.spent != total {
		t.Errorf("the hot wallet paid out %d satoshis; the payouts and their fees are %d", c.spent, total)
	}
}

// TestBitcoinProcessorPaysThroughTheServer pays 25 payouts to addresses of
// every type (P2PKH, P2SH, P2WPKH, P2TR) through the server's API with
// -processor bitcoin, on SQLite and PostgreSQL, in batches of at most 10:
// each completes with its txid, amount and fee share, the shares of each
// transaction add up to its fee on chain, each address receives exactly
// its amount, once, and each payout.completed webhook arrives, signed.
func TestBitcoinProcessorPaysThroughTheServer(t *testing.T) {
	eachServerDB(t, func(t *testing.T, db string) {
		const n, batch = 25, 10
		rig := newBitcoinRig(t, func(c *bitcoin.FileConfig) { c.MaxBatchSize, c.BatchWindow = batch, "3s" })
		s, key, hooks := serveFunded(t, db, "10000.00", "-processor", "bitcoin", "-bitcoin-config", rig.config)
		addrs := btcAddresses(t, n)
		cents := func(i int) int64 { return int64(100+i)*100 + 50 } // (100+i).50 USD
		for i, a := range addrs {
			if _, env := call(t, "POST", s.url+"/v1/payouts", key, btcPayoutBody(fmt.Sprintf("btc-%d", i), cents(i), a)); code(env) != 0 {
				t.Fatalf("payout: %v", env)
			}
		}
		var paid []btcPaid
		perTx := map[string]int{}
		for i, a := range addrs {
			p := btcCompleted(t, settledPayout(t, s.url, key, fmt.Sprintf("btc-%d", i)), a, btcSats(cents(i)))
			paid = append(paid, p)
			perTx[p.txid]++
		}
		rig.chain(t).checkPaid(t, paid)
		// Full batches go at once; the rest when the oldest's window ends.
		for txid, k := range perTx {
			if k > batch {
				t.Errorf("%d payouts in %s, more than max_batch_size", k, txid)
			}
		}
		if len(perTx) > 4 {
			t.Errorf("%d payouts in %d transactions, want 3 or 4", n, len(perTx))
		}
		for _, p := range paid {
			btcWait(t, "webhook payout.completed "+p.id, func() bool { return hooks.delivered(p.id, "payout.completed") })
		}
		hooks.wantNoBad(t)
		t.Logf("%d payouts in %d transactions", n, len(perTx))
	})
}

// A server killed (SIGKILL) after a batch's transaction is stored and
// before it is broadcast, or just after, pays each payout exactly once
// after a restart.
func TestBitcoinPayoutSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in child processes")
	}
	for _, point := range []string{"signed", "sent"} {
		t.Run(point, func(t *testing.T) {
			rig := newBitcoinRig(t)
			db := filepath.Join(t.TempDir(), "payoutkit.db")
			key := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "crash"))["api_key"].(string)
			args := []string{"-db", db, "-processor", "bitcoin", "-bitcoin-config", rig.config, "-delivery-lease", "2s"}
			srv := startProcEnv(t, []string{"PAYOUTKIT_TEST_BITCOIN_CRASH_AT=" + point}, args...)
			fund(t, srv.url, key, "o1", "1000.00")
			addrs := btcPayees(t)
			for i, a := range addrs {
				if _, env := call(t, "POST", srv.url+"/v1/payouts", key, btcPayoutBody(fmt.Sprintf("p%d", i), 50_00, a)); code(env) != 0 {
					t.Fatalf("payout: %v", env)
				}
			}
			srv.crashed(t)

			srv = startProc(t, args...)
			var paid []btcPaid
			for i, a := range addrs {
				paid = append(paid, btcCompleted(t, settledPayout(t, srv.url, key, fmt.Sprintf("p%d", i)), a, btcSats(50_00)))
			}
			rig.chain(t).checkPaid(t, paid)
		})
	}
}

// TestBitcoinTwoInstancesOneWallet runs two servers, each a process of
// its own, on one PostgreSQL database with one -bitcoin-config, so one hot
// wallet, and creates 200 payouts through both APIs at once: every payout
// completes and is paid exactly once on chain, no output of the wallet is
// reserved or spent by two batches, no batch is conflicted, and the wallet
// paid out exactly the payouts and their fees.
func TestBitcoinTwoInstancesOneWallet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in child processes")
	}
	dsn := pgtest.Postgres(t) // the scenario is PostgreSQL's: SQLite is one process's
	const n = 200
	// A lease far longer than a round under the race detector: the test
	// expects no takeover.
	rig := newBitcoinRig(t, func(c *bitcoin.FileConfig) { c.MaxBatchSize = 25; c.Lease = "10s" })
	ws := newFaultWorkspace(t, dsn, "")
	args := []string{"-db", dsn, "-processor", "bitcoin", "-bitcoin-config", rig.config, "-delivery-lease", "2s"}
	metrics := []string{freeAddr(t), freeAddr(t)}
	a, b := startProc(t, append(args, "-metrics-addr", metrics[0])...), startProc(t, append(args, "-metrics-addr", metrics[1])...)
	urls := []string{a.url, b.url}
	fund(t, a.url, ws.key, "o1", "30000.00")

	addrs := btcAddresses(t, n)
	createBTCPayouts(t, urls, ws.key, addrs, 0, n)
	if t.Failed() {
		return
	}
	txs := checkBTCPayouts(t, rig, dsn, urls, ws.key, addrs)

	// One instance holds the wallet's lease and builds every batch; the
	// other only takes payouts (docs/BITCOIN.md, "One process per wallet").
	logged := func(p *proc, msg string) int { return strings.Count(p.stderr.String(), `"msg":"`+msg+`"`) }
	storedA, storedB := logged(a, "bitcoin batch signed"), logged(b, "bitcoin batch signed")
	lost := logged(a, "bitcoin batch lost to another process; trying again") + logged(b, "bitcoin batch lost to another process; trying again")
	leases := logged(a, "bitcoin wallet lease taken: this process runs the wallet's loop") + logged(b, "bitcoin wallet lease taken: this process runs the wallet's loop")
	t.Logf("%d payouts in %d transactions; batches stored by the instances: %d and %d; lost to the other: %d; rounds failed: %d and %d",
		n, len(txs), storedA, storedB, lost, logged(a, "bitcoin loop"), logged(b, "bitcoin loop"))
	if storedA+storedB != len(txs) || min(storedA, storedB) != 0 || lost != 0 || leases != 1 {
		t.Errorf("batches stored %d and %d for %d transactions, %d lost, the lease taken %d times: want one instance building them all",
			storedA, storedB, len(txs), lost, leases)
	}
	// Each instance's /metrics says whether it holds the lease: one does.
	var holders, taken float64
	for _, m := range metrics {
		fams, err := scrape(t, "http://"+m+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		h, ok1 := value(fams, "payoutkit_bitcoin_lease_holder")
		l, ok2 := value(fams, "payoutkit_bitcoin_leases_total")
		if !ok1 || !ok2 {
			t.Fatalf("%s: no lease metrics", m)
		}
		holders, taken = holders+h, taken+l
	}
	if holders != 1 || taken != 1 {
		t.Errorf("lease holders %v, leases taken %v: want 1 and 1", holders, taken)
	}
}

// btcPayoutID and btcPayoutCents are the id and amount of the i-th payout
// of createBTCPayouts: (10+i).00 USD.
func btcPayoutID(i int) string   { return fmt.Sprintf("btc-%d", i) }
func btcPayoutCents(i int) int64 { return int64(10+i) * 100 }

// createBTCPayouts creates payouts from to to of addrs, from four clients at
// once, each alternating between the instances at urls.
func createBTCPayouts(t *testing.T, urls []string, key string, addrs []btcutil.Address, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := from + w; i < to; i += 4 {
				if st, env := postJSON(urls[i%len(urls)]+"/v1/payouts", key, btcPayoutBody(btcPayoutID(i), btcPayoutCents(i), addrs[i])); st != 200 || env.Code != 0 {
					t.Errorf("payout %s: %d %+v", btcPayoutID(i), st, env)
				}
			}
		})
	}
	wg.Wait()
}

// checkBTCPayouts waits for every payout of addrs to settle and checks
// each paid once on chain with its amount and fee share, and the rail's
// records in dsn (checkBitcoinBatches); it returns the txids paying them.
func checkBTCPayouts(t *testing.T, rig *bitcoinRig, dsn string, urls []string, key string, addrs []btcutil.Address) map[string]bool {
	t.Helper()
	var paid []btcPaid
	txs := map[string]bool{}
	for i, addr := range addrs {
		p := btcCompleted(t, settledPayout(t, urls[(i+1)%len(urls)], key, btcPayoutID(i)), addr, btcSats(btcPayoutCents(i)))
		paid = append(paid, p)
		txs[p.txid] = true
	}
	rig.chain(t).checkPaid(t, paid)
	checkBitcoinBatches(t, dsn)
	return txs
}

// TestBitcoinLeaseTakeover runs two servers on one PostgreSQL database and
// one wallet, and SIGKILLs the one holding the wallet's lease once it has
// stored a batch: the other takes the lease over once it lapses and pays
// the rest, the dead one's queued payouts too, each once.
func TestBitcoinLeaseTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in child processes")
	}
	dsn := pgtest.Postgres(t)
	const n = 60
	rig := newBitcoinRig(t, func(c *bitcoin.FileConfig) { c.MaxBatchSize = 10; c.Lease = "2s" })
	ws := newFaultWorkspace(t, dsn, "")
	args := []string{"-db", dsn, "-processor", "bitcoin", "-bitcoin-config", rig.config, "-delivery-lease", "2s"}
	procs := []*proc{startProc(t, args...), startProc(t, args...)}
	fund(t, procs[0].url, ws.key, "o1", "30000.00")
	addrs := btcAddresses(t, n)
	const taken = "bitcoin wallet lease taken: this process runs the wallet's loop"
	createBTCPayouts(t, []string{procs[0].url, procs[1].url}, ws.key, addrs, 0, n/2)
	var holder int
	btcWait(t, "a batch stored by the lease's holder", func() bool {
		for i, p := range procs {
			if strings.Contains(p.stderr.String(), taken) && strings.Contains(p.stderr.String(), "bitcoin batch signed") {
				holder = i
				return true
			}
		}
		return false
	})
	if err := procs[holder].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procs[holder].exited
	survivor := procs[1-holder]
	createBTCPayouts(t, []string{survivor.url}, ws.key, addrs, n/2, n)
	if t.Failed() {
		return
	}
	checkBTCPayouts(t, rig, dsn, []string{survivor.url}, ws.key, addrs)
	if !strings.Contains(survivor.stderr.String(), taken) {
		t.Errorf("the survivor never took the lease:\n%s", survivor.stderr.String())
	}
}

// checkBitcoinBatches checks the Bitcoin rail's records in dsn once every
// payout has settled: no transaction is conflicted; the first
// transactions of the batches spend distinct outputs of the wallet; the
// outputs reserved are exactly those, each by the batch spending it; and
// each output of the wallet spent on chain was spent by a transaction of
// the batch that reserved it.
func checkBitcoinBatches(t *testing.T, dsn string) {
	t.Helper()
	db := openDB(t, dsn)
	if open := queryStrings(t, db, `SELECT payout_id FROM payoutkit_btc_payouts WHERE state <> 'completed'`); len(open) > 0 {
		t.Errorf("the rail's payouts not completed: %v", open)
	}
	if bad := queryStrings(t, db, `SELECT txid FROM payoutkit_btc_txs WHERE state = 'conflicted'`); len(bad) > 0 {
		t.Errorf("conflicted transactions: %v", bad)
	}
	rows, err := db.Query(`SELECT batch_id, raw FROM payoutkit_btc_txs WHERE attempt = 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	spends := map[string]string{} // "txid:vout" of an output → the batch whose first transaction spends it
	for rows.Next() {
		var batch string
		var raw []byte
		if err := rows.Scan(&batch, &raw); err != nil {
			t.Fatal(err)
		}
		tx := wire.NewMsgTx(2)
		if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
			t.Fatalf("batch %s: %v", batch, err)
		}
		for _, in := range tx.TxIn {
			op := in.PreviousOutPoint.String()
			if other, dup := spends[op]; dup {
				t.Errorf("%s spent by the batches %s and %s", op, other, batch)
			}
			spends[op] = batch
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	reserved := map[string]string{}
	for _, r := range queryStrings(t, db, `SELECT txid || ':' || vout || ' ' || reserved_by FROM payoutkit_btc_utxos WHERE reserved_by <> ''`) {
		op, batch, _ := strings.Cut(r, " ")
		reserved[op] = batch
	}
	if !maps.Equal(reserved, spends) {
		t.Errorf("outputs reserved %v; the batches' first transactions spend %v", reserved, spends)
	}
	if bad := queryStrings(t, db, `SELECT u.txid || ':' || u.vout || ' spent by ' || u.spent_txid FROM payoutkit_btc_utxos u
		LEFT JOIN payoutkit_btc_txs t ON t.txid = u.spent_txid
		WHERE u.spent_txid <> '' AND (t.batch_id IS NULL OR t.batch_id <> u.reserved_by)`); len(bad) > 0 {
		t.Errorf("outputs spent on chain by a transaction not of the batch reserving them: %v", bad)
	}
}

// TestEVMAndBitcoinRails runs -processor evm,bitcoin with a geth rig and a
// btcd rig: an ETH payout and a BTC payout through the one API are each
// paid on their own chain, the ETH one by a transaction on geth, the BTC
// one by a transaction on btcd.
func TestEVMAndBitcoinRails(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	evmRig, btcRig := newEVMRig(t), newBitcoinRig(t)
	s, key, _ := serveFunded(t, db, "1000.00", "-processor", "evm,bitcoin", "-evm-config", evmRig.config, "-bitcoin-config", btcRig.config)
	alice, bob := newAddress(t), btcPayees(t)[3] // an EVM address, a P2TR one
	for _, body := range []string{
		`{"payout_id":"eth-1","amount":"30.00","asset":"ETH","network":"ETH","address":"` + alice.Hex() + `","payer_id":"c"}`,
		btcPayoutBody("btc-1", 50_00, bob),
	} {
		if _, env := call(t, "POST", s.url+"/v1/payouts", key, body); code(env) != 0 {
			t.Fatalf("payout: %v", env)
		}
	}
	eth, btc := settledPayout(t, s.url, key, "eth-1"), settledPayout(t, s.url, key, "btc-1")
	evmRig.wantETHPaid(t, eth, alice, new(big.Int).Div(evmtest.Ether(1), big.NewInt(100))) // 30 USD at 3,000
	btcRig.chain(t).checkPaid(t, []btcPaid{btcCompleted(t, btc, bob, btcSats(50_00))})
}

func btcWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	btcdtest.Wait(t, time.Minute, what, cond)
}

// freeAddr is a loopback address no one listens on, for a child server's
// -metrics-addr (which names no port back).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
