package payoutkit_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// answering returns a server that answers every request with status and body.
func answering(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func testEvent() payoutkit.Event {
	return payoutkit.Event{ID: "evt_1", Type: payoutkit.EventPayoutCompleted, Body: []byte(`{"id":"evt_1"}`)}
}

func TestNotifierAcknowledgement(t *testing.T) {
	n := &payoutkit.HTTPNotifier{AllowPrivate: true}
	for _, c := range []struct {
		status int
		body   string
		ok     bool
	}{
		{200, "success", true},
		{200, " \r\n\tsuccess \n", true},
		{201, "success", true},
		{299, "success", true},
		{200, "SUCCESS", false},
		{200, "success!", false},
		{200, `"success"`, false},
		{200, "", false},
		{204, "", false},
		{200, "success" + strings.Repeat(" ", payoutkit.MaxAnswer), false}, // longer than we read
		{500, "success", false},
		{404, "success", false},
		{301, "success", false},
	} {
		srv, _ := answering(t, c.status, c.body)
		res, err := n.Notify(t.Context(), payoutkit.Workspace{WebhookURL: srv.URL, WebhookSecret: "whsec_x"}, testEvent())
		if (err == nil) != c.ok {
			t.Errorf("%d %q: err = %v; want ok %v", c.status, c.body, err, c.ok)
		}
		if res.StatusCode != c.status {
			t.Errorf("%d %q: status %d", c.status, c.body, res.StatusCode)
		}
	}
}

func TestNotifierRequest(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r, must(io.ReadAll(r.Body))
		io.WriteString(w, "success")
	}))
	defer srv.Close()
	ev := testEvent()
	ev.Body = []byte("{\"id\":\"evt_1\",  \"data\": {\"x\": \"\u00e9\"}}\n") // sent as is, not re-encoded
	ws := payoutkit.Workspace{WebhookURL: srv.URL + "/hooks?a=1", WebhookSecret: "whsec_abc"}
	res, err := (&payoutkit.HTTPNotifier{AllowPrivate: true}).Notify(t.Context(), ws, ev)
	if err != nil || res.StatusCode != 200 || res.ResponseHead != "success" {
		t.Fatalf("Notify = %+v, %v", res, err)
	}
	switch {
	case got.Method != http.MethodPost || got.URL.Path != "/hooks" || got.URL.RawQuery != "a=1":
		t.Errorf("request %s %s", got.Method, got.URL)
	case string(body) != string(ev.Body):
		t.Errorf("body %q; want %q", body, ev.Body)
	case got.Header.Get("Content-Type") != "application/json":
		t.Errorf("Content-Type %q", got.Header.Get("Content-Type"))
	case got.Header.Get("X-Signature") != payoutkit.Sign("whsec_abc", ev.Body) || !payoutkit.VerifySignature("whsec_abc", body, got.Header.Get("X-Signature")):
		t.Errorf("X-Signature %q", got.Header.Get("X-Signature"))
	case got.Header.Get("X-Event-Id") != "evt_1" || got.Header.Get("X-Event-Type") != "payout.completed":
		t.Errorf("event headers %v", got.Header)
	case got.Header.Get("Authorization") != "":
		t.Error("webhook carries an Authorization header")
	}
}

func TestNotifierRefusesPrivateDestinations(t *testing.T) {
	srv, hits := answering(t, 200, "success")
	ws := payoutkit.Workspace{WebhookURL: srv.URL, WebhookSecret: "whsec_x"}
	localhost := payoutkit.Workspace{WebhookURL: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), WebhookSecret: "whsec_x"}

	guarded := &payoutkit.HTTPNotifier{}
	for _, w := range []payoutkit.Workspace{ws, localhost} {
		res, err := guarded.Notify(t.Context(), w, testEvent())
		if !errors.Is(err, payoutkit.ErrForbiddenDestination) || res.StatusCode != 0 {
			t.Errorf("%s: Notify = %+v, %v; want payoutkit.ErrForbiddenDestination", w.WebhookURL, res, err)
		}
		if err != nil && !strings.Contains(err.Error(), "loopback") {
			t.Errorf("error %q does not say why", err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the guarded notifier reached the server %d times", hits.Load())
	}
	open := &payoutkit.HTTPNotifier{AllowPrivate: true}
	for _, w := range []payoutkit.Workspace{ws, localhost} {
		if _, err := open.Notify(t.Context(), w, testEvent()); err != nil {
			t.Errorf("%s with AllowPrivate: %v", w.WebhookURL, err)
		}
	}

	// Through the dispatcher, a refused destination is a failed attempt.
	e := newEnv(t, nil)
	r := newReceiver(t)
	wsp := e.workspace(r)
	e.fund(wsp.ID, "1.00")
	e.start(payoutkit.DeliveryConfig{Notifier: &payoutkit.HTTPNotifier{}})
	a := e.waitAttempts(wsp.ID, e.events(wsp.ID)[0].ID, 1)
	if !strings.Contains(a[0].Error, "not allowed") || a[0].StatusCode != 0 || r.count() != 0 {
		t.Fatalf("attempt %+v, %d requests", a[0], r.count())
	}
}

// With AllowPrivate (the sandbox, -webhook-allow-private) metadata
// services are still never reached (internal/dialguard's tests hold the
// rest of the rule).
func TestNeverAllowed(t *testing.T) {
	ws := payoutkit.Workspace{WebhookURL: "http://169.254.169.254/latest/meta-data/", WebhookSecret: "whsec_x"}
	if _, err := (&payoutkit.HTTPNotifier{AllowPrivate: true}).Notify(t.Context(), ws, testEvent()); !errors.Is(err, payoutkit.ErrForbiddenDestination) {
		t.Fatalf("Notify to the metadata service with AllowPrivate: %v; want payoutkit.ErrForbiddenDestination", err)
	}
}

func TestNotifierDoesNotFollowRedirects(t *testing.T) {
	target, targetHits := answering(t, 200, "success")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	res, err := (&payoutkit.HTTPNotifier{AllowPrivate: true}).Notify(t.Context(), payoutkit.Workspace{WebhookURL: srv.URL}, testEvent())
	if err == nil || res.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("Notify = %+v, %v; want a failed 307", res, err)
	}
	if targetHits.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}

func TestNotifierTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	start := time.Now()
	_, err := (&payoutkit.HTTPNotifier{AllowPrivate: true, Timeout: 50 * time.Millisecond}).Notify(t.Context(), payoutkit.Workspace{WebhookURL: srv.URL}, testEvent())
	if err == nil || !strings.Contains(err.Error(), "no answer within 50ms") || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
	if payoutkit.NotifierTimeout(&payoutkit.HTTPNotifier{}) != 10*time.Second {
		t.Error("default timeout is not 10 s")
	}
}

func TestNotifierRefusesOtherSchemes(t *testing.T) {
	for _, u := range []string{"ftp://example.com/x", "file:///etc/passwd", "example.com/hook", "http://", "gopher://example.com"} {
		if _, err := (&payoutkit.HTTPNotifier{AllowPrivate: true}).Notify(t.Context(), payoutkit.Workspace{WebhookURL: u}, testEvent()); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
}

func TestResponseHead(t *testing.T) {
	srv, _ := answering(t, 500, strings.Repeat("e", 5000))
	res, _ := (&payoutkit.HTTPNotifier{AllowPrivate: true}).Notify(t.Context(), payoutkit.Workspace{WebhookURL: srv.URL}, testEvent())
	if res.ResponseHead != strings.Repeat("e", 256) {
		t.Errorf("response head of %d bytes", len(res.ResponseHead))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
