// Package batchcsv reads a mass payout's CSV file (contract, section 12),
// which staff upload in the portal and operators hand to the server's
// `payouts batch` command, into the items of a payoutkit batch.
//
// The file's first line is exactly Header; each line after it is one
// payout. A UTF-8 byte order mark and CRLF line ends are accepted, and
// fields may be quoted as RFC 4180 says. The file is read through a limit
// (MaxBytes), so a huge upload costs no more memory than a valid one.
//
// Parse judges the file's form only: the header, the size, the number of
// rows, each row's column count and cells that a spreadsheet would run as
// formulas. Whether each payout is valid is the engine's to say
// (payoutkit.Engine.CheckPayoutBatch).
package batchcsv

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/payoutkit/payoutkit"
)

// MaxBytes is the largest file Parse reads: 2 MiB, far above what 1,000
// valid payouts take.
const MaxBytes = 2 << 20

// MaxRows is the most payouts one file may hold: a batch's limit.
const MaxRows = payoutkit.MaxBatchItems

// Header is the file's first line, column by column, in this order.
var Header = []string{"payout_id", "amount", "asset", "network", "address", "payer_id"}

// HeaderLine is Header as the file's first line reads.
var HeaderLine = strings.Join(Header, ",")

// bom is the UTF-8 byte order mark that spreadsheets put before a CSV
// file's first line.
const bom = "\uFEFF"

// The errors Parse returns for a file it cannot read as a batch at all;
// each comes wrapped with details, as a sentence staff can act on.
var (
	// ErrTooLarge is a file of more than MaxBytes.
	ErrTooLarge = errors.New("the file is larger than 2 MiB")
	// ErrHeader is a first line other than Header (or no line at all).
	ErrHeader = errors.New("the file's first line must be the header " + HeaderLine)
	// ErrTooManyRows is a file of more than MaxRows payouts.
	ErrTooManyRows = errors.New("the file holds more than " + thousands(MaxRows) + " payouts")
	// ErrNoRows is a file with a header and no payout.
	ErrNoRows = errors.New("the file holds no payout below its header")
)

// Problem is what is wrong with one row of the file as a file: a wrong
// column count, a line that is not CSV, or a cell a spreadsheet would read
// as a formula.
type Problem struct {
	// Row is the row's index in File.Payouts (0 for the first payout).
	Row int
	// Line is the row's line in the file (the header is line 1).
	Line int
	// Column is the header name of the cell at fault, or "" for the row.
	Column string
	// Message says what is wrong, as a sentence.
	Message string
}

// Error renders the problem with its line, as the command line prints it.
func (p Problem) Error() string {
	if p.Column != "" {
		return fmt.Sprintf("line %d, %s: %s", p.Line, p.Column, p.Message)
	}
	return fmt.Sprintf("line %d: %s", p.Line, p.Message)
}

// File is a parsed batch file.
type File struct {
	// Payouts holds one request per row, in file order; a row with a
	// problem holds what could be read of it (nothing, when it was not
	// CSV).
	Payouts []payoutkit.CreatePayoutRequest
	// Lines holds the file line of each row of Payouts.
	Lines []int
	// Problems lists the rows' problems, in row order; several may name
	// one row.
	Problems []Problem
}

// RowProblems returns the problems of row i, in column order.
func (f File) RowProblems(i int) []Problem {
	var out []Problem
	for _, p := range f.Problems {
		if p.Row == i {
			out = append(out, p)
		}
	}
	return out
}

// Parse reads a batch file from r, at most MaxBytes of it. Its error,
// wrapping ErrTooLarge, ErrHeader, ErrTooManyRows or ErrNoRows, refuses
// the file as a whole; otherwise the rows' own problems are in
// File.Problems. Parse never reads more than MaxBytes+1 bytes of r.
func Parse(r io.Reader) (File, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return File{}, fmt.Errorf("reading the file: %w", err)
	}
	if len(data) > MaxBytes {
		return File{}, fmt.Errorf("%w: split it into files of at most %s payouts", ErrTooLarge, thousands(MaxRows))
	}
	data = bytes.TrimPrefix(data, []byte(bom))

	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1 // a wrong column count is a row's problem, said below
	header, err := cr.Read()
	switch {
	case errors.Is(err, io.EOF):
		return File{}, fmt.Errorf("%w: the file is empty", ErrHeader)
	case err != nil:
		return File{}, fmt.Errorf("%w: its first line is not CSV (%s)", ErrHeader, csvProblem(err))
	case !sameHeader(header):
		return File{}, fmt.Errorf("%w, in this order; it reads %s", ErrHeader, quoteLine(header))
	}

	var f File
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if len(f.Payouts) == MaxRows {
			return File{}, fmt.Errorf("%w: split it into files of at most %s payouts", ErrTooManyRows, thousands(MaxRows))
		}
		row, line := len(f.Payouts), lineOf(cr, err)
		f.Lines = append(f.Lines, line)
		problem := func(column, msg string) {
			f.Problems = append(f.Problems, Problem{Row: row, Line: line, Column: column, Message: msg})
		}
		if err != nil {
			// Not CSV (a stray quote): nothing of the row is trusted.
			f.Payouts = append(f.Payouts, payoutkit.CreatePayoutRequest{})
			problem("", "This line is not valid CSV: "+csvProblem(err)+".")
			continue
		}
		f.Payouts = append(f.Payouts, requestOf(rec))
		if len(rec) != len(Header) {
			problem("", fmt.Sprintf("This row has %d columns; it needs %d (%s).", len(rec), len(Header), HeaderLine))
		}
		for i, cell := range rec[:min(len(rec), len(Header))] {
			if Formula(cell) {
				problem(Header[i], "Starts like a spreadsheet formula (=, +, -, @, a tab or CR), which a batch refuses.")
			}
		}
	}
	if len(f.Payouts) == 0 {
		return File{}, ErrNoRows
	}
	return f, nil
}

// requestOf is a record's cells as a payout request, by the header's
// order; missing cells are empty.
func requestOf(rec []string) payoutkit.CreatePayoutRequest {
	cell := func(i int) string {
		if i < len(rec) {
			return rec[i]
		}
		return ""
	}
	return payoutkit.CreatePayoutRequest{
		PayoutID: cell(0), Amount: cell(1), Asset: cell(2), Network: cell(3), Address: cell(4), PayerID: cell(5),
	}
}

// lineOf is the line where the record just read (or refused with err)
// starts.
func lineOf(cr *csv.Reader, err error) int {
	if pe, ok := errors.AsType[*csv.ParseError](err); ok {
		return pe.StartLine
	}
	line, _ := cr.FieldPos(0)
	return line
}

// csvProblem is a CSV parse error without its position, which the
// problem's line already gives.
func csvProblem(err error) string {
	if pe, ok := errors.AsType[*csv.ParseError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

func sameHeader(h []string) bool {
	if len(h) != len(Header) {
		return false
	}
	for i, name := range Header {
		if h[i] != name {
			return false
		}
	}
	return true
}

// quoteLine renders a header as read, cut short, for a message.
func quoteLine(rec []string) string {
	s := strings.Join(rec, ",")
	if utf8.RuneCountInString(s) > 120 {
		s = string([]rune(s)[:120]) + "…"
	}
	return strconv.Quote(s)
}

// Formula reports whether a spreadsheet could run cell as a formula: it
// starts with =, +, -, @, a tab or a carriage return, or its first
// character after blanks is =, +, - or @ (an import may trim the blanks).
// The cells of a batch end up in staff's spreadsheets through the
// exports, so a batch refuses them rather than store them. No valid amount
// starts with '-', since amounts are above 0.
func Formula(cell string) bool {
	if cell == "" {
		return false
	}
	switch cell[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	if t := strings.TrimLeftFunc(cell, blank); t != "" {
		switch t[0] {
		case '=', '+', '-', '@':
			return true
		}
	}
	return false
}

// blank reports whether a spreadsheet may trim r from the start of a cell,
// as the portal's exports judge it.
func blank(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// Encode writes payouts as a batch file that Parse reads back as the same
// requests: the header, then one row each, LF line ends.
func Encode(w io.Writer, payouts []payoutkit.CreatePayoutRequest) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Header); err != nil {
		return err
	}
	for _, p := range payouts {
		if err := cw.Write([]string{p.PayoutID, p.Amount, p.Asset, p.Network, p.Address, p.PayerID}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// thousands renders n with a comma between thousands, as messages print
// counts ("1,000").
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
