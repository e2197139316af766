package httpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/payoutkit/payoutkit"
)

// object is a request body: a JSON object's members, undecoded.
type object map[string]json.RawMessage

// readObject reads the request body (at most MaxBodyBytes) as one JSON
// object. It is 40000 when the body is not valid UTF-8, not JSON, not an
// object, has trailing data, or repeats a member name (a repeated name is
// ambiguous: parsers disagree on which value wins, so it is refused).
// Unknown members are kept and later ignored.
func readObject(w http.ResponseWriter, r *http.Request) (object, error) {
	return readObjectLimit(w, r, MaxBodyBytes)
}

// readObjectLimit is readObject with a body of at most limit bytes.
func readObjectLimit(w http.ResponseWriter, r *http.Request, limit int64) (object, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, errorf(payoutkit.CodeInvalidInput, "request body could not be read")
	}
	return parseObject(body)
}

func parseObject(body []byte) (object, error) {
	if !utf8.Valid(body) {
		return nil, errorf(payoutkit.CodeInvalidInput, "request body must be valid UTF-8")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errorf(payoutkit.CodeInvalidInput, "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, malformed()
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errorf(payoutkit.CodeInvalidInput, "request body must be a JSON object")
	}
	obj, dup, err := members(dec)
	switch {
	case err != nil:
		return nil, malformed()
	case dup != "":
		return nil, errorf(payoutkit.CodeInvalidInput, "request body repeats the member "+quoteName(dup))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(payoutkit.CodeInvalidInput, "request body must hold a single JSON object")
	}
	return obj, nil
}

// members reads the members of the object whose opening brace dec has
// just read, through its closing brace. dup is the first name repeated,
// if any, with obj then incomplete.
func members(dec *json.Decoder) (obj object, dup string, err error) {
	obj = make(object)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, "", errors.New("member name expected")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, "", err
		}
		if _, seen := obj[name]; seen {
			return obj, name, nil
		}
		obj[name] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, "", err
	}
	return obj, "", nil
}

func malformed() error { return errorf(payoutkit.CodeInvalidInput, "request body is not valid JSON") }

// quoteName renders a member name for a message, bounded in length.
func quoteName(name string) string {
	if utf8.RuneCountInString(name) > 64 {
		name = string([]rune(name)[:64]) + "…"
	}
	b, _ := json.Marshal(name)
	return string(b)
}

// field is one member a request expects.
type field struct {
	name     string
	required bool
	dst      *string
}

// read reads the fields as JSON strings. A member of another JSON type is
// 40000 naming it; an optional member may also be null, meaning absent. A
// missing required member is left empty for the engine to report as
// required, unless some member has the wrong type, in which case every
// problem is reported at once.
func (o object) read(fields ...field) error {
	problems, wrongType := o.check("", fields...)
	if !wrongType {
		return nil
	}
	return invalid(problems)
}

// check reads the fields as read does and returns their problems, each
// field named by prefix and its name ("payouts[3].amount"), and whether
// one was of the wrong JSON type (a missing one alone is not).
func (o object) check(prefix string, fields ...field) (problems []payoutkit.FieldError, wrongType bool) {
	for _, f := range fields {
		raw, ok := o[f.name]
		switch {
		case !ok:
			if f.required {
				problems = append(problems, payoutkit.FieldError{Field: prefix + f.name, Message: "is required"})
			}
		case len(raw) > 1 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0:
			// No escapes: the parsed body's string is its bytes, quoted (a
			// JSON string holds no raw control character).
			*f.dst = string(raw[1 : len(raw)-1])
		case len(raw) > 0 && raw[0] == '"':
			if err := json.Unmarshal(raw, f.dst); err != nil {
				problems = append(problems, payoutkit.FieldError{Field: prefix + f.name, Message: "must be a string"})
				wrongType = true
			}
		case !f.required && string(raw) == "null":
		default:
			problems = append(problems, payoutkit.FieldError{Field: prefix + f.name, Message: "must be a string"})
			wrongType = true
		}
	}
	return problems, wrongType
}

// invalid is a 40000 naming each problem's field in its message and its
// errors.
func invalid(problems []payoutkit.FieldError) error {
	parts := make([]string, len(problems))
	for i, f := range problems {
		parts[i] = f.Field + " " + f.Message
	}
	return payoutkit.NewError(payoutkit.CodeInvalidInput, strings.Join(parts, "; "), problems)
}
