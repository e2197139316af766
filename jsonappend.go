package payoutkit

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"
)

// The payout object and the webhook envelope are rendered on every create
// (the API's answer and the event's body), so they are appended member by
// member instead of going through encoding/json's reflection. The bytes are
// the encoder's own (FuzzPayoutJSON holds them to it).

// appendJSONString appends s as encoding/json writes a string. Printable
// ASCII other than '"', '\\', '<', '>' and '&' (ids, addresses, times) is
// copied as it is; a string with anything else goes through encoding/json,
// so every escape is the encoder's.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always encodes
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONNullable appends s as a JSON string, or null when empty (the
// contract's nulls for unset members).
func appendJSONNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendJSONString(b, s)
}

// appendJSONTime appends t as the contract writes times: RFC 3339 in UTC,
// quoted.
func appendJSONTime(b []byte, t time.Time) []byte {
	return append(t.UTC().AppendFormat(append(b, '"'), time.RFC3339), '"') // digits and "-:+TZ" only
}

// appendJSONDecimal appends a set decimal in plain notation as a JSON string
// ("0.0005", never "5E-4"), or null.
func appendJSONDecimal(b []byte, d decimal.NullDecimal) []byte {
	if !d.Valid {
		return append(b, "null"...)
	}
	return appendJSONString(b, d.Decimal.String())
}

// appendJSON appends the contract's payout object, member for member what
// json.Marshal of its payoutJSON writes.
func (p Payout) appendJSON(b []byte) []byte {
	b = appendJSONString(append(b, `{"payout_id":`...), p.PayoutID)
	b = appendJSONString(append(b, `,"status":`...), string(p.Status))
	b = append(p.Amount.appendText(append(b, `,"amount":"`...)), '"')
	b = appendJSONString(append(b, `,"currency":`...), Currency)
	b = appendJSONString(append(b, `,"asset":`...), p.Asset)
	b = appendJSONString(append(b, `,"network":`...), p.Network)
	b = appendJSONString(append(b, `,"address":`...), p.Address)
	b = appendJSONString(append(b, `,"payer_id":`...), p.PayerID)
	b = appendJSONNullable(append(b, `,"txid":`...), p.TxID)
	b = appendJSONDecimal(append(b, `,"asset_amount":`...), p.AssetAmount)
	b = appendJSONDecimal(append(b, `,"network_fee":`...), p.NetworkFee)
	b = appendJSONNullable(append(b, `,"failure_reason":`...), p.FailureReason)
	b = appendJSONTime(append(b, `,"created_at":`...), p.CreatedAt)
	b = appendJSONTime(append(b, `,"updated_at":`...), p.UpdatedAt)
	b = appendJSONString(append(b, `,"approval":`...), string(p.approval()))
	return append(b, '}')
}

// eventJSON renders the body every webhook carries: the event's id, type,
// time and workspace, and data (a Payout or an Order) as its data member.
func eventJSON(id string, typ EventType, at time.Time, workspaceID string, data any) ([]byte, error) {
	var rendered []byte
	if p, ok := data.(Payout); ok {
		rendered = p.appendJSON(make([]byte, 0, 512))
	} else {
		var err error
		if rendered, err = json.Marshal(data); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, len(rendered)+160)
	b = appendJSONString(append(b, `{"id":`...), id)
	b = appendJSONString(append(b, `,"type":`...), string(typ))
	b = appendJSONTime(append(b, `,"created_at":`...), at)
	b = appendJSONString(append(b, `,"workspace_id":`...), workspaceID)
	b = append(append(b, `,"data":`...), rendered...)
	return append(b, '}'), nil
}
