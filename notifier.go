package payoutkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/payoutkit/payoutkit/internal/delivery"
	"github.com/payoutkit/payoutkit/internal/dialguard"
)

// DefaultTimeout is HTTPNotifier.Timeout's default (contract, section 5).
const DefaultTimeout = 10 * time.Second

const (
	// maxAnswer is how much of a receiver's answer is read. An
	// acknowledgement is the 7 bytes "success" with blanks around it.
	maxAnswer = 4 << 10
	// maxHead is how much of the answer the delivery log keeps.
	maxHead   = 256
	userAgent = "payoutkit-webhooks/1"
)

// ErrForbiddenDestination refuses a delivery to an address HTTPNotifier
// may not reach.
var ErrForbiddenDestination = errors.New("destination address not allowed")

// HTTPNotifier is the default Notifier. It POSTs an event's body, byte for
// byte, with the webhook headers to an http or https webhook URL, through no
// proxy and following no redirect; only a 2xx answer "success" (blanks
// ignored) acknowledges it. The address dialed, after DNS, must be public
// unicast, else ErrForbiddenDestination.
//
// The zero value is ready and safe for concurrent use; do not change its
// fields after the first Notify.
type HTTPNotifier struct {
	// Timeout bounds one delivery. Defaults to DefaultTimeout.
	Timeout time.Duration
	// AllowPrivate also lets deliveries reach loopback, private, shared and
	// reserved addresses, never link-local, metadata, unspecified or
	// multicast ones. Defaults to false.
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
		// The guard sees the address about to be dialed, after DNS: any
		// non-public one is refused, or with AllowPrivate those no webhook
		// may reach.
		dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, ControlContext: dialguard.Control(dialguard.NonPublic, ErrForbiddenDestination)}
		if n.AllowPrivate {
			dialer.ControlContext = dialguard.Control(dialguard.NeverAllowed, ErrForbiddenDestination)
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
	res = DeliveryResult{StatusCode: resp.StatusCode, ResponseHead: delivery.CleanText(answer, maxHead)}
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
