package httpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/netip"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/sandbox"
)

// endpoint is an authenticated endpoint.
type endpoint func(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error

// readOnly is the scope of an endpoint that only reads: none.
const readOnly payoutkit.Scope = ""

// auth authenticates the request by its Authorization header alone (a
// cookie never authenticates on /v1) from its client address, requires
// scope of the key (unless readOnly) before the body is read, applies the
// rate limit of the workspace, and calls next. A client address with too
// many failed authentications is refused first, without asking the
// service.
func (h *Handler) auth(scope payoutkit.Scope, next endpoint) func(http.ResponseWriter, *http.Request) error {
	return h.authWith(h.svc.Authenticate, scope, next)
}

// verifier resolves an Authorization header value, used from a client
// address, to a principal.
type verifier func(ctx context.Context, authorization string, client netip.Addr) (payoutkit.Principal, error)

// authWith is auth with the key checked by verify.
func (h *Handler) authWith(verify verifier, scope payoutkit.Scope, next endpoint) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var client string
		if h.failures != nil {
			client = clientKey(h.client(r))
			if blocked, wait := h.failures.blocked(client); blocked {
				return &rateLimited{retryAfter: wait, message: "too many failed authentications from this address; retry later"}
			}
		}
		p, err := h.authenticate(r, verify)
		if err != nil {
			if h.failures != nil && errors.Is(err, payoutkit.ErrUnauthorized) {
				if nowBlocked, wait := h.failures.failed(client); nowBlocked {
					ri := info(r)
					ri.log.WarnContext(r.Context(), "too many failed authentications: refusing the client address",
						"request_id", ri.id, "client", client, "retry_after", wait)
				}
			}
			return err
		}
		info(r).principal = p
		if scope != readOnly {
			if err := p.Require(scope); err != nil {
				return err
			}
		}
		if h.limiter != nil {
			if ok, wait := h.limiter.allow(p.WorkspaceID); !ok {
				return &rateLimited{retryAfter: wait}
			}
		}
		return next(w, r, p)
	}
}

// authenticate resolves the request's single Authorization header; every
// failure matches payoutkit.ErrUnauthorized.
func (h *Handler) authenticate(r *http.Request, verify verifier) (payoutkit.Principal, error) {
	values := r.Header.Values("Authorization")
	switch {
	case len(values) == 0 && r.Header.Get("Cookie") != "":
		return payoutkit.Principal{}, errorf(payoutkit.CodeUnauthorized, "an API key is required: a portal session cannot call /v1")
	case len(values) == 0:
		return payoutkit.Principal{}, errorf(payoutkit.CodeUnauthorized, "missing API key")
	case len(values) > 1:
		return payoutkit.Principal{}, errorf(payoutkit.CodeUnauthorized, "more than one Authorization header")
	}
	return verify(r.Context(), values[0], h.clientAddr(r))
}

// clientAddr is the request's client address (ClientAddr over the trusted
// proxies).
func (h *Handler) clientAddr(r *http.Request) netip.Addr {
	return ClientAddr(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), h.trusted)
}

// clientHost is the default Options.ClientAddress: clientAddr as text, or
// the host of r.RemoteAddr when the address is unknown.
func (h *Handler) clientHost(r *http.Request) string {
	if a := h.clientAddr(r); a.IsValid() {
		return a.String()
	}
	return remoteHost(r)
}

func (h *Handler) createPayout(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	body, err := readObject(w, r)
	if err != nil {
		return err
	}
	var req payoutkit.CreatePayoutRequest
	if err := body.read(payoutFields(&req)...); err != nil {
		return err
	}
	payout, replayed, err := h.svc.CreatePayout(r.Context(), p.WorkspaceID, req)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	return writeOK(w, payout)
}

func (h *Handler) payoutInfo(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	id, err := readID(w, r, "payout_id")
	if err != nil {
		return err
	}
	payout, err := h.svc.Payout(r.Context(), p.WorkspaceID, id)
	if err != nil {
		return err
	}
	return writeOK(w, payout)
}

// balanceRoute serves GET /v1/balance: the key and the balance come from
// one call of the Service's AuthenticateBalance, which the engine serves in
// one query, so that a Service wrapping the engine keeps that read.
func (h *Handler) balanceRoute() func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var b payoutkit.Balance
		verify := func(ctx context.Context, authorization string, client netip.Addr) (payoutkit.Principal, error) {
			p, bal, err := h.svc.AuthenticateBalance(ctx, authorization, client)
			b = bal
			return p, err
		}
		return h.authWith(verify, readOnly, func(w http.ResponseWriter, _ *http.Request, _ payoutkit.Principal) error {
			return writeOK(w, b)
		})(w, r)
	}
}

// coinsData is the data of GET /v1/coins.
type coinsData struct {
	PayoutCoins []payoutkit.Coin `json:"payout_coins"`
}

func (h *Handler) coins(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	coins, err := h.svc.Coins(r.Context(), p.WorkspaceID)
	if err != nil {
		return err
	}
	if coins == nil {
		coins = []payoutkit.Coin{}
	}
	return writeOK(w, coinsData{PayoutCoins: coins})
}

func (h *Handler) createOrder(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	body, err := readObject(w, r)
	if err != nil {
		return err
	}
	var req payoutkit.CreateOrderRequest
	if err := body.read(
		field{"order_id", true, &req.OrderID},
		field{"amount", true, &req.Amount},
		field{"payer_id", false, &req.PayerID},
		field{"description", false, &req.Description},
	); err != nil {
		return err
	}
	order, replayed, err := h.svc.CreateOrder(r.Context(), p.WorkspaceID, req)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	return writeOK(w, order)
}

func (h *Handler) orderInfo(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	id, err := readID(w, r, "order_id")
	if err != nil {
		return err
	}
	order, err := h.svc.Order(r.Context(), p.WorkspaceID, id)
	if err != nil {
		return err
	}
	return writeOK(w, order)
}

func (h *Handler) sandboxPayOrder(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	id, err := readID(w, r, "order_id")
	if err != nil {
		return err
	}
	order, err := h.svc.MarkOrderPaid(r.Context(), p.WorkspaceID, id)
	if err != nil {
		return err
	}
	return writeOK(w, order)
}

func (h *Handler) sandboxCompletePayout(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	body, err := readObject(w, r)
	if err != nil {
		return err
	}
	var id, txid string
	if err := body.read(field{"payout_id", true, &id}, field{"txid", false, &txid}); err != nil {
		return err
	}
	if txid == "" { // a completed payout always shows a txid
		var b [16]byte
		rand.Read(b[:])
		txid = "sandbox-" + hex.EncodeToString(b[:])
	}
	payout, err := sandbox.Complete(r.Context(), h.svc, p.WorkspaceID, id, txid)
	if err != nil {
		return err
	}
	return writeOK(w, payout)
}

func (h *Handler) sandboxFailPayout(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	body, err := readObject(w, r)
	if err != nil {
		return err
	}
	var id, reason string
	if err := body.read(field{"payout_id", true, &id}, field{"reason", false, &reason}); err != nil {
		return err
	}
	payout, err := h.svc.FailPayout(r.Context(), p.WorkspaceID, id, reason)
	if err != nil {
		return err
	}
	return writeOK(w, payout)
}

// readID reads a body holding one required id member.
func readID(w http.ResponseWriter, r *http.Request, name string) (string, error) {
	body, err := readObject(w, r)
	if err != nil {
		return "", err
	}
	var id string
	return id, body.read(field{name, true, &id})
}
