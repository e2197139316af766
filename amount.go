package payoutkit

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// Amount is an exact USD amount in cents, so that the database enforces the
// no-overdraft rule with integer comparisons.
type Amount int64

// MaxAmount is the largest amount of one payout or order.
const MaxAmount Amount = 1_000_000_000_00

var (
	errAmountFormat   = errors.New(`must be a decimal string such as "25.00" with at most two decimals`)
	errAmountZero     = errors.New("must be greater than 0")
	errAmountTooLarge = errors.New("must be at most 1000000000.00")
)

// ParseAmount parses a USD amount as the contract writes it ("25", "25.5",
// "25.50"): no sign, exponent, blank or third decimal, above zero and at
// most MaxAmount.
func ParseAmount(s string) (Amount, error) {
	intPart, fracPart, hasDot := strings.Cut(s, ".")
	if intPart == "" || !allDigits(intPart) || (hasDot && (len(fracPart) < 1 || len(fracPart) > 2 || !allDigits(fracPart))) {
		return 0, errAmountFormat
	}
	for len(intPart) > 1 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	if len(intPart) > 10 { // more than MaxAmount's ten integer digits
		return 0, errAmountTooLarge
	}
	units, _ := strconv.ParseInt(intPart, 10, 64) // at most ten digits: cannot fail
	cents := units * 100
	if hasDot {
		f, _ := strconv.ParseInt(fracPart, 10, 64)
		if len(fracPart) == 1 {
			f *= 10
		}
		cents += f
	}
	switch a := Amount(cents); {
	case a <= 0:
		return 0, errAmountZero
	case a > MaxAmount:
		return 0, errAmountTooLarge
	default:
		return a, nil
	}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String renders the amount with exactly two decimals: "25.00", "-3.10".
func (a Amount) String() string {
	return string(a.appendText(nil))
}

func (a Amount) appendText(b []byte) []byte {
	u := uint64(a)
	if a < 0 {
		b = append(b, '-')
		u = uint64(-a)
	}
	b = strconv.AppendUint(b, u/100, 10)
	frac := u % 100
	return append(b, '.', byte('0'+frac/10), byte('0'+frac%10))
}

// MarshalText renders String, a string in JSON.
func (a Amount) MarshalText() ([]byte, error) {
	return a.appendText(make([]byte, 0, 16)), nil
}

// UnmarshalJSON accepts a JSON string in ParseAmount's format or zero,
// either with a leading minus, and never a JSON number, so that no amount
// passes through a float.
func (a *Amount) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return errAmountFormat
	}
	neg := strings.HasPrefix(s, "-")
	v, err := ParseAmount(strings.TrimPrefix(s, "-"))
	if errors.Is(err, errAmountZero) {
		v, err = 0, nil
	}
	if err != nil {
		return err
	}
	if neg {
		v = -v
	}
	*a = v
	return nil
}
