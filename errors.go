package payoutkit

import (
	"errors"
	"strings"
)

// Code is the wire contract's error code; its HTTP status is Code / 100.
type Code int

// The contract's error codes; only the HTTP layer produces 40500 and up.
const (
	CodeInvalidInput     Code = 40000
	CodeUnauthorized     Code = 40100
	CodeForbidden        Code = 40300
	CodeNotFound         Code = 40400
	CodeConflict         Code = 40900
	CodeMethodNotAllowed Code = 40500
	CodeTooLarge         Code = 41300
	CodeRateLimited      Code = 42900
	CodeInternal         Code = 50000
	CodeUnavailable      Code = 50300
)

// Every error the engine returns for a caller's mistake is an *Error that
// matches exactly one of these with errors.Is, except that
// ErrInsufficientBalance and ErrPayoutLimit also match ErrInvalidInput.
// ErrForbidden refuses a key used outside its scopes or allowlist, and a
// payout to an address the address allowlist does not allow.
var (
	ErrInvalidInput        = &Error{Code: CodeInvalidInput, Message: "invalid input"}
	ErrInsufficientBalance = &Error{Code: CodeInvalidInput, Message: "Insufficient available balance"}
	ErrPayoutLimit         = &Error{Code: CodeInvalidInput, Message: "amount exceeds a payout limit"}
	ErrUnauthorized        = &Error{Code: CodeUnauthorized, Message: "unauthorized"}
	ErrForbidden           = &Error{Code: CodeForbidden, Message: "forbidden"}
	ErrNotFound            = &Error{Code: CodeNotFound, Message: "not found"}
	ErrConflict            = &Error{Code: CodeConflict, Message: "conflict"}
	// ErrUnavailable is a store's answer when its database cannot be
	// reached, or a write's commit got no answer: the write may or may not
	// have happened, and the same request again (the same payout_id,
	// order_id or batch_id) tells.
	ErrUnavailable = &Error{Code: CodeUnavailable, Message: "the database is unavailable; retry with the same payout_id"}
)

// FieldError names one invalid request field and what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the engine's error: a contract code, a message safe to show the
// caller, and for a validation failure the offending fields.
type Error struct {
	Code    Code
	Message string
	Fields  []FieldError

	kind *Error // the sentinel this error is an instance of
}

// Error returns the caller-facing message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is the sentinel of e's kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	k := e.kind
	if k == nil {
		k = e
	}
	return t == k || (t == ErrInvalidInput && k.Code == CodeInvalidInput)
}

// CodeOf returns the contract code of err, or 0 when err carries none.
func CodeOf(err error) Code {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return 0
}

// NewError makes an error as received over the wire, or as a layer in front
// of the engine refuses; an empty message with fields names each field. It
// matches the sentinel of its code (ErrInsufficientBalance for a 40000 with
// its exact message), or none.
func NewError(code Code, message string, fields []FieldError) *Error {
	var kind *Error
	switch code {
	case CodeInvalidInput:
		kind = ErrInvalidInput
		if message == ErrInsufficientBalance.Message {
			kind = ErrInsufficientBalance
		}
	case CodeUnauthorized:
		kind = ErrUnauthorized
	case CodeForbidden:
		kind = ErrForbidden
	case CodeNotFound:
		kind = ErrNotFound
	case CodeConflict:
		kind = ErrConflict
	case CodeUnavailable:
		kind = ErrUnavailable
	}
	if message == "" && len(fields) > 0 {
		message = fieldsMessage(fields)
	}
	e := &Error{Code: code, Message: message, Fields: fields, kind: kind}
	if kind == nil {
		e.kind = e
	}
	return e
}

func newError(kind *Error, message string) *Error {
	return &Error{Code: kind.Code, Message: message, kind: kind}
}

// errNotFound reports an unknown resource, naming it ("payout not found").
func errNotFound(what string) *Error { return newError(ErrNotFound, what+" not found") }

// errConflict reports a request that the current state forbids.
func errConflict(message string) *Error { return newError(ErrConflict, message) }

// errForbidden is an ErrForbidden with its own message, naming the control
// that refused.
func errForbidden(message string) *Error { return newError(ErrForbidden, message) }

// errInsufficientBalance is the overdraft error; its message is fixed by the contract.
func errInsufficientBalance() *Error {
	return newError(ErrInsufficientBalance, ErrInsufficientBalance.Message)
}

// validation collects field errors so that one response names every bad field.
type validation struct{ fields []FieldError }

func (v *validation) add(field, message string) {
	v.fields = append(v.fields, FieldError{Field: field, Message: message})
}

// err returns nil when no field was invalid, otherwise a 40000 whose message
// names each field ("amount must be greater than 0; address is required").
func (v *validation) err() error {
	if len(v.fields) == 0 {
		return nil
	}
	e := newError(ErrInvalidInput, fieldsMessage(v.fields))
	e.Fields = v.fields
	return e
}

// fieldsMessage names each field and what is wrong with it.
func fieldsMessage(fields []FieldError) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Field + " " + f.Message
	}
	return strings.Join(parts, "; ")
}

// invalidField is a 40000 for a single field.
func invalidField(field, message string) error {
	var v validation
	v.add(field, message)
	return v.err()
}
