// Package jsonstrict decodes the configuration files of the server and the
// processors: exactly one JSON value, and no member the target does not
// know, so that a typo in a setting is an error rather than a default.
package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrTrailing reports a second JSON value after the first.
var ErrTrailing = errors.New("more than one JSON value")

// Decode decodes data into v, refusing unknown members (the decoder's
// error) and anything after the first value (ErrTrailing).
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return ErrTrailing
	}
	return nil
}
