// Command server is the standalone payoutkit server: the /v1 API and the
// staff portal over SQLite or PostgreSQL, with webhook delivery, plus the
// admin commands that manage workspaces, API keys, webhook destinations and
// staff logins.
//
//	server [serve] [-addr :8080] [-db ./payoutkit.db] [-sandbox=true]
//	       [-sandbox-settle-after 0] [-processor sandbox|evm] [-evm-config FILE]
//	       [-rate-limit 0] [-trusted-proxies <CIDR,...>]
//	       [-portal=true] [-log-format json]
//	server workspace create -db <db> -name <name> [-webhook-url <url>] [-staff-email <email>]
//	server keys create -db <db> -workspace <id> [-scopes orders:write,payouts:write|read]
//	       [-allow-ips <address or CIDR,...>]
//	server keys reset|list -db <db> -workspace <id>
//	server keys revoke -db <db> -workspace <id> -prefix <prefix>
//	server webhook set -db <db> -workspace <id> -url <url>
//	server webhook rotate-secret -db <db> -workspace <id>
//	server webhook events -db <db> -workspace <id>
//	server webhook resend -db <db> -workspace <id> -event <event id>
//	server staff add|remove|reset-password -db <db> -workspace <id> -email <e-mail>
//	server audit -db <db>
//	server secrets reseal -db <db>
//	server migrate -db <db>
//
// Every serve flag is also read from the environment as PAYOUTKIT_<NAME>
// (upper case, dashes as underscores: PAYOUTKIT_SANDBOX_SETTLE_AFTER); a
// flag on the command line wins. The admin commands read PAYOUTKIT_DB too.
//
// -db is a SQLite file path (or "file:" URL) or a "postgres://" URL.
//
// Every workspace's webhook secret is sealed at rest with AES-256-GCM under
// PAYOUTKIT_SECRET_KEY (base64 of 32 random bytes) when it is set, read from
// the environment only; otherwise under the key file that the first start
// makes beside a SQLite database (<db>.secret-key, or serve's
// -secret-key-file, which the admin commands read as
// PAYOUTKIT_SECRET_KEY_FILE). PostgreSQL has no default key file, since
// instances on several machines must share one key: without either, its
// secrets are stored plain and serve warns once. PAYOUTKIT_SECRET_KEY_PREVIOUS
// (comma separated) lists older keys that still open what they sealed, and
// secrets reseal moves every secret to the current key. Every command finds
// the keys the same way.
//
// Commands print their JSON alone on stdout; logs and errors go to stderr,
// and a failure exits non-zero. serve binds its address before anything
// else, so that a start that cannot serve creates nothing. On an empty
// database, serve first creates a workspace with a staff login and an API
// key and prints them once, as workspace create does, and writes them to a
// credentials file readable by its owner alone (-credentials-file; beside
// a SQLite database by default), never over an existing one. Every command
// but serve and workspace create refuses a database that does not exist or
// whose schema is older than the binary's, creating and migrating nothing;
// migrate upgrades it. SIGTERM or SIGINT drains in-flight requests and
// exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

// defaultGCPercent is the server's GOGC when the environment sets none. The
// server's live heap is small and its garbage is per request, so collecting
// at four times the live heap instead of twice trades a little memory for
// less CPU per payout (docs/PERFORMANCE.md). GOGC in the environment wins,
// as in any Go program.
const defaultGCPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const usage = `usage:
  server [serve] [-addr :8080] [-db ./payoutkit.db] [-sandbox=true] [-sandbox-settle-after 0] [-processor sandbox|evm] [-evm-config FILE] [-rate-limit 0] [-trusted-proxies <CIDR,...>] [-portal=true] [-log-format json]
  server workspace create -db <db> -name <name> [-webhook-url <url>] [-staff-email <email>]
  server keys create -db <db> -workspace <id> [-scopes orders:write,payouts:write|read] [-allow-ips <address or CIDR,...>]
  server keys reset|list -db <db> -workspace <id>
  server keys revoke -db <db> -workspace <id> -prefix <prefix>
  server webhook set -db <db> -workspace <id> -url <url>
  server webhook rotate-secret -db <db> -workspace <id>
  server webhook events -db <db> -workspace <id>
  server webhook resend -db <db> -workspace <id> -event <event id>
  server staff add|remove|reset-password -db <db> -workspace <id> -email <e-mail>
  server workspace policy -db <db> -workspace <id> [-max-payout <usd>] [-daily-limit <usd>] [-approval-over <usd>] [-address-allowlist on|off] [-cooling-off <duration>]
  server addresses add -db <db> -workspace <id> -network <network> -address <address> [-label <label>]
  server addresses list -db <db> -workspace <id>
  server addresses remove -db <db> -workspace <id> -network <network> -address <address>
  server payouts approve|reject -db <db> -workspace <id> -payout-id <id> [-reason <text>]
  server security-log -db <db> -workspace <id>
  server audit -db <db>
  server secrets reseal -db <db>
  server migrate -db <db>
`

// run runs one command. It is main without the process: tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || len(args[0]) > 0 && args[0][0] == '-' && args[0] != "-h" && args[0] != "-help" && args[0] != "--help" {
		return serve(ctx, args, stdout, stderr)
	}
	cmd, rest := args[0], args[1:]
	sub := ""
	if len(rest) > 0 {
		sub = rest[0]
	}
	switch {
	case cmd == "serve":
		return serve(ctx, rest, stdout, stderr)
	case cmd == "workspace" && sub == "create":
		return workspaceCreate(ctx, rest[1:], stdout, stderr)
	case cmd == "keys" && (sub == "create" || sub == "reset" || sub == "list" || sub == "revoke"):
		return keys(ctx, sub, rest[1:], stdout, stderr)
	case cmd == "webhook" && (sub == "set" || sub == "rotate-secret" || sub == "events" || sub == "resend"):
		return webhook(ctx, sub, rest[1:], stdout, stderr)
	case cmd == "secrets" && sub == "reseal":
		return secretsReseal(ctx, rest[1:], stdout, stderr)
	case cmd == "audit":
		return audit(ctx, rest, stdout, stderr)
	case cmd == "staff" && (sub == "add" || sub == "remove"):
		return staff(ctx, sub, rest[1:], stdout, stderr)
	case cmd == "staff" && sub == "reset-password":
		return staffResetPassword(ctx, rest[1:], stdout, stderr)
	case cmd == "migrate":
		return migrateCommand(ctx, rest, stdout, stderr)
	case cmd == "workspace" && sub == "policy":
		return workspacePolicy(ctx, rest[1:], stdout, stderr)
	case cmd == "addresses" && (sub == "add" || sub == "list" || sub == "remove"):
		return addresses(ctx, sub, rest[1:], stdout, stderr)
	case cmd == "payouts" && (sub == "approve" || sub == "reject"):
		return payoutDecision(ctx, sub, rest[1:], stdout, stderr)
	case cmd == "security-log":
		return securityLog(ctx, rest, stdout, stderr)
	case cmd == "help" || cmd == "-h" || cmd == "-help" || cmd == "--help":
		fmt.Fprint(stderr, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usagef("unknown command %q", strings.Join(args[:min(2, len(args))], " "))
	}
}
