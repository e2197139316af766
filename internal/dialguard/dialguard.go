// Package dialguard keeps webhook deliveries away from addresses they must
// not reach: it judges the address a dialer is about to connect to, after
// DNS resolution, so that a name that later resolves elsewhere cannot get
// around it.
package dialguard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
)

// Control returns a dialer's ControlContext hook: it sees the resolved
// address about to be connected to, and refuses it with an error wrapping
// forbidden when refuse names a reason (NonPublic, NeverAllowed).
func Control(refuse func(netip.Addr) string, forbidden error) func(ctx context.Context, network, address string, c syscall.RawConn) error {
	return func(_ context.Context, _, address string, _ syscall.RawConn) error {
		return check(address, refuse, forbidden)
	}
}

func check(address string, refuse func(netip.Addr) string, forbidden error) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", forbidden, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", forbidden, address)
	}
	if why := refuse(ip); why != "" {
		return fmt.Errorf("%w: %s is %s", forbidden, ip, why)
	}
	return nil
}

// metadataAddrs are cloud metadata services outside the link-local ranges.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure's wireserver
}

// NeverAllowed names why an address is out of reach even for a sandbox or
// an operator who allows private receivers, or returns "".
func NeverAllowed(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLinkLocalUnicast():
		return "link-local (cloud metadata services live there)"
	case ip.IsMulticast():
		return "multicast"
	case slices.Contains(metadataAddrs, ip):
		return "a cloud metadata service"
	}
	return ""
}

// NonPublic names the kind of a non-public address, or returns "" for a
// public unicast one.
func NonPublic(ip netip.Addr) string {
	ip = ip.Unmap()
	if why := NeverAllowed(ip); why != "" {
		return why
	}
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast():
		return "multicast"
	}
	for _, r := range reservedRanges {
		if r.prefix.Contains(ip) {
			if r.embedsV4 {
				// NAT64 and 6to4 carry an IPv4 address: judge that one.
				b := ip.As16()
				off := 12 // 64:ff9b::/96 keeps it in the last four bytes
				if r.prefix.Bits() == 16 {
					off = 2 // 2002::/16 keeps it right after the prefix
				}
				if why := NonPublic(netip.AddrFrom4([4]byte(b[off : off+4]))); why != "" {
					return why + " (embedded in " + r.why + ")"
				}
				return ""
			}
			return r.why
		}
	}
	return ""
}

var reservedRanges = []struct {
	prefix   netip.Prefix
	why      string
	embedsV4 bool
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "reserved (this network)", false},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space", false},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol assignments)", false},
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved (documentation)", false},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)", false},
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved (documentation)", false},
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved (documentation)", false},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved", false}, // with 255.255.255.255
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64", true},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "reserved (local NAT64)", false},
	{netip.MustParsePrefix("100::/64"), "reserved (discard)", false},
	{netip.MustParsePrefix("2001:db8::/32"), "reserved (documentation)", false},
	{netip.MustParsePrefix("2002::/16"), "6to4", true},
	{netip.MustParsePrefix("fec0::/10"), "site-local", false},
}
