package payoutkit

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// keyDetails is what the security log says of a key: its prefix and
// controls, never the key or its hash.
func keyDetails(prefix string, scopes []Scope, ips []netip.Prefix) map[string]string {
	s := make([]string, len(scopes))
	for i, sc := range scopes {
		s[i] = string(sc)
	}
	scopeList := strings.Join(s, ",")
	if scopeList == "" {
		scopeList = scopeRead
	}
	return map[string]string{"prefix": prefix, "scopes": scopeList, "allow_ips": strings.Join(FormatAllowIPs(ips), ",")}
}

// redactURL writes a webhook URL for the security log, without the
// password a URL's user information may carry.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Redacted()
}

// Scope is a write an API key may make; a key without scopes is read-only.
type Scope string

// The scopes of the contract: creating (and, in the sandbox, paying or
// settling) orders and payouts.
const (
	ScopeOrdersWrite  Scope = "orders:write"
	ScopePayoutsWrite Scope = "payouts:write"
)

// scopeRead names no scope in a list of scopes.
const scopeRead = "read"

// AllScopes returns every scope, sorted: a new key's default.
func AllScopes() []Scope { return []Scope{ScopeOrdersWrite, ScopePayoutsWrite} }

// maxAllowIPs bounds a key's address allowlist, so that checking it stays
// cheap on every request.
const maxAllowIPs = 100

// ParseScopes reads a comma-separated list of scopes, or "read" alone for
// none, into a non-nil slice, sorted and without duplicates (so that "read"
// stays distinct from CreateAPIKeyRequest's default). An unknown word is an
// ErrInvalidInput naming "scopes".
func ParseScopes(list string) ([]Scope, error) {
	words := splitList(list)
	if len(words) == 1 && words[0] == scopeRead {
		return []Scope{}, nil
	}
	scopes := make([]Scope, 0, len(words))
	for _, w := range words {
		scopes = append(scopes, Scope(w))
	}
	var v validation
	scopes = checkScopes(&v, scopes)
	if len(words) == 0 {
		v.add("scopes", `must name orders:write, payouts:write or "read"`)
	}
	return scopes, v.err()
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// checkScopes checks every scope and returns them sorted without
// duplicates.
func checkScopes(v *validation, scopes []Scope) []Scope {
	out := make([]Scope, 0, len(scopes))
	for _, s := range scopes {
		switch s {
		case ScopeOrdersWrite, ScopePayoutsWrite:
			out = append(out, s)
		default:
			v.add("scopes", fmt.Sprintf(`unknown scope %q: use orders:write, payouts:write, or "read" for neither`, truncate(string(s), 40)))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ParseAllowIPs reads an allowlist of IP addresses (without a zone) and
// CIDR ranges, each kept as a range masked to its network. Anything else is
// an ErrInvalidInput naming "allow_ips".
func ParseAllowIPs(entries []string) ([]netip.Prefix, error) {
	var v validation
	out := parseAllowIPs(&v, entries)
	return out, v.err()
}

func parseAllowIPs(v *validation, entries []string) []netip.Prefix {
	if len(entries) > maxAllowIPs {
		v.add("allow_ips", fmt.Sprintf("must have at most %d entries", maxAllowIPs))
		return nil
	}
	out := make([]netip.Prefix, 0, len(entries))
	for _, e := range entries {
		e = strings.TrimSpace(e)
		var p netip.Prefix
		var err error
		if strings.Contains(e, "/") {
			p, err = netip.ParsePrefix(e)
			p = p.Masked()
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(e)
			if err == nil && a.Zone() != "" {
				err = fmt.Errorf("zone")
			}
			if err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil || !p.IsValid() {
			v.add("allow_ips", fmt.Sprintf("%q is not an IP address or CIDR range", truncate(e, 64)))
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// FormatAllowIP writes a one-address range as the bare address, any other
// in CIDR form.
func FormatAllowIP(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// FormatAllowIPs applies FormatAllowIP to each entry, into a non-nil slice.
func FormatAllowIPs(list []netip.Prefix) []string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = FormatAllowIP(p)
	}
	return out
}

// allowsAddr reports whether an allowlist lets client through: an empty
// list allows any address, a non-empty one only the addresses inside one of
// its ranges (an invalid, that is unknown, client address none).
func allowsAddr(list []netip.Prefix, client netip.Addr) bool {
	if len(list) == 0 {
		return true
	}
	client = client.Unmap().WithZone("")
	for _, p := range list {
		if p.Contains(client) {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// HasScope reports whether the principal's key holds scope.
func (p Principal) HasScope(scope Scope) bool { return slices.Contains(p.Scopes, scope) }

// Require refuses, with a 40300 (ErrForbidden) that names the scope, a
// principal whose key does not hold scope. Callers check it before reading
// the request, so that a refused request changes nothing and reveals
// nothing of its body's validity.
func (p Principal) Require(scope Scope) error {
	if p.HasScope(scope) {
		return nil
	}
	return errForbidden("this API key lacks the " + string(scope) + " scope")
}

// CreateAPIKeyRequest describes a new API key's controls.
type CreateAPIKeyRequest struct {
	// Scopes defaults, when nil, to AllScopes(); an empty non-nil slice
	// makes a read-only key.
	Scopes []Scope
	// AllowIPs are as ParseAllowIPs reads them. Defaults to any address.
	AllowIPs []string
}

// check validates the request and returns the key's canonical scopes and
// allowlist.
func (r CreateAPIKeyRequest) check() ([]Scope, []netip.Prefix, error) {
	var v validation
	scopes := AllScopes()
	if r.Scopes != nil {
		scopes = checkScopes(&v, r.Scopes)
	}
	ips := parseAllowIPs(&v, r.AllowIPs)
	return scopes, ips, v.err()
}
