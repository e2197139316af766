package httpserver_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit/httpserver"
)

var testProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}

func TestClientAddr(t *testing.T) {
	for _, c := range []struct {
		name    string
		remote  string
		xff     []string
		trusted []netip.Prefix
		want    string // "" is the zero Addr
	}{
		{"peer alone", "203.0.113.7:5000", nil, nil, "203.0.113.7"},
		{"peer IPv6", "[2001:db8::7]:443", nil, nil, "2001:db8::7"},
		{"peer IPv6 with zone", "[fe80::1%eth0]:443", nil, nil, "fe80::1"},
		{"peer mapped", "[::ffff:203.0.113.7]:80", nil, nil, "203.0.113.7"},
		{"peer without port", "203.0.113.7", nil, nil, "203.0.113.7"},
		{"peer garbage", "pipe", nil, nil, ""},
		{"untrusted peer's header ignored", "203.0.113.7:1", []string{"10.1.2.3"}, testProxies, "203.0.113.7"},
		{"no proxies: header ignored", "127.0.0.1:1", []string{"198.51.100.1"}, nil, "127.0.0.1"},
		{"trusted peer, one hop", "127.0.0.1:1", []string{"198.51.100.1"}, testProxies, "198.51.100.1"},
		{"spaces", "127.0.0.1:1", []string{"  198.51.100.1 ,  10.0.0.2  "}, testProxies, "198.51.100.1"},
		{"right-most untrusted wins", "127.0.0.1:1", []string{"192.0.2.1, 198.51.100.1, 10.0.0.2"}, testProxies, "198.51.100.1"},
		{"spoofed left part ignored", "127.0.0.1:1", []string{"10.9.9.9, 198.51.100.1"}, testProxies, "198.51.100.1"},
		{"many hops", "10.0.0.1:1", []string{"198.51.100.1, 10.0.0.5", "10.0.0.4,10.0.0.3", "127.0.0.9"}, testProxies, "198.51.100.1"},
		{"many header lines, last untrusted", "10.0.0.1:1", []string{"198.51.100.1", "192.0.2.9", "10.0.0.3"}, testProxies, "192.0.2.9"},
		{"port on entry", "127.0.0.1:1", []string{"198.51.100.1:8443"}, testProxies, "198.51.100.1"},
		{"IPv6 entry bracketed", "127.0.0.1:1", []string{"[2001:db8::9]"}, testProxies, "2001:db8::9"},
		{"IPv6 entry with port", "127.0.0.1:1", []string{"[2001:db8::9]:443"}, testProxies, "2001:db8::9"},
		{"IPv6 entry bare", "[fd00::1]:1", []string{"2001:db8::9"}, testProxies, "2001:db8::9"},
		{"mapped entry", "127.0.0.1:1", []string{"::ffff:198.51.100.1"}, testProxies, "198.51.100.1"},
		{"garbage entry: unknown", "127.0.0.1:1", []string{"198.51.100.1, unknown"}, testProxies, ""},
		{"garbage left of the client ignored", "127.0.0.1:1", []string{"garbage, 198.51.100.1"}, testProxies, "198.51.100.1"},
		{"empty entries skipped", "127.0.0.1:1", []string{",,198.51.100.1,,", ""}, testProxies, "198.51.100.1"},
		{"every entry trusted", "127.0.0.1:1", []string{"10.0.0.7, 10.0.0.8"}, testProxies, "10.0.0.7"},
		{"trusted peer, no header", "127.0.0.1:1", nil, testProxies, "127.0.0.1"},
		{"brackets around IPv4 are garbage", "127.0.0.1:1", []string{"[198.51.100.1]"}, testProxies, ""},
		{"hostname is garbage", "127.0.0.1:1", []string{"client.example"}, testProxies, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := httpserver.ClientAddr(c.remote, c.xff, c.trusted)
			want := netip.Addr{}
			if c.want != "" {
				want = netip.MustParseAddr(c.want)
			}
			if got != want {
				t.Fatalf("ClientAddr(%q, %q) = %v; want %v", c.remote, c.xff, got, want)
			}
		})
	}
}

// FuzzClientAddr: whatever the headers, the answer is the peer unless the
// peer is a trusted proxy, and otherwise an address the header or the peer
// named, unmapped and without a zone, or unknown.
func FuzzClientAddr(f *testing.F) {
	f.Add("127.0.0.1:1", "198.51.100.1, 10.0.0.2", "")
	f.Add("10.0.0.1:1", "[2001:db8::9]:443", "garbage")
	f.Add("[fd00::1]:1", " ,::ffff:1.2.3.4 ,", "10.0.0.3")
	f.Add("203.0.113.7:5", "10.0.0.1", "")
	f.Add("[fe80::1%eth0]:1", "fe80::2%lo", "[::1]")
	f.Fuzz(func(t *testing.T, remote, xff1, xff2 string) {
		xff := []string{xff1, xff2}
		got := httpserver.ClientAddr(remote, xff, testProxies)
		peer := httpserver.ClientAddr(remote, nil, nil)
		if again := httpserver.ClientAddr(remote, xff, nil); again != peer {
			t.Fatalf("without trusted proxies the header changed the answer: %v, %v", again, peer)
		}
		if got.IsValid() && (got.Zone() != "" || got.Is4In6()) {
			t.Fatalf("ClientAddr = %v: zoned or mapped", got)
		}
		trustedPeer := false
		for _, p := range testProxies {
			trustedPeer = trustedPeer || p.Contains(peer)
		}
		if !trustedPeer {
			if got != peer {
				t.Fatalf("untrusted peer %v: got %v", peer, got)
			}
			return
		}
		if got == peer || !got.IsValid() {
			return
		}
		// Otherwise it is one of the header's entries, as that entry
		// alone reads.
		for _, line := range xff {
			for entry := range strings.SplitSeq(line, ",") {
				if httpserver.ClientAddr(remote, []string{entry}, testProxies) == got {
					return
				}
			}
		}
		t.Fatalf("ClientAddr(%q, %q) = %v, which no entry names", remote, xff, got)
	})
}
