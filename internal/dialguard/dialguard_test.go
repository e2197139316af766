package dialguard

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

var errForbidden = errors.New("destination address not allowed")

func TestNonPublic(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":            "loopback",
		"127.1.2.3":            "loopback",
		"::1":                  "loopback",
		"::ffff:127.0.0.1":     "loopback",
		"10.1.2.3":             "private",
		"172.16.0.1":           "private",
		"192.168.1.1":          "private",
		"fd00::1":              "private",
		"fd00:ec2::254":        "a cloud metadata service",
		"169.254.169.254":      "link-local (cloud metadata services live there)",
		"fe80::1":              "link-local (cloud metadata services live there)",
		"0.0.0.0":              "unspecified",
		"::":                   "unspecified",
		"224.0.0.1":            "multicast",
		"ff02::1":              "multicast",
		"100.100.100.200":      "a cloud metadata service",
		"100.100.100.201":      "shared address space",
		"0.1.2.3":              "reserved (this network)",
		"255.255.255.255":      "reserved",
		"198.18.0.1":           "reserved (benchmarking)",
		"64:ff9b::a00:1":       "private (embedded in NAT64)",
		"2002:7f00:1::":        "loopback (embedded in 6to4)",
		"8.8.8.8":              "",
		"1.1.1.1":              "",
		"2001:4860:4860::8888": "",
		"64:ff9b::808:808":     "",
		"172.32.0.1":           "",
	} {
		if got := NonPublic(netip.MustParseAddr(addr)); got != want {
			t.Errorf("NonPublic(%s) = %q; want %q", addr, got, want)
		}
	}
}

// NeverAllowed lets loopback and private receivers be reached (the
// sandbox, -webhook-allow-private), link-local addresses and metadata
// services never.
func TestNeverAllowed(t *testing.T) {
	refuse := Control(NeverAllowed, errForbidden)
	for addr, refused := range map[string]bool{
		"127.0.0.1": false, "10.1.2.3": false, "192.168.0.10": false, "fd12::1": false, "8.8.8.8": false,
		"169.254.169.254": true, "169.254.0.1": true, "fe80::1": true, "fd00:ec2::254": true,
		"100.100.100.200": true, "168.63.129.16": true, "0.0.0.0": true, "::ffff:169.254.169.254": true, "224.0.0.1": true,
	} {
		err := refuse(t.Context(), "tcp", net.JoinHostPort(addr, "80"), nil)
		if refused != errors.Is(err, errForbidden) {
			t.Errorf("%s: %v; refused %v", addr, err, refused)
		}
	}
}

// A refusal wraps the error it was given and names the address and why.
func TestControlNamesTheAddress(t *testing.T) {
	err := Control(NonPublic, errForbidden)(t.Context(), "tcp", "10.1.2.3:443", nil)
	if !errors.Is(err, errForbidden) || err.Error() != "destination address not allowed: 10.1.2.3 is private" {
		t.Fatalf("err = %v", err)
	}
	if err := Control(NonPublic, errForbidden)(t.Context(), "tcp", "8.8.8.8:443", nil); err != nil {
		t.Fatalf("a public address refused: %v", err)
	}
	if err := Control(NonPublic, errForbidden)(t.Context(), "tcp", "not an address", nil); !errors.Is(err, errForbidden) || !strings.Contains(err.Error(), "not an address") {
		t.Fatalf("an unparsable address: %v", err)
	}
}
