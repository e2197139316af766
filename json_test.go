package payoutkit

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// payoutByEncoder renders p through encoding/json's reflection, as
// MarshalJSON did before it appended: the reference its bytes are held to.
func payoutByEncoder(p Payout) ([]byte, error) {
	decimalString := func(d decimal.NullDecimal) *string {
		if !d.Valid {
			return nil
		}
		s := d.Decimal.String()
		return &s
	}
	return json.Marshal(payoutJSON{
		PayoutID: p.PayoutID, Status: p.Status, Amount: p.Amount, Currency: Currency,
		Asset: p.Asset, Network: p.Network, Address: p.Address, PayerID: p.PayerID,
		TxID: nullable(p.TxID), FailureReason: nullable(p.FailureReason),
		AssetAmount: decimalString(p.AssetAmount), NetworkFee: decimalString(p.NetworkFee),
		CreatedAt: formatTime(p.CreatedAt), UpdatedAt: formatTime(p.UpdatedAt), Approval: p.approval(),
	})
}

// eventByEncoder renders an event body through encoding/json's reflection.
func eventByEncoder(id string, typ EventType, at time.Time, workspaceID string, data any) ([]byte, error) {
	return json.Marshal(struct {
		ID          string    `json:"id"`
		Type        EventType `json:"type"`
		CreatedAt   string    `json:"created_at"`
		WorkspaceID string    `json:"workspace_id"`
		Data        any       `json:"data"`
	}{id, typ, formatTime(at), workspaceID, data})
}

// FuzzPayoutJSON holds the appended payout object, balance and webhook body to the
// bytes encoding/json writes for them, whatever the strings hold (quotes,
// HTML, control characters, invalid UTF-8, U+2028).
func FuzzPayoutJSON(f *testing.F) {
	f.Add("po-1", "submitted", int64(2500), "USDT", "TRON", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "payer-1", "", "", "", "", int64(1767225600), "none")
	f.Add("po-<&>", "failed", int64(1), "ETH", "ETH", "0xab\"c\\", "p\u2028\x00", "0xtx", "network \xff down", "0.0005", "12.5", int64(-62135596800), "")
	f.Add("\u00e9", "completed", int64(-7), "", "", "", "", "t\tx", "\n", "1E-8", "100", int64(253402300799), "approved")
	f.Fuzz(func(t *testing.T, payoutID, status string, amount int64, asset, network, address, payer, txid, reason, assetAmount, fee string, unix int64, approval string) {
		at := time.Unix(unix%253402300800, 0) // years 0001-9999, as time.RFC3339 writes them
		p := Payout{
			PayoutID: payoutID, Status: PayoutStatus(status), Amount: Amount(amount),
			Asset: asset, Network: network, Address: address, PayerID: payer,
			TxID: txid, FailureReason: reason, CreatedAt: at, UpdatedAt: at.Add(time.Second),
			Approval: Approval(approval),
		}
		if d, err := decimal.NewFromString(assetAmount); err == nil {
			p.AssetAmount = decimal.NullDecimal{Decimal: d, Valid: true}
		}
		if d, err := decimal.NewFromString(fee); err == nil {
			p.NetworkFee = decimal.NullDecimal{Decimal: d, Valid: true}
		}
		want, err := payoutByEncoder(p)
		if err != nil {
			t.Skip(err) // a time the encoder refuses; the contract has none
		}
		got, err := p.MarshalJSON()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("MarshalJSON:\n got %s (%v)\nwant %s", got, err, want)
		}
		if !json.Valid(got) {
			t.Fatalf("not JSON: %s", got)
		}
		wantBody, err := eventByEncoder("evt_"+payoutID, EventType(status), at, address, p)
		if err != nil {
			t.Fatal(err)
		}
		body, err := eventJSON("evt_"+payoutID, EventType(status), at, address, p)
		if err != nil || !bytes.Equal(body, wantBody) {
			t.Fatalf("event body:\n got %s (%v)\nwant %s", body, err, wantBody)
		}
		bal := Balance{Available: Amount(amount), InProgress: Amount(unix)}
		wantBal, err := json.Marshal(struct {
			Currency   string `json:"currency"`
			Available  Amount `json:"available"`
			InProgress Amount `json:"in_progress"`
		}{Currency, bal.Available, bal.InProgress})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := bal.MarshalJSON(); err != nil || !bytes.Equal(got, wantBal) {
			t.Fatalf("balance:\n got %s (%v)\nwant %s", got, err, wantBal)
		}
		order := Order{OrderID: payoutID, Amount: Amount(amount), PayerID: payer, Description: reason, CreatedAt: at, UpdatedAt: at}
		wantBody, err = eventByEncoder(address, EventType(status), at, payer, order)
		if err != nil {
			t.Fatal(err)
		}
		body, err = eventJSON(address, EventType(status), at, payer, order)
		if err != nil || !bytes.Equal(body, wantBody) {
			t.Fatalf("order event body:\n got %s (%v)\nwant %s", body, err, wantBody)
		}
	})
}

// BenchmarkPayoutJSON measures what a create renders twice (its answer and
// its event's body).
func BenchmarkPayoutJSON(b *testing.B) {
	at := time.Date(2026, 11, 27, 4, 30, 0, 0, time.UTC)
	p := Payout{
		PayoutID: "po-2026-000123", Status: PayoutSubmitted, Amount: 2500, Asset: "USDT", Network: "TRON",
		Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "payer-42", CreatedAt: at, UpdatedAt: at,
	}
	b.Run("payout/appended", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("payout/encoder", func(b *testing.B) {
		for b.Loop() {
			if _, err := payoutByEncoder(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("event/appended", func(b *testing.B) {
		for b.Loop() {
			if _, err := eventJSON("evt_0000000000000000000000", EventPayoutSubmitted, at, "ws_1", p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("event/encoder", func(b *testing.B) {
		for b.Loop() {
			if _, err := eventByEncoder("evt_0000000000000000000000", EventPayoutSubmitted, at, "ws_1", p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
