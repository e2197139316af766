package portal_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

const (
	notSentBadge = `<span class="badge badge-not_sent" data-testid="delivery-state" data-state="not_sent">not sent: no webhook URL</span>`
	failedBadge  = `<span class="badge badge-failed" data-testid="delivery-state" data-state="failed">failed</span>`
	noURLBanner  = `data-testid="no-webhook-url"`
)

// eventRow returns the Developer page's row of one event.
func eventRow(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<tr data-testid="event-row" data-event-id="` + regexp.QuoteMeta(id) + `">.*?</tr>`).FindString(page)
	if m == "" {
		t.Fatalf("no row for event %s:\n%s", id, page)
	}
	return m
}

// withdrawalEvent returns the withdrawal page's article of one event.
func withdrawalEvent(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<article class="event" data-testid="event" data-event-id="` + regexp.QuoteMeta(id) + `">.*?</article>`).FindString(page)
	if m == "" {
		t.Fatalf("no article for event %s:\n%s", id, page)
	}
	return m
}

// TestEventsNotSent holds that the events of a workspace without a webhook
// URL are shown as not sent, in a neutral badge rather than as failures,
// on the withdrawal page and on Settings → Developer, which says while no
// URL is set that events are recorded but not sent; they keep their Resend
// button, and a resend makes them pending.
func TestEventsNotSent(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme") // no webhook URL
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "alice")
	h.payout(ws, "po-1", "10.00", "alice")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	evs, err := h.engine.PayoutEvents(h.ctx, ws, "po-1")
	if err != nil || len(evs) != 1 {
		t.Fatalf("events of po-1: %v %v", evs, err)
	}
	submitted := evs[0].ID

	dev := b.get("/settings/developer").wantStatus(t, http.StatusOK).wantContains(t, noURLBanner,
		"Events are recorded and listed below, but not sent until you")
	if strings.Contains(dev.body, "badge-failed") {
		t.Error("the Developer page shows an event never sent as failed")
	}
	row := eventRow(t, dev.body, submitted)
	for _, want := range []string{notSentBadge, `action="/settings/developer/events/resend"`, `name="event_id" value="` + submitted + `"`} {
		if !strings.Contains(row, want) {
			t.Errorf("the event's row lacks %q:\n%s", want, row)
		}
	}
	if n := strings.Count(dev.body, notSentBadge); n != 2 {
		t.Errorf("%d events shown as not sent; want 2 (order.paid, payout.submitted)", n)
	}

	wd := b.get("/withdrawals/po-1").wantStatus(t, http.StatusOK)
	article := withdrawalEvent(t, wd.body, submitted)
	for _, want := range []string{notSentBadge, `data-testid="not-sent">Not sent: the workspace had no webhook URL when this event was recorded.`, `href="/settings/developer"`} {
		if !strings.Contains(article, want) {
			t.Errorf("the withdrawal's event lacks %q:\n%s", want, article)
		}
	}
	if strings.Contains(article, "No delivery attempt yet") || strings.Contains(article, "badge-failed") {
		t.Errorf("the withdrawal shows an event never sent as failed or awaiting an attempt:\n%s", article)
	}

	// A URL that fails to save leaves the banner: none is stored.
	b.post("/settings/developer/webhook", url.Values{"csrf_token": {csrf}, "url": {"ftp://hooks.example/in"}}).
		wantStatus(t, http.StatusBadRequest).wantContains(t, noURLBanner, `value="ftp://hooks.example/in"`)
	// Once a URL is set the banner goes; older events stay not sent.
	b.post("/settings/developer/webhook", url.Values{"csrf_token": {csrf}, "url": {"https://hooks.example/in"}}).wantStatus(t, http.StatusSeeOther)
	dev = b.get("/settings/developer").wantStatus(t, http.StatusOK)
	if strings.Contains(dev.body, noURLBanner) {
		t.Error("the banner stays after a URL was set")
	}
	if row := eventRow(t, dev.body, submitted); !strings.Contains(row, notSentBadge) {
		t.Errorf("setting a URL changed an older event's state:\n%s", row)
	}

	// A resend makes it pending, like any failed event.
	b.post("/settings/developer/events/resend", url.Values{"csrf_token": {csrf}, "event_id": {submitted}}).wantStatus(t, http.StatusSeeOther)
	dev = b.get("/settings/developer").wantStatus(t, http.StatusOK)
	if row := eventRow(t, dev.body, submitted); !strings.Contains(row, `<span class="badge badge-pending" data-testid="delivery-state" data-state="pending">pending</span>`) {
		t.Errorf("a resent event is not pending:\n%s", row)
	}
	if article := withdrawalEvent(t, b.get("/withdrawals/po-1").body, submitted); strings.Contains(article, "not sent") {
		t.Errorf("a resent event is still shown as not sent:\n%s", article)
	}
}

// TestEventsFailed holds that an event a receiver refused until it was
// given up on is still shown as failed, in red, with its attempts, and that
// a workspace with a URL has no banner.
func TestEventsFailed(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	if _, err := h.engine.SetWebhookURL(h.ctx, ws, "https://hooks.example/in", payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	h.fund(ws, "ord-1", "100.00", "alice")
	h.payout(ws, "po-1", "10.00", "alice")
	now := time.Now()
	claimed, err := h.store.ClaimEvents(h.ctx, "test", now.Add(time.Hour), now.Add(2*time.Hour), 10, nil)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claimed %v, %v; want the order's and the payout's events", claimed, err)
	}
	var submitted string
	for _, ev := range claimed {
		if ev.Subject == "payout:po-1" {
			submitted = ev.ID
		}
		if err := h.store.RecordAttempt(h.ctx, "test",
			payoutkit.DeliveryAttempt{EventID: ev.ID, Attempt: 1, At: now, StatusCode: 500, Error: "receiver answered 500"},
			payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, Attempts: 1, LastError: "receiver answered 500"}); err != nil {
			t.Fatal(err)
		}
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	dev := b.get("/settings/developer").wantStatus(t, http.StatusOK)
	if strings.Contains(dev.body, noURLBanner) || strings.Contains(dev.body, "not sent") {
		t.Error("a workspace with a URL says its events are not sent")
	}
	if row := eventRow(t, dev.body, submitted); !strings.Contains(row, failedBadge) || !strings.Contains(row, `action="/settings/developer/events/resend"`) {
		t.Errorf("a refused event's row:\n%s", row)
	}
	article := withdrawalEvent(t, b.get("/withdrawals/po-1").body, submitted)
	if !strings.Contains(article, failedBadge) || !strings.Contains(article, "receiver answered 500") || strings.Contains(article, `data-testid="not-sent"`) {
		t.Errorf("a refused event on the withdrawal page:\n%s", article)
	}
}
