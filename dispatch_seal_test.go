package payoutkit_test

import (
	"bytes"
	"crypto/rand"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/seal"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

func sealingEnv(t *testing.T) (*env, *seal.KeyRing) {
	t.Helper()
	key := make([]byte, seal.KeySize)
	rand.Read(key)
	ring, err := seal.NewKeyRing(seal.Key{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	store := memstore.New()
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Now: clock.Now, Logger: testLogger(t), SecretKeys: ring})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: t.Context(), clock: clock, store: store, eng: eng}, ring
}

// With sealed secrets and the engine as the workspace source, webhooks are
// signed with the plain secret.
func TestDeliverySignsWithOpenedSecret(t *testing.T) {
	e, _ := sealingEnv(t)
	r := newReceiver(t)
	ws := e.workspace(r)
	if raw, _ := e.store.Workspace(e.ctx, ws.ID); !seal.IsSealed(raw.WebhookSecret) {
		t.Fatalf("stored secret is not sealed")
	}
	e.fund(ws.ID, "10.00")
	e.startWith(payoutkit.DeliveryConfig{}, nil, e.eng)
	e.waitDelivered(ws.ID)
	reqs := r.requests()
	if len(reqs) != 1 || !reqs[0].SigOK {
		t.Fatalf("requests %+v", reqs)
	}
}

// A dispatcher that reads sealed secrets straight from the store, or an
// engine without the key, never signs with the sealed form: nothing is
// sent, no attempt is recorded, and the event waits for the key.
func TestDeliveryNeverSignsSealedSecret(t *testing.T) {
	e, _ := sealingEnv(t)
	r := newReceiver(t)
	ws := e.workspace(r)
	e.fund(ws.ID, "10.00")
	keyless, err := payoutkit.New(e.store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []payoutkit.WorkspaceSource{nil, keyless} {
		var logs lockedBuffer
		d := e.startWith(payoutkit.DeliveryConfig{Lease: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil, src)
		waitFor(t, "the sealed secret refused", func() bool {
			return strings.Contains(logs.String(), "cannot open the workspace's webhook secret")
		})
		d.stop()
		if strings.Contains(logs.String(), "whsec_") {
			t.Fatalf("a secret was logged: %s", logs.String())
		}
		if n := len(r.requests()); n != 0 {
			t.Fatalf("source %T: %d requests sent", src, n)
		}
		for _, ev := range e.events(ws.ID) {
			if ev.State != payoutkit.DeliveryPending || ev.Attempts != 0 {
				t.Fatalf("source %T: event %+v", src, ev)
			}
		}
		e.clock.Advance(2 * time.Minute) // the lease expires
	}
	// With the key, the waiting event goes out, correctly signed.
	e.startWith(payoutkit.DeliveryConfig{}, nil, e.eng)
	e.waitDelivered(ws.ID)
	if reqs := r.requests(); len(reqs) != 1 || !reqs[0].SigOK {
		t.Fatalf("requests %+v", reqs)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
