package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/seal"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// signedReceiver is a real HTTP webhook receiver that checks each
// signature against the secret it was given.
type signedReceiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	secret string
	good   int // requests whose signature checked
	bad    int
}

func newSignedReceiver(t *testing.T) *signedReceiver {
	r := &signedReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		body, _ := io.ReadAll(hr.Body)
		r.mu.Lock()
		if payoutkit.VerifySignature(r.secret, body, hr.Header.Get(payoutkit.HeaderSignature)) {
			r.good++
		} else {
			r.bad++
		}
		r.mu.Unlock()
		io.WriteString(w, "success")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *signedReceiver) counts() (good, bad int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.good, r.bad
}

func newKeyEnv(t *testing.T) (encoded string, id string) {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	return base64.StdEncoding.EncodeToString(key), seal.KeyID(key)
}

// rawSecret reads a workspace's webhook_secret column straight from the
// SQLite file, as someone holding a copy of the database would.
func rawSecret(t *testing.T, db, ws string) string {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var secret string
	if err := raw.QueryRow(`SELECT webhook_secret FROM workspaces WHERE id = ?`, ws).Scan(&secret); err != nil {
		t.Fatal(err)
	}
	return secret
}

// payOrder creates and pays an order through the API, which records an
// order.paid event for the dispatcher.
func payOrder(t *testing.T, s *server, key, orderID string) {
	t.Helper()
	if _, env := call(t, "POST", s.url+"/v1/orders", key, `{"order_id":"`+orderID+`","amount":"10.00"}`); code(env) != 0 {
		t.Fatalf("create order: %v", env)
	}
	if _, env := call(t, "POST", s.url+"/v1/sandbox/orders/pay", key, `{"order_id":"`+orderID+`"}`); code(env) != 0 {
		t.Fatalf("pay order: %v", env)
	}
}

// With PAYOUTKIT_SECRET_KEY set, the database holds webhook secrets sealed
// only, the server still signs webhooks with the plain secret, and a key
// rotation (new key current, old one previous, secrets reseal, old key
// dropped) keeps it that way.
func TestSealedWebhookSecrets(t *testing.T) {
	k1, id1 := newKeyEnv(t)
	k2, id2 := newKeyEnv(t)
	t.Setenv(envSecretKey, k1)
	t.Setenv(envSecretKeyPrevious, "")
	recv := newSignedReceiver(t)
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	created := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "sealed", "-webhook-url", recv.srv.URL))
	ws, key, secret := created["workspace_id"].(string), created["api_key"].(string), created["webhook_secret"].(string)
	recv.mu.Lock()
	recv.secret = secret
	recv.mu.Unlock()
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("workspace create printed the secret %q", secret)
	}
	stored := rawSecret(t, db, ws)
	if !strings.HasPrefix(stored, "sealed:v1:"+id1+":") || strings.Contains(stored, secret) || strings.Contains(stored, "whsec_") {
		t.Fatalf("stored webhook_secret %q", stored)
	}

	s := startServer(t, "-db", db)
	payOrder(t, s, key, "o1")
	waitFor(t, func() bool { good, _ := recv.counts(); return good == 1 })
	if strings.Contains(s.stderr.String(), secret) || strings.Contains(s.stdout.String(), secret) {
		t.Fatal("the server printed the secret")
	}
	s.shutdown(t)

	// Rotation: the new key is current, the old one previous.
	t.Setenv(envSecretKey, k2)
	t.Setenv(envSecretKeyPrevious, k1)
	rep := decodeObject(t, mustCommand(t, "secrets", "reseal", "-db", db))
	if rep["workspaces"] != float64(1) || rep["resealed"] != float64(1) || rep["current"] != float64(0) || len(rep["failed"].([]any)) != 0 {
		t.Fatalf("reseal printed %v", rep)
	}
	if again := decodeObject(t, mustCommand(t, "secrets", "reseal", "-db", db)); again["resealed"] != float64(0) || again["current"] != float64(1) {
		t.Fatalf("second reseal printed %v", again)
	}
	if stored := rawSecret(t, db, ws); !strings.HasPrefix(stored, "sealed:v1:"+id2+":") || strings.Contains(stored, secret) {
		t.Fatalf("stored webhook_secret after reseal %q", stored)
	}

	// The old key dropped: the server opens with the new key alone.
	t.Setenv(envSecretKeyPrevious, "")
	s = startServer(t, "-db", db)
	payOrder(t, s, key, "o2")
	waitFor(t, func() bool { good, _ := recv.counts(); return good == 2 })
	if _, bad := recv.counts(); bad != 0 {
		t.Fatalf("%d webhooks with a bad signature", bad)
	}
	// A secret rotated now is shown plain once and stored sealed.
	rot := decodeObject(t, mustCommand(t, "webhook", "rotate-secret", "-db", db, "-workspace", ws))
	if newSecret := rot["webhook_secret"].(string); !strings.HasPrefix(newSecret, "whsec_") || strings.Contains(rawSecret(t, db, ws), newSecret) {
		t.Fatalf("rotate-secret printed %q, stored %q", newSecret, rawSecret(t, db, ws))
	}
	s.shutdown(t)

	// Without the key, commands that need the secret fail clearly, and
	// reseal names the workspace it cannot open.
	k3, _ := newKeyEnv(t)
	t.Setenv(envSecretKey, k3)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"webhook", "set", "-db", db, "-workspace", ws, "-url", recv.srv.URL}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "not configured") || !strings.Contains(err.Error(), id2) {
		t.Fatalf("webhook set without the key: %v", err)
	}
	stdout.Reset()
	err = run(context.Background(), []string{"secrets", "reseal", "-db", db}, &stdout, &stderr)
	if err == nil {
		t.Fatal("reseal without the key succeeded")
	}
	if failed := decodeObject(t, stdout.String())["failed"].([]any); len(failed) != 1 || failed[0].(map[string]any)["workspace_id"] != ws {
		t.Fatalf("reseal without the key printed %s", stdout.String())
	}
	if strings.Contains(stderr.String(), "whsec_") || strings.Contains(stderr.String(), k3) {
		t.Fatal("a secret or key was logged")
	}
}

// Keys come from the environment and are checked before anything opens.
func TestSecretKeyEnvironment(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	for _, env := range [][2]string{{"not base64!", ""}, {base64.StdEncoding.EncodeToString(make([]byte, 16)), ""}, {"", "c29tZQ=="}} {
		t.Setenv(envSecretKey, env[0])
		t.Setenv(envSecretKeyPrevious, env[1])
		_, err := command(t, "keys", "list", "-db", db, "-workspace", "ws_x")
		if err == nil || !strings.Contains(err.Error(), "PAYOUTKIT_SECRET_KEY") || strings.Contains(err.Error(), env[0]+env[1]) {
			t.Fatalf("env %q: %v", env, err)
		}
	}
	// A database made under a key from the environment has no key file:
	// without the environment's key, reseal has none.
	k, _ := newKeyEnv(t)
	t.Setenv(envSecretKey, k)
	t.Setenv(envSecretKeyPrevious, "")
	mustCommand(t, "workspace", "create", "-db", db, "-name", "keys")
	t.Setenv(envSecretKey, "")
	if _, err := command(t, "secrets", "reseal", "-db", db); err == nil || !strings.Contains(err.Error(), envSecretKey) {
		t.Fatalf("reseal without a key: %v", err)
	}
}

// With PAYOUTKIT_SECRET_KEY set, list cursors are keyed from it: instances
// sharing the key accept each other's cursors, and a cursor made under
// another key (or the public default) is refused.
func TestCursorKeyFromSecretKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "cursors.db")
	cursorKey := func() []byte {
		keys, err := secretKeys(db, "", false)
		if err != nil {
			t.Fatal(err)
		}
		return cursorKey(keys)
	}
	t.Setenv(envSecretKey, "")
	if cursorKey() != nil {
		t.Fatal("a cursor key without PAYOUTKIT_SECRET_KEY")
	}
	key := func() string {
		b := make([]byte, seal.KeySize)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	k1, k2 := key(), key()
	t.Setenv(envSecretKey, k1)
	c1 := cursorKey()
	t.Setenv(envSecretKey, k2)
	c2 := cursorKey()
	if len(c1) != 32 || bytes.Equal(c1, c2) {
		t.Fatalf("cursor keys %x and %x: want 32 bytes, different per sealing key", c1, c2)
	}

	store := memstore.New()
	engine := func(k []byte) *payoutkit.Engine {
		e, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, CursorKey: k})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b, sameAsA, public := engine(c1), engine(c2), engine(c1), engine(nil)
	ctx := t.Context()
	nw, err := a.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Cursors"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	for _, id := range []string{"o-1", "o-2", "o-3"} {
		if _, _, err := a.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: "1.00"}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := a.ListOrders(ctx, ws, payoutkit.ListOrdersRequest{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	next := payoutkit.ListOrdersRequest{Limit: 1, Cursor: page.NextCursor}
	if _, err := sameAsA.ListOrders(ctx, ws, next); err != nil {
		t.Errorf("another instance with the same key refused the cursor: %v", err)
	}
	for name, e := range map[string]*payoutkit.Engine{"another key": b, "the default key": public} {
		if _, err := e.ListOrders(ctx, ws, next); !errors.Is(err, payoutkit.ErrInvalidInput) {
			t.Errorf("a cursor under %s: %v; want ErrInvalidInput", name, err)
		}
	}
}

// The key file: made beside a SQLite database only when asked to (a
// database being initialised), read as it is afterwards, still opening what
// it sealed once PAYOUTKIT_SECRET_KEY replaces it; none by default for
// PostgreSQL; a named file must exist; a bad one is refused without being
// quoted.
func TestSecretKeyFile(t *testing.T) {
	t.Setenv(envSecretKey, "")
	t.Setenv(envSecretKeyPrevious, "")
	dir := t.TempDir()
	db := filepath.Join(dir, "keys.db")
	if keys, err := secretKeys(db, "", false); err != nil || keys.ring != nil {
		t.Fatalf("no key, not creating: %+v, %v", keys, err)
	}
	made, err := secretKeys(db, "", true)
	if err != nil || made.ring == nil || !made.made || made.file != db+secretKeyFileSuffix {
		t.Fatalf("creating: %+v, %v", made, err)
	}
	wantPrivateFile(t, made.file)
	again, err := secretKeys(db, "", true)
	if err != nil || again.made || again.current.ID != made.current.ID {
		t.Fatalf("creating again: %+v, %v", again, err)
	}
	sealed, err := made.ring.Seal("ws_1", "whsec_test")
	if err != nil {
		t.Fatal(err)
	}

	k, id := newKeyEnv(t)
	t.Setenv(envSecretKey, k)
	env, err := secretKeys(db, "", false)
	if err != nil || env.current.ID != id || env.file != "" {
		t.Fatalf("with %s: %+v, %v", envSecretKey, env, err)
	}
	if plain, err := env.ring.Open("ws_1", sealed); err != nil || plain != "whsec_test" {
		t.Fatalf("the file's key under %s: %q, %v", envSecretKey, plain, err)
	}
	t.Setenv(envSecretKey, "")

	pg := "postgres://u:p@127.0.0.1:5432/x"
	if keys, err := secretKeys(pg, "", true); err != nil || keys.ring != nil {
		t.Fatalf("PostgreSQL without a key: %+v, %v", keys, err)
	}
	named := filepath.Join(dir, "named.key")
	if _, err := secretKeys(pg, named, false); err == nil || !strings.Contains(err.Error(), named) {
		t.Fatalf("a missing named key file: %v", err)
	}
	if keys, err := secretKeys(pg, named, true); err != nil || !keys.made || keys.file != named {
		t.Fatalf("a named key file on a first start: %+v, %v", keys, err)
	}
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad+secretKeyFileSuffix, []byte("not-a-key-at-all"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secretKeys(bad, "", false); err == nil || strings.Contains(err.Error(), "not-a-key-at-all") || !strings.Contains(err.Error(), bad+secretKeyFileSuffix) {
		t.Fatalf("a bad key file: %v", err)
	}
	if names := dirEntries(t, dir); len(names) != 3 {
		t.Fatalf("files left: %v", names) // the key file, the named one, the bad one
	}
}
