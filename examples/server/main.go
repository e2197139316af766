// Command server is the standalone payoutkit server: the /v1 API and the
// staff portal over SQLite or PostgreSQL, with webhook delivery, plus the
// admin commands that manage workspaces, API keys, webhook destinations and
// staff logins.
//
//	server [serve] [flags]     serve (flags alone run it)
//	server <command> [flags]   an admin command: workspace create, keys create, ...
//	server <command> -h        a command's flags, each with its variable
//	server help [command]      the same; alone, the list of commands
//	server version             the module's version and VCS revision
//
// Every command is defined once, in commands.go, from which its help, its
// usage errors and the README's tables of commands and configuration come.
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
// Commands print their JSON alone on stdout; logs and errors go to stderr.
// The exit status is 0 when a command did what it says (help included), 1
// when it failed (a database it cannot open, something it cannot find), 2
// for a mistake in the command line (an unknown command or flag, a missing
// or bad value).
//
// serve binds its address before anything else, so that a start that
// cannot serve creates nothing. On an empty
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
	"os"
	"os/signal"
	"runtime/debug"
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
