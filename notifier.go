package payoutkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultTimeout bounds one webhook delivery (contract §5).
const DefaultTimeout = 10 * time.Second

const (
	// maxAnswer is how much of a receiver's answer is read. An
	// acknowledgement is the 7 bytes "success" with blanks around it.
	maxAnswer = 4 << 10
	// maxHead is how much of the answer the delivery log keeps.
	maxHead   = 256
	userAgent = "payoutkit-webhooks/1"
)

// ErrForbiddenDestination is the error of a delivery refused because the
// webhook URL's host resolved to an address that HTTPNotifier does not reach
// unless AllowPrivate is set.
var ErrForbiddenDestination = errors.New("destination address not allowed")

// HTTPNotifier is the default Notifier. It POSTs an event's stored
// body, byte for byte, to the workspace's webhook URL with the headers
// Content-Type: application/json, X-Signature (Sign of the body
// with the workspace's secret), X-Event-Id and X-Event-Type. The delivery
// succeeds only when the receiver answers 2xx with the body "success",
// blanks around it ignored.
//
// Only http and https URLs are delivered to. Redirects are not followed: a
// 3xx answer is a failed delivery. No proxy is used. The address actually
// dialed (after DNS resolution, so that a name that later resolves
// elsewhere cannot get around it) is checked: unless AllowPrivate is set it
// must be a public unicast address (loopback, private, link-local,
// unspecified, multicast, shared (100.64.0.0/10) and reserved addresses are
// refused with ErrForbiddenDestination). Link-local addresses, cloud
// metadata services, unspecified and multicast addresses are refused even
// with AllowPrivate.
//
// The zero value is ready to use and safe for concurrent use; do not change
// its fields after the first Notify.
type HTTPNotifier struct {
	// Timeout bounds one delivery, from dialing to reading the answer.
	// Defaults to DefaultTimeout (10 s).
	Timeout time.Duration
	// AllowPrivate lets deliveries reach loopback, private, shared and
	// reserved addresses, never link-local ones or metadata services. Turn
	// it on in a sandbox or when receivers live on the operator's own
	// network. Defaults to false.
	AllowPrivate bool

	once   sync.Once
	client *http.Client
}

var _ Notifier = (*HTTPNotifier)(nil)

func (n *HTTPNotifier) timeout() time.Duration {
	if n.Timeout > 0 {
		return n.Timeout
	}
	return DefaultTimeout
}

func (n *HTTPNotifier) httpClient() *http.Client {
	n.once.Do(func() {
		timeout := n.timeout()
		dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, ControlContext: refusePrivate}
		if n.AllowPrivate {
			dialer.ControlContext = refuseNeverAllowed
		}
		n.client = &http.Client{
			Timeout: timeout,
			Transport: &http.Transport{
				Proxy:             nil, // the guard must see the receiver's own address
				DialContext:       dialer.DialContext,
				ForceAttemptHTTP2: true,
				MaxIdleConns:      512,
				// A receiver may take up to DeliveryConfig.MaxPerWorkspace
				// deliveries at once (128 by default): keep as many
				// connections to it alive, so that a busy outbox does not
				// open one per event.
				MaxIdleConnsPerHost:    128,
				IdleConnTimeout:        90 * time.Second,
				TLSHandshakeTimeout:    timeout,
				ResponseHeaderTimeout:  timeout,
				MaxResponseHeaderBytes: 64 << 10,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
	return n.client
}

// Notify implements Notifier.
func (n *HTTPNotifier) Notify(ctx context.Context, ws Workspace, ev Event) (DeliveryResult, error) {
	var res DeliveryResult
	u, err := url.Parse(ws.WebhookURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return res, errors.New("webhook URL is not an absolute http or https URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(ev.Body))
	if err != nil {
		return res, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(HeaderSignature, Sign(ws.WebhookSecret, ev.Body))
	req.Header.Set(HeaderEventID, ev.ID)
	req.Header.Set(HeaderEventType, string(ev.Type))
	resp, err := n.httpClient().Do(req)
	if err != nil {
		return res, n.describe(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	res = DeliveryResult{StatusCode: resp.StatusCode, ResponseHead: cleanText(answer, maxHead)}
	switch {
	case err != nil:
		return res, fmt.Errorf("reading the answer: %w", n.describe(err))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return res, fmt.Errorf("answered HTTP %d", resp.StatusCode)
	case !acknowledged(answer):
		return res, errors.New(`answer body is not "success"`)
	}
	return res, nil
}

// acknowledged reports whether a 2xx answer's body acknowledges the event.
func acknowledged(answer []byte) bool {
	return len(answer) <= maxAnswer && string(bytes.TrimSpace(answer)) == "success"
}

// describe turns a client error into a short message for the delivery log:
// without the URL (which may carry credentials), and naming timeouts.
func (n *HTTPNotifier) describe(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s: %w", n.timeout(), err)
	}
	return err
}

// refusePrivate is the dialer's Control hook: it sees the resolved address
// that is about to be connected to, and refuses any non-public one.
func refusePrivate(_ context.Context, _, address string, _ syscall.RawConn) error {
	return checkDial(address, nonPublic)
}

// refuseNeverAllowed is the Control hook with AllowPrivate: it refuses the
// addresses no webhook may reach.
func refuseNeverAllowed(_ context.Context, _, address string, _ syscall.RawConn) error {
	return checkDial(address, neverAllowed)
}

func checkDial(address string, refuse func(netip.Addr) string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenDestination, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenDestination, address)
	}
	if why := refuse(ip); why != "" {
		return fmt.Errorf("%w: %s is %s", ErrForbiddenDestination, ip, why)
	}
	return nil
}

// metadataAddrs are cloud metadata services outside the link-local ranges.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure's wireserver
}

// neverAllowed names why an address is out of reach even for a sandbox or
// an operator who allows private receivers, or returns "".
func neverAllowed(ip netip.Addr) string {
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

// nonPublic names the kind of a non-public address, or returns "" for a
// public unicast one.
func nonPublic(ip netip.Addr) string {
	ip = ip.Unmap()
	if why := neverAllowed(ip); why != "" {
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
				if why := nonPublic(netip.AddrFrom4([4]byte(b[off : off+4]))); why != "" {
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

// cleanText returns b as valid UTF-8 without NUL bytes, cut to at most limit
// bytes on a character boundary, so that any database stores it.
func cleanText(b []byte, limit int) string {
	s := strings.ToValidUTF8(string(b[:min(len(b), limit+utf8.UTFMax)]), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	for len(s) > limit {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
