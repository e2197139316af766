package httpserver

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// envelopes are answers of every shape marshalEnvelope joins by hand, and
// ones it leaves to the encoder.
func envelopes() map[string]envelope {
	at := time.Date(2026, 11, 27, 3, 4, 5, 600_000_000, time.UTC)
	p := payoutkit.Payout{PayoutID: "po-<1>&\u2028", WorkspaceID: "ws", Status: payoutkit.PayoutSubmitted, Amount: 12345,
		Asset: "USDT", Network: "TRON", Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "payer-\"1\"", CreatedAt: at, UpdatedAt: at}
	items := make([]payoutkit.Payout, 100)
	for i := range items {
		items[i] = p
	}
	var nilList *payoutkit.List[payoutkit.Payout]
	return map[string]envelope{
		"balance":    {Message: "OK", Data: payoutkit.Balance{Available: 1234567, InProgress: -5}},
		"payout":     {Message: "OK", Data: p},
		"list":       {Message: "OK", Data: payoutkit.List[payoutkit.Payout]{Items: items, NextCursor: "c<1>"}},
		"empty list": {Message: "OK", Data: payoutkit.List[payoutkit.Payout]{}},
		"nil":        {Message: "OK", Data: nilList},
		"map":        {Message: "OK", Data: map[string]any{"removed": 1}},
		"error": {Code: payoutkit.CodeInvalidInput, Message: "bad <input>",
			Errors: []payoutkit.FieldError{{Field: "amount", Message: "required"}}},
	}
}

// The envelope joined by hand is, byte for byte, what the encoder writes:
// its escaping of <, > and &, and of U+2028, included.
func TestMarshalEnvelopeAsEncoder(t *testing.T) {
	for name, env := range envelopes() {
		want, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

func BenchmarkMarshalEnvelope(b *testing.B) {
	for _, name := range []string{"balance", "payout", "list"} {
		env := envelopes()[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := marshalEnvelope(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
