package payoutkit

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorKinds(t *testing.T) {
	overdraft := errInsufficientBalance()
	cases := []struct {
		err     error
		matches []error
		code    Code
	}{
		{overdraft, []error{ErrInsufficientBalance, ErrInvalidInput}, CodeInvalidInput},
		{invalidField("amount", "must be greater than 0"), []error{ErrInvalidInput}, CodeInvalidInput},
		{errNotFound("payout"), []error{ErrNotFound}, CodeNotFound},
		{errConflict("taken"), []error{ErrConflict}, CodeConflict},
		{newError(ErrUnauthorized, "invalid API key"), []error{ErrUnauthorized}, CodeUnauthorized},
		{fmt.Errorf("wrapped: %w", errNotFound("order")), []error{ErrNotFound}, CodeNotFound},
		{errForbidden("this API key lacks the payouts:write scope"), []error{ErrForbidden}, CodeForbidden},
		{NewError(CodeForbidden, "this API key lacks the payouts:write scope", nil), []error{ErrForbidden}, CodeForbidden},
	}
	all := []error{ErrInvalidInput, ErrInsufficientBalance, ErrUnauthorized, ErrForbidden, ErrNotFound, ErrConflict}
	for _, c := range cases {
		for _, s := range all {
			want := false
			for _, m := range c.matches {
				want = want || m == s
			}
			if got := errors.Is(c.err, s); got != want {
				t.Errorf("errors.Is(%q, %q) = %v; want %v", c.err, s, got, want)
			}
		}
		if got := CodeOf(c.err); got != c.code {
			t.Errorf("CodeOf(%q) = %d; want %d", c.err, got, c.code)
		}
	}
	if CodeOf(errors.New("boom")) != 0 {
		t.Error("a plain error has a code")
	}
	if overdraft.Error() != "Insufficient available balance" {
		t.Errorf("overdraft message %q", overdraft.Error())
	}
}

func TestValidationNamesFields(t *testing.T) {
	var v validation
	v.add("amount", "must be greater than 0")
	v.add("address", "is required")
	err := v.err()
	if err.Error() != "amount must be greater than 0; address is required" {
		t.Fatalf("message %q", err)
	}
	var e *Error
	if !errors.As(err, &e) || len(e.Fields) != 2 || e.Fields[1].Field != "address" {
		t.Fatalf("fields %+v", e)
	}
	var none validation
	if none.err() != nil {
		t.Fatal("empty validation is an error")
	}
}
