package payoutkit

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit/internal/random"
	"golang.org/x/crypto/bcrypt"
)

// Workspace is one merchant: its own balance, payouts, orders, API keys,
// staff and webhook destination. Workspaces share nothing. With
// RequireTwoFactor, the portal sends every staff user without two-factor
// sign-in to set it up first.
type Workspace struct {
	ID               string
	Name             string
	WebhookURL       string // empty: events are kept but not sent
	WebhookSecret    string // whsec_…, the HMAC key of webhook signatures
	CreatedAt        time.Time
	RequireTwoFactor bool
}

// APIKey is a stored API key: its public prefix and the SHA-256 of the whole
// key, never the key. Scopes (sorted, without duplicates; none: read-only)
// and AllowIPs (masked ranges; none: any address) limit what a leaked key
// can do.
type APIKey struct {
	Prefix      string
	WorkspaceID string
	Hash        [sha256.Size]byte
	CreatedAt   time.Time
	RevokedAt   time.Time // zero while active
	LastUsedAt  time.Time // zero until first used
	Scopes      []Scope
	AllowIPs    []netip.Prefix
}

// Active reports whether the key may still authenticate.
func (k APIKey) Active() bool { return k.RevokedAt.IsZero() }

// Principal is who an authenticated API request acts for, with its key's
// Scopes (Require refuses a write outside them) and AllowIPs (already
// checked).
type Principal struct {
	WorkspaceID string
	KeyPrefix   string
	Scopes      []Scope
	AllowIPs    []netip.Prefix
}

// NewKey is a freshly made API key with its controls as stored. Key is the
// plain key: show it once and forget it.
type NewKey struct {
	Key      string         `json:"api_key"`
	Prefix   string         `json:"prefix"`
	Scopes   []Scope        `json:"-"`
	AllowIPs []netip.Prefix `json:"-"`
}

// API keys look like sk_<8 prefix characters>_<32 secret characters>.
const (
	keyScheme    = "sk_"
	keyPrefixLen = 8
	keySecretLen = 32
	keyLen       = len(keyScheme) + keyPrefixLen + 1 + keySecretLen
)

// keyTouchInterval bounds how often a key's last use is written, so that
// authentication stays a read on the hot path.
const keyTouchInterval = time.Minute

// newAPIKey makes a key with the given controls, already checked.
func (e *Engine) newAPIKey(workspaceID string, scopes []Scope, allowIPs []netip.Prefix) (NewKey, APIKey) {
	prefix := random.Base62(keyPrefixLen)
	plain := keyScheme + prefix + "_" + random.Base62(keySecretLen)
	return NewKey{Key: plain, Prefix: prefix, Scopes: slices.Clone(scopes), AllowIPs: slices.Clone(allowIPs)}, APIKey{
		Prefix: prefix, WorkspaceID: workspaceID, Hash: sha256.Sum256([]byte(plain)), CreatedAt: e.clock(),
		Scopes: slices.Clone(scopes), AllowIPs: slices.Clone(allowIPs),
	}
}

// Authenticate resolves an Authorization header value ("Bearer <key>", in
// any case, or the bare key) to an active key's principal, else
// ErrUnauthorized. A valid key whose allowlist does not hold client (an
// invalid client included) is ErrForbidden.
func (e *Engine) Authenticate(ctx context.Context, authorization string, client netip.Addr) (Principal, error) {
	return e.authenticate(ctx, authorization, client, e.store.APIKey)
}

// AuthenticateBalance is Authenticate followed by Balance of the key's
// workspace, in one store read (Store.APIKeyBalance); the balance is returned
// only with a nil error.
func (e *Engine) AuthenticateBalance(ctx context.Context, authorization string, client netip.Addr) (Principal, Balance, error) {
	var b Balance
	p, err := e.authenticate(ctx, authorization, client, func(ctx context.Context, prefix string) (APIKey, error) {
		var key APIKey
		var err error
		key, b, err = e.store.APIKeyBalance(ctx, prefix)
		return key, err
	})
	if err != nil {
		return Principal{}, Balance{}, err
	}
	return p, b, nil
}

// authenticate checks authorization against the key that load reads, then
// the key's allowlist against client: a bad key is 40100 whatever the
// address, and a refused address changes nothing (not even the key's last
// use).
func (e *Engine) authenticate(ctx context.Context, authorization string, client netip.Addr, load func(ctx context.Context, prefix string) (APIKey, error)) (Principal, error) {
	plain, ok := keyFromHeader(authorization)
	if !ok {
		return Principal{}, newError(ErrUnauthorized, "missing or malformed API key")
	}
	prefix := plain[len(keyScheme) : len(keyScheme)+keyPrefixLen]
	key, err := load(ctx, prefix)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, newError(ErrUnauthorized, "invalid API key")
	} else if err != nil {
		return Principal{}, err
	}
	sum := sha256.Sum256([]byte(plain))
	if subtle.ConstantTimeCompare(sum[:], key.Hash[:]) != 1 || !key.Active() {
		return Principal{}, newError(ErrUnauthorized, "invalid API key")
	}
	if !allowsAddr(key.AllowIPs, client) {
		return Principal{}, errForbidden(addrRefusal(client))
	}
	if now := e.clock(); now.Sub(key.LastUsedAt) >= keyTouchInterval {
		if err := e.store.TouchAPIKey(ctx, prefix, now); err != nil {
			e.log.WarnContext(ctx, "recording API key use", "prefix", prefix, "err", err)
		}
	}
	return Principal{WorkspaceID: key.WorkspaceID, KeyPrefix: prefix, Scopes: key.Scopes, AllowIPs: key.AllowIPs}, nil
}

// addrRefusal is the message of a key used from an address its allowlist
// refuses; it names the address as the engine saw it, so that a caller
// behind a proxy can see which address was judged.
func addrRefusal(client netip.Addr) string {
	if !client.IsValid() {
		return "this API key is not allowed from an unknown address"
	}
	return "this API key is not allowed from the address " + client.Unmap().WithZone("").String()
}

// keyFromHeader extracts a well-formed key from an Authorization value.
func keyFromHeader(h string) (string, bool) {
	key := h
	if scheme, rest, found := strings.Cut(h, " "); found {
		if !strings.EqualFold(scheme, "Bearer") {
			return "", false
		}
		key = strings.TrimLeft(rest, " ")
	}
	if len(key) != keyLen || !strings.HasPrefix(key, keyScheme) || key[len(keyScheme)+keyPrefixLen] != '_' {
		return "", false
	}
	for i := len(keyScheme); i < len(key); i++ {
		if c := key[i]; i != len(keyScheme)+keyPrefixLen && !isAlnum(c) {
			return "", false
		}
	}
	return key, true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// CreateWorkspaceRequest describes a new workspace and its first staff user.
// Name is required; WebhookURL, if set, is http or https.
type CreateWorkspaceRequest struct {
	Name       string
	WebhookURL string
	// StaffEmail defaults to admin+<workspace id>@payoutkit.local, and
	// StaffPassword (at least 12 characters) to a random one.
	StaffEmail, StaffPassword string
}

// NewWorkspace is a created workspace with its secrets, shown once.
type NewWorkspace struct {
	Workspace     Workspace
	APIKey        NewKey
	StaffEmail    string
	StaffPassword string
}

// CreateWorkspace creates a workspace with a zero balance, a webhook signing
// secret, its first staff user and its first API key.
func (e *Engine) CreateWorkspace(ctx context.Context, req CreateWorkspaceRequest) (NewWorkspace, error) {
	return e.createWorkspace(ctx, "ws_"+random.Base62(16), req)
}

// bootstrapWorkspaceID is the id of the workspace Bootstrap creates.
const bootstrapWorkspaceID = "ws_default"

// Bootstrap creates the first workspace of an empty store, named "default",
// and returns it with created true; otherwise it creates nothing. However
// many instances bootstrap one store at once, one workspace is created.
func (e *Engine) Bootstrap(ctx context.Context) (nw NewWorkspace, created bool, err error) {
	ids, err := e.store.WorkspaceIDs(ctx)
	if err != nil || len(ids) > 0 {
		return NewWorkspace{}, false, err
	}
	nw, err = e.createWorkspace(ctx, bootstrapWorkspaceID, CreateWorkspaceRequest{Name: "default"})
	if err != nil {
		if _, werr := e.store.Workspace(ctx, bootstrapWorkspaceID); werr == nil {
			return NewWorkspace{}, false, nil // another instance was first
		}
		return NewWorkspace{}, false, err
	}
	return nw, true, nil
}

func (e *Engine) createWorkspace(ctx context.Context, id string, req CreateWorkspaceRequest) (NewWorkspace, error) {
	var v validation
	checkText(&v, "name", req.Name, true, maxText)
	checkWebhookURL(&v, req.WebhookURL)
	if req.StaffEmail != "" {
		checkEmail(&v, req.StaffEmail)
	}
	if req.StaffPassword != "" && len(req.StaffPassword) < 12 {
		v.add("staff_password", "must be at least 12 characters")
	}
	if len(req.StaffPassword) > 72 { // bcrypt reads no further
		v.add("staff_password", "must be at most 72 bytes")
	}
	err := v.err()
	if err != nil {
		return NewWorkspace{}, err
	}
	now := e.clock()
	ws := Workspace{
		ID: id, Name: req.Name, WebhookURL: req.WebhookURL,
		WebhookSecret: newWebhookSecret(), CreatedAt: now,
	}
	stored := ws
	if stored.WebhookSecret, err = e.keys.Seal(ws.ID, ws.WebhookSecret); err != nil {
		return NewWorkspace{}, err
	}
	email := strings.ToLower(req.StaffEmail)
	if email == "" {
		email = "admin+" + strings.ToLower(ws.ID) + "@payoutkit.local"
	}
	password := req.StaffPassword
	if password == "" {
		password = random.Base62(20)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), e.pwCost)
	if err != nil {
		return NewWorkspace{}, fmt.Errorf("hashing staff password: %w", err)
	}
	staff := StaffUser{WorkspaceID: ws.ID, Email: email, PasswordHash: string(hash), CreatedAt: now, Role: RoleAdmin}
	plain, key := e.newAPIKey(ws.ID, AllScopes(), nil)
	if err := e.store.CreateWorkspace(ctx, stored, staff, key); err != nil {
		if errors.Is(err, ErrConflict) {
			return NewWorkspace{}, invalidField("staff_email", "is already in use")
		}
		return NewWorkspace{}, err
	}
	return NewWorkspace{Workspace: ws, APIKey: plain, StaffEmail: email, StaffPassword: password}, nil
}

// CreateAPIKey adds an API key with req's controls (the zero req: every
// scope, any address) and returns it, once. Invalid controls are an
// ErrInvalidInput naming "scopes" or "allow_ips".
func (e *Engine) CreateAPIKey(ctx context.Context, workspaceID string, req CreateAPIKeyRequest, by Actor) (NewKey, error) {
	scopes, ips, err := req.check()
	if err != nil {
		return NewKey{}, err
	}
	if _, err := e.workspace(ctx, workspaceID); err != nil {
		return NewKey{}, err
	}
	if err := by.confirm(ctx); err != nil {
		return NewKey{}, err
	}
	return retryPrefix(func() (NewKey, error) {
		plain, key := e.newAPIKey(workspaceID, scopes, ips)
		log := logEntry(workspaceID, key.CreatedAt, ActionKeyCreated, by, keyDetails(key.Prefix, key.Scopes, key.AllowIPs))
		_, err := e.store.InsertAPIKey(ctx, key, false, log)
		return plain, err
	})
}

// retryPrefix retries a key insert whose random prefix was taken (62^8
// prefixes make that rare; several in a row mean something else is wrong).
func retryPrefix(insert func() (NewKey, error)) (NewKey, error) {
	for range 4 {
		k, err := insert()
		if !errors.Is(err, ErrConflict) {
			return k, err
		}
	}
	return NewKey{}, errors.New("payoutkit: could not find a free API key prefix")
}

// APIKeys lists the workspace's keys.
func (e *Engine) APIKeys(ctx context.Context, workspaceID string) ([]APIKey, error) {
	if _, err := e.workspace(ctx, workspaceID); err != nil {
		return nil, err
	}
	return e.store.APIKeys(ctx, workspaceID)
}

// RevokeAPIKey revokes the workspace's active key with prefix (with or
// without "sk_") from the next request on, everywhere, and returns how many
// it revoked; revoking none records nothing.
func (e *Engine) RevokeAPIKey(ctx context.Context, workspaceID, prefix string, by Actor) (int, error) {
	prefix = strings.TrimPrefix(prefix, keyScheme)
	if len(prefix) != keyPrefixLen {
		return 0, invalidField("prefix", fmt.Sprintf("must be %d characters", keyPrefixLen))
	}
	if _, err := e.workspace(ctx, workspaceID); err != nil {
		return 0, err
	}
	if err := by.confirm(ctx); err != nil {
		return 0, err
	}
	now := e.clock()
	log := logEntry(workspaceID, now, ActionKeyRevoked, by, map[string]string{"prefix": prefix})
	return e.store.RevokeAPIKeys(ctx, workspaceID, prefix, now, log)
}

// ResetAPIKeys revokes every active key of the workspace and returns one new
// key, with every scope and any address, atomically.
func (e *Engine) ResetAPIKeys(ctx context.Context, workspaceID string, by Actor) (NewKey, error) {
	if _, err := e.workspace(ctx, workspaceID); err != nil {
		return NewKey{}, err
	}
	if err := by.confirm(ctx); err != nil {
		return NewKey{}, err
	}
	return retryPrefix(func() (NewKey, error) {
		plain, key := e.newAPIKey(workspaceID, AllScopes(), nil)
		log := logEntry(workspaceID, key.CreatedAt, ActionKeysReset, by, keyDetails(key.Prefix, key.Scopes, key.AllowIPs))
		_, err := e.store.InsertAPIKey(ctx, key, true, log)
		return plain, err
	})
}

// Workspace returns one workspace with its webhook secret opened; one that
// does not open is a *seal.Error (seal.ErrKeyMissing or seal.ErrInvalid).
func (e *Engine) Workspace(ctx context.Context, workspaceID string) (Workspace, error) {
	ws, err := e.workspace(ctx, workspaceID)
	if err != nil {
		return Workspace{}, err
	}
	return e.openWorkspace(ws)
}

// openWorkspace replaces the stored form of ws's secret by the secret.
func (e *Engine) openWorkspace(ws Workspace) (Workspace, error) {
	secret, err := e.keys.Open(ws.ID, ws.WebhookSecret)
	if err != nil {
		return Workspace{}, err
	}
	ws.WebhookSecret = secret
	return ws, nil
}

// workspace returns a workspace as stored: its secret may be sealed, so it
// must not leave the engine without openWorkspace.
func (e *Engine) workspace(ctx context.Context, id string) (Workspace, error) {
	ws, err := e.store.Workspace(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Workspace{}, errNotFound("workspace")
	}
	return ws, err
}

// SetWebhookURL sets where the workspace's events are sent, http or https;
// empty stops sending. The log leaves out the URL's password.
func (e *Engine) SetWebhookURL(ctx context.Context, workspaceID, webhookURL string, by Actor) (Workspace, error) {
	var v validation
	checkWebhookURL(&v, webhookURL)
	if err := v.err(); err != nil {
		return Workspace{}, err
	}
	ws, err := e.workspace(ctx, workspaceID)
	if err != nil {
		return Workspace{}, err
	}
	opened, err := e.openWorkspace(ws) // the answer carries the secret
	if err != nil {
		return Workspace{}, err
	}
	opened.WebhookURL = webhookURL
	if err := by.confirm(ctx); err != nil {
		return Workspace{}, err
	}
	log := logEntry(ws.ID, e.clock(), ActionWebhookURLSet, by, map[string]string{"url": redactURL(webhookURL)})
	if err := e.store.SetWebhook(ctx, ws.ID, webhookURL, ws.WebhookSecret, log); err != nil {
		return Workspace{}, err
	}
	return opened, nil
}

// RotateWebhookSecret gives the workspace a new signing secret for the
// events signed from now on, even when the old one no longer opens.
func (e *Engine) RotateWebhookSecret(ctx context.Context, workspaceID string, by Actor) (Workspace, error) {
	ws, err := e.workspace(ctx, workspaceID)
	if err != nil {
		return Workspace{}, err
	}
	if err := by.confirm(ctx); err != nil {
		return Workspace{}, err
	}
	ws.WebhookSecret = newWebhookSecret()
	stored, err := e.keys.Seal(ws.ID, ws.WebhookSecret)
	if err != nil {
		return Workspace{}, err
	}
	log := logEntry(ws.ID, e.clock(), ActionWebhookSecretRotated, by, nil)
	if err := e.store.SetWebhook(ctx, ws.ID, ws.WebhookURL, stored, log); err != nil {
		return Workspace{}, err
	}
	return ws, nil
}

func newWebhookSecret() string { return "whsec_" + random.Base62(48) }

func checkWebhookURL(v *validation, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	switch {
	case len(raw) > 2048:
		v.add("webhook_url", "must be at most 2048 characters")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		v.add("webhook_url", "must be an absolute http or https URL")
	}
}

func checkEmail(v *validation, email string) {
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 {
		v.add("staff_email", "must be an e-mail address")
	}
}
