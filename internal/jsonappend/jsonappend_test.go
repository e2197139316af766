package jsonappend_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit/internal/jsonappend"
)

// FuzzAppend holds every appender to the bytes encoding/json writes for the
// same value, whatever the strings hold (quotes, HTML, control characters,
// invalid UTF-8, U+2028).
func FuzzAppend(f *testing.F) {
	f.Add("po-1", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "0.0005", int64(1767225600))
	f.Add("po-<&>", "0xab\"c\\", "1E-8", int64(-62135596800))
	f.Add("\u00e9", "p\u2028\x00", "network \xff down", int64(253402300799))
	f.Add("", "t\tx", "100", int64(0))
	f.Fuzz(func(t *testing.T, s, other, dec string, unix int64) {
		at := time.Unix(unix%253402300800, 0) // years 0001-9999, as time.RFC3339 writes them
		check := func(what string, got []byte, v any) {
			t.Helper()
			want, err := json.Marshal(v)
			if err != nil {
				t.Skip(err) // a value the encoder refuses; the contract has none
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
			}
		}
		prefix := []byte("x")
		check("String", jsonappend.String(nil, s), s)
		if got := jsonappend.String(prefix, s); !bytes.HasPrefix(got, prefix) {
			t.Fatalf("String dropped what it appends to: %s", got)
		}
		var nullable *string
		if s != "" {
			nullable = &s
		}
		check("Nullable", jsonappend.Nullable(nil, s), nullable)
		check("Time", jsonappend.Time(nil, at), at.UTC().Format(time.RFC3339))
		var d decimal.NullDecimal
		var plain *string
		if v, err := decimal.NewFromString(dec); err == nil {
			d = decimal.NullDecimal{Decimal: v, Valid: true}
			text := v.String()
			plain = &text
		}
		check("Decimal", jsonappend.Decimal(nil, d), plain)
		data, err := json.Marshal(map[string]string{"payout_id": other})
		if err != nil {
			t.Fatal(err)
		}
		check("Event", jsonappend.Event(s, other, at, dec, data), struct {
			ID          string          `json:"id"`
			Type        string          `json:"type"`
			CreatedAt   string          `json:"created_at"`
			WorkspaceID string          `json:"workspace_id"`
			Data        json.RawMessage `json:"data"`
		}{s, other, at.UTC().Format(time.RFC3339), dec, data})
	})
}
