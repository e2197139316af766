package portal_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/portal"
	"github.com/payoutkit/payoutkit/staff"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// Mount the portal beside the /v1 API over one engine and its store's
// team; staff sign in with the login that CreateWorkspace returns.
func ExampleNew() {
	store := memstore.New()
	engine, _ := payoutkit.New(store, &payoutkit.Config{Logger: slog.New(slog.DiscardHandler)})
	team, _ := staff.New(store, nil)
	nw, _ := engine.CreateWorkspace(context.Background(), payoutkit.CreateWorkspaceRequest{Name: "Acme"})

	mux := http.NewServeMux()
	// mux.Handle("/v1/", httpserver.New(engine, httpserver.Options{}))
	mux.Handle("/", portal.New(engine, team, portal.Options{Logger: slog.New(slog.DiscardHandler)}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, _ := client.PostForm(srv.URL+"/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}})
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Location"), resp.Cookies()[0].Name)
	// Output: 303 / payoutkit_session
}
