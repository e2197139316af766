package payoutkit_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
)

func TestSignKnownAnswer(t *testing.T) {
	// RFC 4231, test case 2.
	got := payoutkit.Sign("Jefe", []byte("what do ya want for nothing?"))
	if want := "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"; got != want {
		t.Fatalf("Sign = %s; want %s", got, want)
	}
}

func TestVerifySignature(t *testing.T) {
	secret := "whsec_" + strings.Repeat("a1B2", 12)
	body := []byte(`{"id":"evt_1","type":"payout.completed"}`)
	sig := payoutkit.Sign(secret, body)
	if !payoutkit.VerifySignature(secret, body, sig) {
		t.Fatal("a correct signature does not verify")
	}
	for name, c := range map[string]struct {
		secret, body, sig string
	}{
		"other secret":   {secret + "x", string(body), sig},
		"secret w/o tag": {strings.TrimPrefix(secret, "whsec_"), string(body), sig},
		"changed body":   {secret, string(body) + " ", sig},
		"truncated":      {secret, string(body), sig[:62]},
		"not hex":        {secret, string(body), "zz" + sig[2:]},
		"empty":          {secret, string(body), ""},
		"other event":    {secret, `{"id":"evt_2","type":"payout.completed"}`, sig},
	} {
		if payoutkit.VerifySignature(c.secret, []byte(c.body), c.sig) {
			t.Errorf("%s: verified", name)
		}
	}
}

// A receiver checks the signature on the raw body before parsing it.
func ExampleVerifySignature() {
	secret := "whsec_ExampleSecretExampleSecretExampleSecretExa"
	body := []byte(`{"id":"evt_1","type":"payout.completed","created_at":"2026-11-22T10:05:00Z","workspace_id":"ws_1","data":{"payout_id":"po-1001","status":"completed"}}`)
	signature := payoutkit.Sign(secret, body) // what the X-Signature header carries

	if !payoutkit.VerifySignature(secret, body, signature) {
		fmt.Println("rejected")
		return
	}
	var ev payoutkit.WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev.ID, ev.Type)
	// Output: evt_1 payout.completed
}

// An event shows as not sent only when it failed for want of a webhook URL;
// every other event shows its stored state.
func TestEventState(t *testing.T) {
	for _, c := range []struct {
		d    payoutkit.EventDelivery
		want payoutkit.EventState
	}{
		{payoutkit.EventDelivery{State: payoutkit.DeliveryPending}, payoutkit.EventStatePending},
		{payoutkit.EventDelivery{State: payoutkit.DeliveryPending, Attempts: 1, LastError: payoutkit.NoWebhookURLError}, payoutkit.EventStatePending},
		{payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: 1}, payoutkit.EventStateDelivered},
		{payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: 2, LastError: payoutkit.NoWebhookURLError}, payoutkit.EventStateDelivered},
		{payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, Attempts: 9, LastError: "connection refused"}, payoutkit.EventStateFailed},
		{payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, Attempts: 1}, payoutkit.EventStateFailed},
		{payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, LastError: payoutkit.NoWebhookURLError}, payoutkit.EventStateNotSent},
		{payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, Attempts: 1, LastError: payoutkit.NoWebhookURLError}, payoutkit.EventStateNotSent},
	} {
		if got := c.d.EventState(); got != c.want {
			t.Errorf("%+v: EventState %q; want %q", c.d, got, c.want)
		}
	}
}
