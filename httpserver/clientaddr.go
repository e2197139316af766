package httpserver

import (
	"net/netip"
	"strings"
)

// ClientAddr is the client address a request is judged by (an API key's
// address allowlist, the limit on failed authentications): the TCP peer's
// address (remoteAddr, as in http.Request.RemoteAddr), unless that peer is
// inside one of the trusted proxies' ranges; then the right-most address of
// the X-Forwarded-For values (forwarded, every header line in order) that
// is not itself a trusted proxy. The headers of an untrusted peer are never
// read, so a client cannot choose its own address. Entries may carry spaces,
// a port, or IPv6 brackets. An entry that is no address, where the
// client's should be, makes the client unknown: the zero Addr, which no
// allowlist holds. When every entry (or the peer, with none) is a trusted
// proxy, the address is the left-most of them. The result is unmapped
// (::ffff:10.0.0.1 is 10.0.0.1) and without a zone; it is the zero Addr
// too when remoteAddr is not an address.
func ClientAddr(remoteAddr string, forwarded []string, trusted []netip.Prefix) netip.Addr {
	peer, ok := parseHostAddr(remoteAddr)
	if !ok {
		return netip.Addr{}
	}
	addr := peer
	if !inPrefixes(trusted, addr) {
		return addr
	}
	for i := len(forwarded) - 1; i >= 0; i-- {
		line := forwarded[i]
		for line != "" {
			entry := line
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				entry, line = line[j+1:], line[:j]
			} else {
				line = ""
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			a, ok := parseHostAddr(entry)
			if !ok {
				return netip.Addr{}
			}
			addr = a
			if !inPrefixes(trusted, addr) {
				return addr
			}
		}
	}
	return addr
}

// parseHostAddr reads an address alone, with a port ("1.2.3.4:80",
// "[::1]:80") or in brackets ("[::1]"), unmapped and without its zone.
func parseHostAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() {
			return a.Unmap().WithZone(""), true
		}
	}
	return netip.Addr{}, false
}

func inPrefixes(list []netip.Prefix, a netip.Addr) bool {
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
