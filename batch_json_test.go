package payoutkit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestPayoutBatchJSONRoundTrip reads back what MarshalJSON writes: the
// members the batch object shows, with a refused item's null payout.
func TestPayoutBatchJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := Payout{PayoutID: "po-1", Status: PayoutSubmitted, Amount: 2500, Asset: "USDT", Network: "TRON",
		Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-42", CreatedAt: at, UpdatedAt: at, Approval: ApprovalNone}
	for _, b := range []PayoutBatch{
		{BatchID: "b-1", CreatedAt: at, AllOrNothing: true, Accepted: 1, Refused: 1, AcceptedAmount: 2500,
			Results: []BatchResult{
				{PayoutID: "po-1", Message: "OK", Payout: &p},
				{PayoutID: "po-2", Code: CodeInvalidInput, Message: "Insufficient available balance"},
			}},
		{BatchID: "b-listed", CreatedAt: at}, // a listing's batch: no results
	} {
		data, err := b.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var got PayoutBatch
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(got, b) {
			t.Fatalf("read back %+v\nwant %+v", got, b)
		}
		again, _ := got.MarshalJSON()
		if !bytes.Equal(again, data) {
			t.Fatalf("rendered again %s\nwant %s", again, data)
		}
	}
	var b PayoutBatch
	if err := json.Unmarshal([]byte(`{"batch_id":"b","created_at":"yesterday"}`), &b); err == nil {
		t.Fatal("a bad created_at was read")
	}
}
