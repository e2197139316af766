package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/seal"
	"github.com/payoutkit/payoutkit/staff"
)

// workspaceJSON is what workspace create (and the first serve) prints.
type workspaceJSON struct {
	WorkspaceID   string `json:"workspace_id"`
	APIKey        string `json:"api_key"`
	WebhookSecret string `json:"webhook_secret"`
	StaffEmail    string `json:"staff_email"`
	StaffPassword string `json:"staff_password"`
}

func newWorkspaceJSON(nw payoutkit.NewWorkspace) workspaceJSON {
	return workspaceJSON{
		WorkspaceID: nw.Workspace.ID, APIKey: nw.APIKey.Key, WebhookSecret: nw.Workspace.WebhookSecret,
		StaffEmail: nw.StaffEmail, StaffPassword: nw.StaffPassword,
	}
}

func printJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// adminBusyTimeout is how long an admin command waits for SQLite's write
// lock. A command opens its store with sqlite.WithPriorityWrites, so a
// server beside it pauses between its group commits while the command runs,
// and the command gets the lock at its next try (well within a second, even
// under a heavy write load); the wait only bounds the unexpected, such as
// another process holding a long transaction.
const adminBusyTimeout = 30 * time.Second

// adminStore opens an existing database for one command, never making or
// migrating one.
func adminStore(ctx context.Context, dsn string, log *slog.Logger) (sqlStore, error) {
	return openStore(ctx, dsn, log, asAdmin())
}

// adminOpen opens an existing database (never making or migrating one)
// for one command, with the server's secret keys and a logger to stderr.
func adminOpen(ctx context.Context, dsn string, stderr io.Writer) (sqlStore, *seal.KeyRing, *slog.Logger, error) {
	log := newLogger(stderr, "json")
	keys, err := secretKeys(dsn, os.Getenv(envSecretKeyFile), false)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := adminStore(ctx, dsn, log)
	if err != nil {
		return nil, nil, nil, err
	}
	return store, keys.ring, log, nil
}

// adminEngine is adminOpen with an engine over the database.
func adminEngine(ctx context.Context, dsn string, stderr io.Writer) (*payoutkit.Engine, func(), error) {
	store, ring, log, err := adminOpen(ctx, dsn, stderr)
	if err != nil {
		return nil, nil, err
	}
	engine, err := payoutkit.New(store, &payoutkit.Config{Logger: log, PasswordCost: passwordCost, SecretKeys: ring})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return engine, func() { store.Close() }, nil
}

// adminTeam is adminOpen with the staff's team over the database.
func adminTeam(ctx context.Context, dsn string, stderr io.Writer) (*staff.Team, func(), error) {
	store, ring, log, err := adminOpen(ctx, dsn, stderr)
	if err != nil {
		return nil, nil, err
	}
	team, err := staff.New(store, &staff.Config{Logger: log, PasswordCost: passwordCost, SecretKeys: ring})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return team, func() { store.Close() }, nil
}

// workspaceCreateCommand creates a workspace and prints its credentials.
func workspaceCreateCommand(fs *flag.FlagSet) runFunc {
	dsn := dbFlag(fs)
	name := fs.String("name", "", "the workspace's `name` (required)")
	webhookURL := fs.String("webhook-url", "", "where the workspace's events are sent (http or https `URL`)")
	staffEmail := fs.String("staff-email", "", "the first staff user's `e-mail` (default: admin+<workspace id>@payoutkit.local)")
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		if *name == "" {
			return usagef("workspace create: -name is required")
		}
		engine, done, err := creatingEngine(ctx, *dsn, stderr)
		if err != nil {
			return err
		}
		defer done()
		nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{
			Name: *name, WebhookURL: *webhookURL, StaffEmail: *staffEmail,
		})
		if err != nil {
			return err
		}
		return printJSON(stdout, newWorkspaceJSON(nw))
	}
}

// keyJSON is one row of keys list.
type keyJSON struct {
	Prefix     string   `json:"prefix"`
	CreatedAt  string   `json:"created_at"`
	RevokedAt  *string  `json:"revoked_at"`
	LastUsedAt *string  `json:"last_used_at"`
	Scopes     []string `json:"scopes"`
	AllowIPs   []string `json:"allow_ips"`
}

// newKeyJSON is what keys create prints: the key once, with its controls.
type newKeyJSON struct {
	APIKey   string   `json:"api_key"`
	Prefix   string   `json:"prefix"`
	Scopes   []string `json:"scopes"`
	AllowIPs []string `json:"allow_ips"`
}

// scopeStrings writes scopes as a JSON array, never null.
func scopeStrings(scopes []payoutkit.Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// splitCommas splits a flag's comma-separated list, dropping empty entries.
func splitCommas(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' })
}

func timeOrNull(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

// keysCommand creates, lists, revokes or resets API keys.
func keysCommand(sub string) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		dsn := dbFlag(fs)
		ws := workspaceFlag(fs)
		var prefix, scopes, allowIPs *string
		switch sub {
		case "revoke":
			prefix = fs.String("prefix", "", "the key `prefix` to revoke (required)")
		case "create":
			scopes = fs.String("scopes", "orders:write,payouts:write", "what the key may write: a comma-separated `list` of orders:write and payouts:write, or read for neither")
			allowIPs = fs.String("allow-ips", "", "the client addresses the key may be used from: a comma-separated `list` of IPv4/IPv6 addresses and CIDR ranges (default: any)")
		}
		return func(ctx context.Context, stdout, stderr io.Writer) error {
			if *ws == "" {
				return usagef("keys %s: -workspace is required", sub)
			}
			if prefix != nil && *prefix == "" {
				return usagef("keys revoke: -prefix is required")
			}
			var req payoutkit.CreateAPIKeyRequest
			if sub == "create" {
				var err error
				if req.Scopes, err = payoutkit.ParseScopes(*scopes); err != nil {
					return usagef("keys create: -scopes: %v", err)
				}
				req.AllowIPs = splitCommas(*allowIPs)
				if _, err := payoutkit.ParseAllowIPs(req.AllowIPs); err != nil {
					return usagef("keys create: -allow-ips: %v", err)
				}
			}
			engine, done, err := adminEngine(ctx, *dsn, stderr)
			if err != nil {
				return err
			}
			defer done()
			switch sub {
			case "create":
				k, err := engine.CreateAPIKey(ctx, *ws, req, payoutkit.ActorCLI)
				if err != nil {
					return err
				}
				return printJSON(stdout, newKeyJSON{
					APIKey: k.Key, Prefix: k.Prefix, Scopes: scopeStrings(k.Scopes), AllowIPs: payoutkit.FormatAllowIPs(k.AllowIPs),
				})
			case "reset":
				k, err := engine.ResetAPIKeys(ctx, *ws, payoutkit.ActorCLI)
				if err != nil {
					return err
				}
				return printJSON(stdout, k)
			case "list":
				list, err := engine.APIKeys(ctx, *ws)
				if err != nil {
					return err
				}
				out := make([]keyJSON, 0, len(list))
				for _, k := range list {
					out = append(out, keyJSON{
						Prefix: k.Prefix, CreatedAt: k.CreatedAt.UTC().Format(time.RFC3339),
						RevokedAt: timeOrNull(k.RevokedAt), LastUsedAt: timeOrNull(k.LastUsedAt),
						Scopes: scopeStrings(k.Scopes), AllowIPs: payoutkit.FormatAllowIPs(k.AllowIPs),
					})
				}
				return printJSON(stdout, out)
			default: // revoke
				n, err := engine.RevokeAPIKey(ctx, *ws, *prefix, payoutkit.ActorCLI)
				if err != nil {
					return err
				}
				if n == 0 {
					return noKeyRevoked(ctx, engine, *ws, *prefix, stdout, stderr)
				}
				return printJSON(stdout, map[string]int{"revoked": n})
			}
		}
	}
}

// noKeyRevoked answers a revoke that revoked nothing. A key revoked already
// is what was asked: it prints {"revoked":0} and says on stderr when it was
// revoked. A prefix that no key of the workspace has is a mistake that must
// not look like success (a typo during an incident): it fails.
func noKeyRevoked(ctx context.Context, engine *payoutkit.Engine, ws, prefix string, stdout, stderr io.Writer) error {
	list, err := engine.APIKeys(ctx, ws)
	if err != nil {
		return err
	}
	prefix = strings.TrimPrefix(prefix, "sk_")
	for _, k := range list {
		if k.Prefix == prefix && !k.RevokedAt.IsZero() {
			newLogger(stderr, "json").Info("keys revoke: the key was revoked already", "prefix", prefix, "revoked_at", *timeOrNull(k.RevokedAt))
			return printJSON(stdout, map[string]int{"revoked": 0})
		}
	}
	return fmt.Errorf("keys revoke: workspace %s has no key with prefix %s (nothing was revoked; `server keys list` shows the prefixes)", ws, prefix)
}

// workspaceFlag defines the -workspace flag of the commands on one
// workspace.
func workspaceFlag(fs *flag.FlagSet) *string {
	return fs.String("workspace", "", "the workspace `id` (required)")
}

// webhookCommand sets the webhook URL, rotates the secret, lists the
// events or sends one again.
func webhookCommand(sub string) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		dsn := dbFlag(fs)
		ws := workspaceFlag(fs)
		var u *string
		var eventID *string
		switch sub {
		case "set":
			u = fs.String("url", "", "where the workspace's events are sent: an http or https `URL`, or empty to stop sending")
		case "resend":
			eventID = fs.String("event", "", "the `id` of the event to send again (required)")
		}
		return func(ctx context.Context, stdout, stderr io.Writer) error {
			if *ws == "" {
				return usagef("webhook %s: -workspace is required", sub)
			}
			if eventID != nil && *eventID == "" {
				return usagef("webhook resend: -event is required")
			}
			engine, done, err := adminEngine(ctx, *dsn, stderr)
			if err != nil {
				return err
			}
			defer done()
			switch sub {
			case "events":
				return listEvents(ctx, engine, *ws, stdout)
			case "resend":
				if err := engine.ResendEvent(ctx, *ws, *eventID); err != nil {
					return err
				}
				return printJSON(stdout, map[string]string{"event_id": *eventID, "state": string(payoutkit.DeliveryPending)})
			}
			if sub == "set" {
				w, err := engine.SetWebhookURL(ctx, *ws, *u, payoutkit.ActorCLI)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]string{"workspace_id": w.ID, "webhook_url": w.WebhookURL})
			}
			w, err := engine.RotateWebhookSecret(ctx, *ws, payoutkit.ActorCLI)
			if err != nil {
				return err
			}
			return printJSON(stdout, map[string]string{"workspace_id": w.ID, "webhook_secret": w.WebhookSecret})
		}
	}
}

// eventJSON is one row of webhook events.
type eventJSON struct {
	ID            string  `json:"id"`
	Type          string  `json:"type"`
	Subject       string  `json:"subject"`
	CreatedAt     string  `json:"created_at"`
	State         string  `json:"state"`
	Attempts      int     `json:"attempts"`
	NextAttemptAt *string `json:"next_attempt_at"`
	LastError     *string `json:"last_error"`
}

// listEvents prints the workspace's latest events (up to 500) with their
// delivery state, newest first.
func listEvents(ctx context.Context, engine *payoutkit.Engine, ws string, stdout io.Writer) error {
	page, err := engine.ListEvents(ctx, ws, payoutkit.ListEventsRequest{Limit: payoutkit.MaxListLimit})
	if err != nil {
		return err
	}
	out := make([]eventJSON, 0, len(page.Items))
	for _, ev := range page.Items {
		row := eventJSON{
			ID: ev.ID, Type: string(ev.Type), Subject: ev.Subject, CreatedAt: ev.CreatedAt.UTC().Format(time.RFC3339),
			State: string(ev.State), Attempts: ev.Attempts,
		}
		if ev.State == payoutkit.DeliveryPending {
			row.NextAttemptAt = timeOrNull(ev.NextAttemptAt)
		}
		if ev.LastError != "" {
			row.LastError = &ev.LastError
		}
		out = append(out, row)
	}
	return printJSON(stdout, out)
}

// staffCommand adds a staff login with a role (printing its password
// once), removes one (ending their portal sessions on every instance; never
// the last admin), or turns off the two-factor sign-in of one who lost
// their device.
func staffCommand(sub string) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		dsn := dbFlag(fs)
		ws := workspaceFlag(fs)
		email := fs.String("email", "", "the staff user's `e-mail` (required)")
		var roleName *string
		if sub == "add" {
			roleName = fs.String("role", "viewer", "the new user's `role`: admin, developer or viewer")
		}
		return func(ctx context.Context, stdout, stderr io.Writer) error {
			if *ws == "" || *email == "" {
				return usagef("staff %s: -workspace and -email are required", sub)
			}
			var role payoutkit.Role
			if roleName != nil {
				var err error
				if role, err = staff.ParseRole(*roleName); err != nil {
					return usagef("staff add: -role must be admin, developer or viewer")
				}
			}
			team, done, err := adminTeam(ctx, *dsn, stderr)
			if err != nil {
				return err
			}
			defer done()
			switch sub {
			case "add":
				ns, err := team.AddUser(ctx, *ws, *email, role, payoutkit.ActorCLI)
				if err != nil {
					return err
				}
				return printJSON(stdout, ns)
			case "reset-2fa":
				if err := team.ResetTOTP(ctx, *ws, *email, payoutkit.ActorCLI); err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"staff_email": strings.ToLower(*email), "two_factor": false})
			}
			n, err := team.RemoveUser(ctx, *ws, *email, payoutkit.ActorCLI)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("staff remove: workspace %s has no staff login %s (nothing was removed)", *ws, *email)
			}
			return printJSON(stdout, map[string]int{"removed": n})
		}
	}
}

// auditJSON is what audit prints.
type auditJSON struct {
	// OK is false when any workspace breaks a money invariant, or any row
	// is an orphan.
	OK         bool                 `json:"ok"`
	Workspaces []workspaceAuditJSON `json:"workspaces"`
	// Orphans are the kinds of rows found whose workspace or parent row is
	// gone, with their counts: none ([]) in a sound database.
	Orphans []orphansJSON `json:"orphans"`
	Outbox  outboxJSON    `json:"outbox"`
}

// orphansJSON is one kind of orphaned row: Count rows of Table whose
// Column names no row of Parent ("workspaces.id").
type orphansJSON struct {
	Table  string `json:"table"`
	Column string `json:"column"`
	Parent string `json:"parent"`
	Count  int64  `json:"count"`
}

type workspaceAuditJSON struct {
	WorkspaceID string  `json:"workspace_id"`
	OK          bool    `json:"ok"`
	Error       *string `json:"error"`

	Available           payoutkit.Amount `json:"available"`
	InProgress          payoutkit.Amount `json:"in_progress"`
	LedgerSum           payoutkit.Amount `json:"ledger_sum"`
	PaidOrders          payoutkit.Amount `json:"paid_orders"`
	SubmittedPayouts    payoutkit.Amount `json:"submitted_payouts"`
	CompletedPayouts    payoutkit.Amount `json:"completed_payouts"`
	CustomersPaidIn     payoutkit.Amount `json:"customers_paid_in"`
	CustomersPaidOut    payoutkit.Amount `json:"customers_paid_out"`
	CustomersInProgress payoutkit.Amount `json:"customers_in_progress"`
}

type outboxJSON struct {
	Pending       int64   `json:"pending"`
	Delivered     int64   `json:"delivered"`
	Failed        int64   `json:"failed"`
	NotSent       int64   `json:"not_sent"`
	OldestPending *string `json:"oldest_pending_at"`
}

// errAuditFailed and errOrphans make audit exit non-zero after printing its
// report.
var (
	errAuditFailed = errors.New("audit: a money invariant is broken (see the report on stdout)")
	errOrphans     = errors.New("audit: rows name a workspace or parent row that does not exist (see orphans in the report on stdout)")
)

// auditCommand recomputes every workspace's money from its rows, looks for
// rows whose workspace or parent row is gone, and reports the outbox's
// state; it fails when an invariant is broken or a row is an orphan. On
// SQLite the foreign keys refuse orphans; on PostgreSQL the tables every
// payout writes have none (docs/STORAGE.md), so the audit is their check.
func auditCommand(fs *flag.FlagSet) runFunc {
	dsn := dbFlag(fs)
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		// The audit reads rows, not the engine: it runs over the store alone.
		store, err := adminStore(ctx, *dsn, newLogger(stderr, "json"))
		if err != nil {
			return err
		}
		defer store.Close()
		ids, err := store.WorkspaceIDs(ctx)
		if err != nil {
			return err
		}
		report := auditJSON{OK: true, Workspaces: make([]workspaceAuditJSON, 0, len(ids))}
		for _, id := range ids {
			a, err := store.Audit(ctx, id)
			if err != nil {
				return err
			}
			w := workspaceAuditJSON{
				WorkspaceID: id, OK: true,
				Available: a.Available, InProgress: a.InProgress, LedgerSum: a.LedgerSum, PaidOrders: a.PaidOrders,
				SubmittedPayouts: a.SubmittedPayouts, CompletedPayouts: a.CompletedPayouts,
				CustomersPaidIn: a.CustomersPaidIn, CustomersPaidOut: a.CustomersPaidOut, CustomersInProgress: a.CustomersInProgress,
			}
			if err := a.Check(); err != nil {
				msg := err.Error()
				w.OK, w.Error, report.OK = false, &msg, false
			}
			report.Workspaces = append(report.Workspaces, w)
		}
		moneyOK := report.OK
		counts, err := store.Orphans(ctx)
		if err != nil {
			return err
		}
		report.Orphans = []orphansJSON{}
		for _, c := range counts {
			if c.Count > 0 {
				report.Orphans = append(report.Orphans, orphansJSON{Table: c.Table, Column: c.Column, Parent: c.Parent, Count: c.Count})
				report.OK = false
			}
		}
		h, err := store.OutboxHealth(ctx)
		if err != nil {
			return err
		}
		report.Outbox = outboxJSON{Pending: h.Pending, Delivered: h.Delivered, Failed: h.Failed, NotSent: h.NotSent, OldestPending: timeOrNull(h.OldestPending)}
		if err := printJSON(stdout, report); err != nil {
			return err
		}
		var failed []error
		if !moneyOK {
			failed = append(failed, errAuditFailed)
		}
		if len(report.Orphans) > 0 {
			failed = append(failed, errOrphans)
		}
		return errors.Join(failed...)
	}
}
