package httpserver_test

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
)

// hangingBalance is the engine with a balance read that waits for its
// request to be cancelled.
type hangingBalance struct {
	*payoutkit.Engine
	started chan struct{}
}

func (h hangingBalance) Balance(ctx context.Context, _ string) (payoutkit.Balance, error) {
	close(h.started)
	<-ctx.Done()
	return payoutkit.Balance{}, ctx.Err()
}

func (h hangingBalance) AuthenticateBalance(ctx context.Context, authorization string, client netip.Addr) (payoutkit.Principal, payoutkit.Balance, error) {
	p, err := h.Authenticate(ctx, authorization, client)
	if err != nil {
		return payoutkit.Principal{}, payoutkit.Balance{}, err
	}
	b, err := h.Balance(ctx, p.WorkspaceID)
	return p, b, err
}

// A client that goes away before its answer is not a server error: the
// request is logged at INFO, not ERROR, so that operators' error alerts
// count only what went wrong here.
func TestClientGoneIsNotAnError(t *testing.T) {
	base := newEnv(t, httpserver.Options{})
	svc := hangingBalance{Engine: base.engine, started: make(chan struct{})}
	e := newEnvWith(t, base.store, base.engine, svc, httpserver.Options{})
	_, key := e.workspace()

	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/balance", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-svc.started
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled request was answered")
	}

	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(e.logs.String(), `"msg":"request"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no request log line; logs:\n%s", e.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	logs := e.logs.String()
	if strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("a client that went away was logged as an error:\n%s", logs)
	}
	if !strings.Contains(logs, `"msg":"request cancelled before its answer"`) {
		t.Errorf("no line says the request was cancelled:\n%s", logs)
	}
}
