package portal_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/portal"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// TestWithdrawalExplorerLink holds that Options.ExplorerURL links a
// settled withdrawal's txid to its explorer page, and that a withdrawal
// without a txid, or a network without a pattern, gets no link.
func TestWithdrawalExplorerLink(t *testing.T) {
	h := newHarnessWith(t, memstore.New(), portal.Options{ExplorerURL: func(network, txid string) string {
		if network != "TRON" {
			return ""
		}
		return "https://tronscan.invalid/#/transaction/" + txid
	}})
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "alice")
	h.payout(ws, "po-1", "10.00", "alice")
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	if page := b.get("/withdrawals/po-1").wantStatus(t, http.StatusOK).body; strings.Contains(page, `class="explorer"`) {
		t.Fatal("an explorer link before the payout has a txid")
	}
	if _, err := h.engine.CompletePayout(h.ctx, ws, "po-1", payoutkit.Completion{TxID: "abc123"}); err != nil {
		t.Fatal(err)
	}
	b.get("/withdrawals/po-1").wantStatus(t, http.StatusOK).
		wantContains(t, `<a class="explorer" href="https://tronscan.invalid/#/transaction/abc123" rel="noopener noreferrer">View in explorer</a>`)
}
