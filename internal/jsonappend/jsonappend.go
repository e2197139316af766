// Package jsonappend appends JSON values byte for byte as encoding/json
// writes them, without its reflection. The payout object and the webhook
// envelope are rendered on every create (the API's answer and the event's
// body), so the engine appends them member by member with these.
package jsonappend

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"
)

// String appends s as encoding/json writes a string. Printable ASCII other
// than '"', '\\', '<', '>' and '&' (ids, addresses, times) is copied as it
// is; a string with anything else goes through encoding/json, so every
// escape is the encoder's.
func String(b []byte, s string) []byte {
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

// Nullable appends s as a JSON string, or null when empty (the contract's
// nulls for unset members).
func Nullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return String(b, s)
}

// Time appends t as the contract writes times: RFC 3339 in UTC, quoted.
func Time(b []byte, t time.Time) []byte {
	return append(t.UTC().AppendFormat(append(b, '"'), time.RFC3339), '"') // digits and "-:+TZ" only
}

// Decimal appends a set decimal in plain notation as a JSON string
// ("0.0005", never "5E-4"), or null.
func Decimal(b []byte, d decimal.NullDecimal) []byte {
	if !d.Valid {
		return append(b, "null"...)
	}
	return String(b, d.Decimal.String())
}

// Event returns the body every webhook carries: the event's id, type, time
// and workspace, and data (already rendered JSON) as its data member.
func Event(id, typ string, at time.Time, workspaceID string, data []byte) []byte {
	b := make([]byte, 0, len(data)+160)
	b = String(append(b, `{"id":`...), id)
	b = String(append(b, `,"type":`...), typ)
	b = Time(append(b, `,"created_at":`...), at)
	b = String(append(b, `,"workspace_id":`...), workspaceID)
	b = append(append(b, `,"data":`...), data...)
	return append(b, '}')
}
