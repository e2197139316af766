package batchcsv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
)

const tron = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

func row(id, amount, payer string) string {
	return id + "," + amount + ",USDT,TRON," + tron + "," + payer + "\n"
}

func mustParse(t *testing.T, src string) File {
	t.Helper()
	f, err := Parse(strings.NewReader(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestParseReadsRows(t *testing.T) {
	f := mustParse(t, HeaderLine+"\n"+row("po_1", "10.00", "payer_a")+row("po_2", "2.5", "payer_b"))
	want := []payoutkit.CreatePayoutRequest{
		{PayoutID: "po_1", Amount: "10.00", Asset: "USDT", Network: "TRON", Address: tron, PayerID: "payer_a"},
		{PayoutID: "po_2", Amount: "2.5", Asset: "USDT", Network: "TRON", Address: tron, PayerID: "payer_b"},
	}
	if fmt.Sprint(f.Payouts) != fmt.Sprint(want) {
		t.Fatalf("payouts %v; want %v", f.Payouts, want)
	}
	if len(f.Problems) != 0 {
		t.Fatalf("problems %v; want none", f.Problems)
	}
	if fmt.Sprint(f.Lines) != "[2 3]" {
		t.Fatalf("lines %v; want [2 3]", f.Lines)
	}
}

// A spreadsheet's export: a byte order mark, CRLF line ends, a blank last
// line.
func TestParseAcceptsBOMAndCRLF(t *testing.T) {
	src := "\uFEFF" + HeaderLine + "\r\n" + strings.ReplaceAll(row("po_1", "10.00", "payer_a")+row("po_2", "1", "b"), "\n", "\r\n") + "\r\n"
	f := mustParse(t, src)
	if len(f.Payouts) != 2 || len(f.Problems) != 0 {
		t.Fatalf("got %d payouts, problems %v; want 2 and none", len(f.Payouts), f.Problems)
	}
	if got := f.Payouts[1].PayerID; got != "b" {
		t.Fatalf("the last payer_id is %q; want %q (no CR kept)", got, "b")
	}
}

func TestParseQuotedFields(t *testing.T) {
	f := mustParse(t, HeaderLine+"\n"+`"po_1","10.00",USDT,TRON,`+tron+`,"Smith, John ""JJ"""`+"\n")
	if len(f.Problems) != 0 {
		t.Fatalf("problems %v", f.Problems)
	}
	if got, want := f.Payouts[0].PayerID, `Smith, John "JJ"`; got != want {
		t.Fatalf("payer_id %q; want %q", got, want)
	}
}

func TestParseRefusesBadHeader(t *testing.T) {
	for name, src := range map[string]string{
		"missing":   row("po_1", "10.00", "payer_a"),
		"reordered": "amount,payout_id,asset,network,address,payer_id\n" + row("po_1", "10.00", "payer_a"),
		"short":     "payout_id,amount,asset,network,address\n",
		"extra":     HeaderLine + ",note\n",
		"case":      strings.ToUpper(HeaderLine) + "\n",
		"empty":     "",
		"bom only":  "\uFEFF",
		"not csv":   `payout_id,"amount` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(src))
			if !errors.Is(err, ErrHeader) {
				t.Fatalf("Parse: %v; want ErrHeader", err)
			}
			if !strings.Contains(err.Error(), HeaderLine) {
				t.Fatalf("the message %q does not name the header", err)
			}
		})
	}
}

func TestParseRefusesNoRows(t *testing.T) {
	for _, src := range []string{HeaderLine, HeaderLine + "\r\n", HeaderLine + "\n\n\n"} {
		if _, err := Parse(strings.NewReader(src)); !errors.Is(err, ErrNoRows) {
			t.Fatalf("Parse(%q): %v; want ErrNoRows", src, err)
		}
	}
}

func rows(n int) string {
	var b strings.Builder
	b.WriteString(HeaderLine + "\n")
	for i := range n {
		b.WriteString(row(fmt.Sprintf("po_%d", i), "1.00", "p"))
	}
	return b.String()
}

func TestParseRowLimit(t *testing.T) {
	if f := mustParse(t, rows(MaxRows)); len(f.Payouts) != MaxRows {
		t.Fatalf("%d payouts; want %d", len(f.Payouts), MaxRows)
	}
	_, err := Parse(strings.NewReader(rows(MaxRows + 1)))
	if !errors.Is(err, ErrTooManyRows) || !strings.Contains(err.Error(), "1,000") {
		t.Fatalf("Parse of 1,001 rows: %v; want ErrTooManyRows naming 1,000", err)
	}
}

// countingReader counts what was read of an endless file.
type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "abcdefghijklmnopqrstuvwxyz,\n"[int(c.n+int64(i))%28]
	}
	c.n += int64(len(p))
	return len(p), nil
}

func TestParseSizeLimit(t *testing.T) {
	big := HeaderLine + "\n" + strings.Repeat(row("po_x", "1.00", strings.Repeat("p", 100)), 5<<20/150)
	if len(big) < 5<<20-1000 {
		t.Fatalf("the test file has %d bytes; want about 5 MiB", len(big))
	}
	_, err := Parse(strings.NewReader(big))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "2 MiB") {
		t.Fatalf("Parse of 5 MiB: %v; want ErrTooLarge", err)
	}
	// An endless upload is read no further than the limit.
	var c countingReader
	if _, err := Parse(&c); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Parse of an endless file: %v", err)
	}
	if c.n > MaxBytes+64<<10 {
		t.Fatalf("Parse read %d bytes of an endless file; want about %d", c.n, MaxBytes)
	}
	// Exactly the limit is read.
	exact := HeaderLine + "\n" + row("po_1", "1.00", "p")
	exact += strings.Repeat("\n", MaxBytes-len(exact))
	if f := mustParse(t, exact); len(f.Payouts) != 1 {
		t.Fatalf("%d payouts; want 1", len(f.Payouts))
	}
}

func TestParseColumnCount(t *testing.T) {
	f := mustParse(t, HeaderLine+"\n"+row("po_1", "1.00", "a")+"po_2,1.00,USDT,TRON\n"+row("po_3", "1.00", "c")+"po_4,1.00,USDT,TRON,"+tron+",d,extra\n")
	if len(f.Payouts) != 4 {
		t.Fatalf("%d payouts; want 4", len(f.Payouts))
	}
	if len(f.Problems) != 2 {
		t.Fatalf("problems %v; want 2", f.Problems)
	}
	for i, want := range []struct{ row, line int }{{1, 3}, {3, 5}} {
		p := f.Problems[i]
		if p.Row != want.row || p.Line != want.line || !strings.Contains(p.Message, "columns") {
			t.Fatalf("problem %d: %+v; want row %d, line %d, about columns", i, p, want.row, want.line)
		}
	}
	if got := f.Payouts[1]; got.PayoutID != "po_2" || got.Address != "" {
		t.Fatalf("a short row reads %+v", got)
	}
	if got := f.RowProblems(3); len(got) != 1 {
		t.Fatalf("RowProblems(3): %v", got)
	}
}

func TestParseRefusesFormulaCells(t *testing.T) {
	for _, c := range []struct {
		line, column string
	}{
		{"po_1,1.00,USDT,TRON," + tron + ",\"=HYPERLINK(\"\"http://evil\"\")\"", "payer_id"},
		{"po_1,1.00,USDT,TRON," + tron + ",+1", "payer_id"},
		{"po_1,1.00,USDT,TRON," + tron + ",-1", "payer_id"},
		{"po_1,1.00,USDT,TRON," + tron + ",@SUM(A1)", "payer_id"},
		{"po_1,1.00,USDT,TRON," + tron + ",\"\tx\"", "payer_id"},
		{"po_1,1.00,USDT,TRON," + tron + ",\"\rx\"", "payer_id"},
		{"po_1,1.00,USDT,TRON," + tron + ",\" =1+2\"", "payer_id"},
		{"=po_1,1.00,USDT,TRON," + tron + ",p", "payout_id"},
		{"-po_1,1.00,USDT,TRON," + tron + ",p", "payout_id"},
		{"po_1,-1.00,USDT,TRON," + tron + ",p", "amount"},
		{"po_1,1.00,=USDT,TRON," + tron + ",p", "asset"},
		{"po_1,1.00,USDT,@TRON," + tron + ",p", "network"},
		{"po_1,1.00,USDT,TRON,+" + tron + ",p", "address"},
	} {
		f := mustParse(t, HeaderLine+"\n"+row("po_0", "1.00", "fine")+c.line+"\n")
		if len(f.Problems) != 1 {
			t.Fatalf("%q: problems %v; want 1", c.line, f.Problems)
		}
		if p := f.Problems[0]; p.Row != 1 || p.Line != 3 || p.Column != c.column || !strings.Contains(p.Message, "formula") {
			t.Fatalf("%q: problem %+v; want row 1, line 3, column %s", c.line, p, c.column)
		}
	}
	// Inside a cell, the characters are fine.
	f := mustParse(t, HeaderLine+"\n"+row("po-1", "1.00", "a=b+c@d-e"))
	if len(f.Problems) != 0 {
		t.Fatalf("problems %v; want none", f.Problems)
	}
}

func TestParseNotCSVRow(t *testing.T) {
	f := mustParse(t, HeaderLine+"\n"+`po_1,1.00,USDT,TRON,a"b,p`+"\n"+row("po_2", "1.00", "p"))
	if len(f.Payouts) != 2 || len(f.Problems) != 1 || f.Problems[0].Row != 0 || !strings.Contains(f.Problems[0].Message, "not valid CSV") {
		t.Fatalf("payouts %v, problems %v", f.Payouts, f.Problems)
	}
	if f.Payouts[1].PayoutID != "po_2" {
		t.Fatalf("the row after a bad one reads %+v", f.Payouts[1])
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Parse(io.MultiReader(strings.NewReader(HeaderLine+"\n"), iotestErr{boom}))
	if !errors.Is(err, boom) {
		t.Fatalf("Parse: %v; want the reader's error", err)
	}
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

func TestEncodeRoundTrip(t *testing.T) {
	in := []payoutkit.CreatePayoutRequest{
		{PayoutID: "po_1", Amount: "10.00", Asset: "USDT", Network: "TRON", Address: tron, PayerID: `Smith, John "JJ"`},
		{PayoutID: "po_2", Amount: "0.5", Asset: "ETH", Network: "ETH", Address: "0x52908400098527886E0F7030069857D2E4169EE7", PayerID: " spaced "},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, in); err != nil {
		t.Fatal(err)
	}
	f := mustParse(t, buf.String())
	if fmt.Sprint(f.Payouts) != fmt.Sprint(in) || len(f.Problems) != 0 {
		t.Fatalf("round trip: %v, %v; want %v", f.Payouts, f.Problems, in)
	}
}

func TestProblemError(t *testing.T) {
	p := Problem{Row: 0, Line: 2, Column: "payer_id", Message: "Bad."}
	if got := p.Error(); got != "line 2, payer_id: Bad." {
		t.Fatalf("Error() = %q", got)
	}
	p.Column = ""
	if got := p.Error(); got != "line 2: Bad." {
		t.Fatalf("Error() = %q", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q; want %q", n, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(HeaderLine + "\n" + row("po_1", "10.00", "payer")))
	f.Add([]byte("\uFEFF" + HeaderLine + "\r\n" + `"po_1","1",USDT,TRON,x,"a,""b"""` + "\r\n"))
	f.Add([]byte(HeaderLine + "\npo_1,1\n=x,+,-,@,\t,\r\n\"unterminated\n"))
	f.Add([]byte("amount,payout_id\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(bytes.NewReader(data))
		if err != nil {
			if len(file.Payouts) != 0 {
				t.Fatalf("an error with %d payouts", len(file.Payouts))
			}
			return
		}
		if n := len(file.Payouts); n == 0 || n > MaxRows || len(file.Lines) != n {
			t.Fatalf("%d payouts, %d lines", n, len(file.Lines))
		}
		last := -1
		for _, p := range file.Problems {
			if p.Row < last || p.Row >= len(file.Payouts) || p.Line < 2 || p.Message == "" {
				t.Fatalf("problem %+v out of order or range", p)
			}
			last = p.Row
		}
		// A file without problems survives Encode and Parse unchanged
		// (but for CRs, which CSV turns into LFs inside quoted cells).
		if len(file.Problems) == 0 && !bytes.ContainsRune(data, '\r') {
			var buf bytes.Buffer
			if err := Encode(&buf, file.Payouts); err != nil {
				t.Fatal(err)
			}
			again, err := Parse(&buf)
			if err != nil || fmt.Sprintf("%q", again.Payouts) != fmt.Sprintf("%q", file.Payouts) {
				t.Fatalf("round trip: %v, %q; want %q", err, again.Payouts, file.Payouts)
			}
		}
	})
}
