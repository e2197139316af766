package payoutkit

import (
	"net/netip"
	"slices"
	"testing"
)

func TestParseScopes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Scope
		ok   bool
	}{
		{"orders:write,payouts:write", []Scope{ScopeOrdersWrite, ScopePayoutsWrite}, true},
		{" payouts:write , orders:write,payouts:write ", []Scope{ScopeOrdersWrite, ScopePayoutsWrite}, true},
		{"orders:write", []Scope{ScopeOrdersWrite}, true},
		{"read", []Scope{}, true},
		{"", nil, false},
		{"read,orders:write", nil, false},
		{"payouts:read", nil, false},
		{"ORDERS:WRITE", nil, false},
	} {
		got, err := ParseScopes(c.in)
		if (err == nil) != c.ok || (c.ok && (got == nil || !slices.Equal(got, c.want))) {
			t.Errorf("ParseScopes(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
		if err != nil && (CodeOf(err) != CodeInvalidInput || err.(*Error).Fields[0].Field != "scopes") {
			t.Errorf("ParseScopes(%q): %v is not a 40000 on scopes", c.in, err)
		}
	}
}

func TestParseAllowIPs(t *testing.T) {
	got, err := ParseAllowIPs([]string{"10.1.2.3/8", "203.0.113.7", "2001:db8::/32", "::1", "10.0.0.0/8", "::ffff:1.2.3.4"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "203.0.113.7", "2001:db8::/32", "::1", "::ffff:1.2.3.4"}
	if f := FormatAllowIPs(got); !slices.Equal(f, want) {
		t.Fatalf("FormatAllowIPs = %q; want %q", f, want)
	}
	for _, bad := range []string{"", "10.0.0.0/33", "1.2.3", "fe80::1%eth0", "10.0.0.0/8/8", "host.example", "2001:db8::/129"} {
		if _, err := ParseAllowIPs([]string{bad}); CodeOf(err) != CodeInvalidInput {
			t.Errorf("ParseAllowIPs(%q) = %v; want a 40000", bad, err)
		}
	}
	many := make([]string, maxAllowIPs+1)
	for i := range many {
		many[i] = "10.0.0.1"
	}
	if _, err := ParseAllowIPs(many); CodeOf(err) != CodeInvalidInput {
		t.Errorf("%d entries accepted", len(many))
	}
	if l := FormatAllowIPs(nil); l == nil || len(l) != 0 {
		t.Errorf("FormatAllowIPs(nil) = %#v; want an empty, non-nil slice", l)
	}
}

func TestAllowsAddr(t *testing.T) {
	list, _ := ParseAllowIPs([]string{"10.0.0.0/8", "2001:db8::/32", "192.0.2.1"})
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"10.0.0.1", true}, {"10.255.0.1", true}, {"::ffff:10.0.0.1", true}, {"192.0.2.1", true},
		{"192.0.2.2", false}, {"11.0.0.1", false}, {"2001:db8::1", true}, {"2001:db9::1", false},
		{"fe80::1%eth0", false}, {"127.0.0.1", false},
	} {
		if got := allowsAddr(list, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("allowsAddr(%s) = %v; want %v", c.addr, got, c.want)
		}
	}
	if allowsAddr(list, netip.Addr{}) {
		t.Error("an unknown address is allowed by a list")
	}
	if !allowsAddr(nil, netip.Addr{}) || !allowsAddr(nil, netip.MustParseAddr("8.8.8.8")) {
		t.Error("an empty list refuses an address")
	}
}
