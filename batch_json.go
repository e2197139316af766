package payoutkit

import "encoding/json"

// batchJSON is the contract's batch object as PayoutBatch.UnmarshalJSON
// reads it (MarshalJSON writes the same members in the same order).
type batchJSON struct {
	BatchID        string            `json:"batch_id"`
	CreatedAt      string            `json:"created_at"`
	AllOrNothing   bool              `json:"all_or_nothing"`
	Accepted       int               `json:"accepted"`
	Refused        int               `json:"refused"`
	AcceptedAmount Amount            `json:"accepted_amount"`
	Results        []batchResultJSON `json:"results"`
}

// batchResultJSON is one member of a batch object's results.
type batchResultJSON struct {
	PayoutID string  `json:"payout_id"`
	Code     Code    `json:"code"`
	Message  string  `json:"message"`
	Payout   *Payout `json:"payout"` // null for a refused item
}

// UnmarshalJSON reads the contract's batch object (for clients). What the
// object does not show stays unset: WorkspaceID, and each result's Created
// and Requested.
func (b *PayoutBatch) UnmarshalJSON(data []byte) error {
	var j batchJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	created, err := parseTime(j.CreatedAt)
	if err != nil {
		return err
	}
	var results []BatchResult
	if j.Results != nil {
		results = make([]BatchResult, len(j.Results))
		for i, r := range j.Results {
			results[i] = BatchResult{PayoutID: r.PayoutID, Code: r.Code, Message: r.Message, Payout: r.Payout}
		}
	}
	*b = PayoutBatch{
		BatchID: j.BatchID, CreatedAt: created, AllOrNothing: j.AllOrNothing,
		Accepted: j.Accepted, Refused: j.Refused, AcceptedAmount: j.AcceptedAmount,
		Results: results,
	}
	return nil
}
