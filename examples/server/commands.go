package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
)

// runFunc runs a command once its flags are parsed.
type runFunc func(ctx context.Context, stdout, stderr io.Writer) error

// cliCommand is one command of the server, defined once: its help, its usage
// errors, its run and the README's tables all come from here.
type cliCommand struct {
	// name is the words after "server": "keys create".
	name string
	// summary says what it does, in a line.
	summary string
	// define defines the command's flags on fs and returns what runs the
	// command with them.
	define func(fs *flag.FlagSet) runFunc
	// env lists the flags also read from their PAYOUTKIT_<NAME> variable;
	// allEnv reads every flag so.
	env    []string
	allEnv bool
	// sealing is set where the command opens webhook secrets, and so reads
	// the sealing keys' variables.
	sealing bool
}

// dbEnv is the env of the admin commands: -db alone.
var dbEnv = []string{"db"}

// groups are the commands that only group subcommands, with their summary.
var groups = []struct{ name, summary string }{
	{"workspace", "workspaces and their payout policy"},
	{"keys", "a workspace's API keys"},
	{"webhook", "a workspace's webhook destination and events"},
	{"staff", "a workspace's staff portal logins"},
	{"addresses", "a workspace's address book (the address allowlist)"},
	{"payouts", "payouts held for approval, and batches of payouts"},
	{"secrets", "webhook secrets at rest"},
}

// commands are every command of the server, in the order help lists them.
// It is filled by init: the help command reads it.
var commands []cliCommand

func init() {
	commands = []cliCommand{
		{name: "serve", summary: "serve the /v1 API, the staff portal and webhook delivery (the default command)", define: serveCommand, allEnv: true, sealing: true},
		{name: "workspace create", summary: "create a workspace with an API key and a staff login, printed once (makes and migrates the database if needed)", define: workspaceCreateCommand, env: dbEnv, sealing: true},
		{name: "workspace policy", summary: "print the workspace's payout policy, after setting the limits given", define: workspacePolicyCommand, env: dbEnv, sealing: true},
		{name: "keys create", summary: "create an API key, printed once", define: keysCommand("create"), env: dbEnv, sealing: true},
		{name: "keys list", summary: "list the workspace's API keys (never the keys themselves)", define: keysCommand("list"), env: dbEnv, sealing: true},
		{name: "keys revoke", summary: "revoke the API key with a prefix; fails when no key has it", define: keysCommand("revoke"), env: dbEnv, sealing: true},
		{name: "keys reset", summary: "revoke every API key of the workspace and create one, printed once", define: keysCommand("reset"), env: dbEnv, sealing: true},
		{name: "webhook set", summary: "set (or, empty, clear) the URL the workspace's events are sent to", define: webhookCommand("set"), env: dbEnv, sealing: true},
		{name: "webhook rotate-secret", summary: "give the workspace a new webhook secret, printed once", define: webhookCommand("rotate-secret"), env: dbEnv, sealing: true},
		{name: "webhook events", summary: "list the workspace's latest events with their delivery state", define: webhookCommand("events"), env: dbEnv, sealing: true},
		{name: "webhook resend", summary: "send an event again", define: webhookCommand("resend"), env: dbEnv, sealing: true},
		{name: "staff add", summary: "add a staff login with a role, its password printed once", define: staffCommand("add"), env: dbEnv, sealing: true},
		{name: "staff remove", summary: "remove a staff login and end its sessions; fails when there is none", define: staffCommand("remove"), env: dbEnv, sealing: true},
		{name: "staff reset-2fa", summary: "turn off a staff login's two-factor sign-in (a lost device)", define: staffCommand("reset-2fa"), env: dbEnv, sealing: true},
		{name: "staff reset-password", summary: "give a staff login a new password, printed once, and end its sessions", define: staffResetPasswordCommand, env: dbEnv, sealing: true},
		{name: "addresses add", summary: "add an address to the workspace's address book", define: addressesCommand("add"), env: dbEnv, sealing: true},
		{name: "addresses list", summary: "list the workspace's address book", define: addressesCommand("list"), env: dbEnv, sealing: true},
		{name: "addresses remove", summary: "remove an address from the address book; fails when it is not there", define: addressesCommand("remove"), env: dbEnv, sealing: true},
		{name: "payouts approve", summary: "release a payout held for approval", define: payoutDecisionCommand("approve"), env: dbEnv, sealing: true},
		{name: "payouts reject", summary: "reject a payout held for approval, giving its money back", define: payoutDecisionCommand("reject"), env: dbEnv, sealing: true},
		{name: "payouts batch", summary: "create a batch of payouts from a CSV file and print it; the same file again replays it", define: payoutsBatchCommand, env: dbEnv, sealing: true},
		{name: "security-log", summary: "print the workspace's security log, newest first", define: securityLogCommand, env: dbEnv, sealing: true},
		{name: "audit", summary: "recompute every workspace's money from its rows and look for orphaned rows; fails when an invariant is broken", define: auditCommand, env: dbEnv},
		{name: "secrets reseal", summary: "seal every webhook secret with the current sealing key", define: secretsResealCommand, env: dbEnv, sealing: true},
		{name: "migrate", summary: "bring an existing database's schema up to this binary's", define: migrateCommand, env: dbEnv},
		{name: "version", summary: "print the module's version and the VCS revision it was built from", define: versionCommand},
		{name: "help", summary: "print the help of a command: server help [command]", define: func(*flag.FlagSet) runFunc { return nil }},
	}
}

// lookupCommand returns the command named name, or nil.
func lookupCommand(name string) *cliCommand {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// isGroup reports whether name is a group of subcommands.
func isGroup(name string) bool {
	return slices.ContainsFunc(groups, func(g struct{ name, summary string }) bool { return g.name == name })
}

func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h"
}

// run runs one command. It is main without the process: tests call it.
// Help asked for is printed on stdout and returns nil; a mistake in the
// command line is a usageError.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch {
	case len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelpFlag(args[0]):
		return execute(ctx, lookupCommand("serve"), args, stdout, stderr)
	case isHelpFlag(args[0]):
		return writeHelp(stdout)
	case args[0] == "help":
		return help(stdout, args[1:])
	}
	name, rest := args[0], args[1:]
	if isGroup(name) {
		if len(rest) == 0 || isHelpFlag(rest[0]) || rest[0] == "help" {
			if len(rest) == 0 {
				writeGroupHelp(stderr, name)
				return usagef("%s: which command? (see above)", name)
			}
			writeGroupHelp(stdout, name)
			return nil
		}
		name, rest = name+" "+rest[0], rest[1:]
	}
	c := lookupCommand(name)
	if c == nil || c.name == "help" {
		return usagef("unknown command %q; run `server -h` for the list", name)
	}
	return execute(ctx, c, rest, stdout, stderr)
}

// execute parses args as c's flags and runs c.
func execute(ctx context.Context, c *cliCommand, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the errors are returned, the help written below
	fs.Usage = func() {}
	runCmd := c.define(fs)
	env := c.env
	if c.allEnv {
		env = nil
	} else if env == nil {
		env = []string{}
	}
	if err := parseFlags(fs, args, env); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeCommandHelp(stdout, c)
		}
		return usagef("%s: %v; run `server %s -h` for its flags", c.name, err, c.name)
	}
	return runCmd(ctx, stdout, stderr)
}

// help prints the help of the command named by words: the list of every
// command when there are none.
func help(stdout io.Writer, words []string) error {
	name := strings.Join(words, " ")
	switch {
	case name == "" || isHelpFlag(name):
		return writeHelp(stdout)
	case isGroup(name):
		writeGroupHelp(stdout, name)
		return nil
	}
	if c := lookupCommand(name); c != nil {
		return writeCommandHelp(stdout, c)
	}
	return usagef("help: unknown command %q; run `server -h` for the list", name)
}

const exitStatusHelp = `Every command prints its result as JSON alone on stdout; logs and errors go
to stderr. Exit status: 0 when the command did what it says (help included),
1 when it failed (a database it cannot open, a workspace, key, login or
address it cannot find, a broken invariant), 2 for a mistake in the command
line (an unknown command or flag, a missing or bad value).
`

// writeHelp writes the list of every command.
func writeHelp(w io.Writer) error {
	fmt.Fprint(w, `server: the payoutkit server (the /v1 API, the staff portal, webhook
delivery) over SQLite or PostgreSQL, and its admin commands.

usage:
  server [serve] [flags]       serve (the default command: flags alone run it)
  server <command> [flags]     run an admin command
  server <command> -h          the flags of a command, each with its PAYOUTKIT_* variable
  server help [command]        the same

commands:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, "\n"+exitStatusHelp)
	return nil
}

// writeGroupHelp writes the subcommands of a group.
func writeGroupHelp(w io.Writer, group string) {
	for _, g := range groups {
		if g.name == group {
			fmt.Fprintf(w, "server %s: %s\n\nusage: server %s <command> [flags]\n\ncommands:\n", g.name, g.summary, g.name)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		if sub, ok := strings.CutPrefix(c.name, group+" "); ok {
			fmt.Fprintf(tw, "  %s\t%s\n", sub, c.summary)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nrun `server %s <command> -h` for a command's flags.\n", group)
}

// flagHelp is one flag as help and the README show it.
type flagHelp struct {
	name, arg, usage, def, env string
}

// commandFlags returns c's flags, in the order flag.FlagSet lists them.
func commandFlags(c *cliCommand) []flagHelp {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.define(fs)
	var out []flagHelp
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		h := flagHelp{name: f.Name, arg: arg, usage: usage}
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "0s" {
			h.def = f.DefValue
		}
		if c.allEnv || slices.Contains(c.env, f.Name) {
			h.env = envName(f.Name)
		}
		out = append(out, h)
	})
	return out
}

// envHelp is a variable read from the environment only.
type envHelp struct{ name, usage string }

// sealingEnvHelp lists the variables of the sealing keys, read from the
// environment only.
var sealingEnvHelp = []envHelp{
	{envSecretKey, "the key that seals webhook secrets: base64 of 32 random bytes (openssl rand -base64 32); read from the environment only"},
	{envSecretKeyPrevious, "earlier keys (comma separated) that still open what they sealed, until `server secrets reseal`"},
	{envSecretKeyFile, "the key file used when " + envSecretKey + " is unset (default: <db>" + secretKeyFileSuffix + " beside a SQLite database)"},
}

// sealingEnv returns the variables of the sealing keys that are not the
// variable of one of flags already.
func sealingEnv(flags []flagHelp) []envHelp {
	var out []envHelp
	for _, e := range sealingEnvHelp {
		if !slices.ContainsFunc(flags, func(f flagHelp) bool { return f.env == e.name }) {
			out = append(out, e)
		}
	}
	return out
}

// writeCommandHelp writes a command's usage and flags.
func writeCommandHelp(w io.Writer, c *cliCommand) error {
	flags := commandFlags(c)
	usage := "server " + c.name
	if len(flags) > 0 {
		usage += " [flags]"
	}
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", usage, upperFirst(c.summary))
	if len(flags) > 0 {
		fmt.Fprint(w, "\nflags:\n")
	}
	for _, f := range flags {
		fmt.Fprintf(w, "  -%s", f.name)
		if f.arg != "" {
			fmt.Fprintf(w, " %s", f.arg)
		}
		fmt.Fprintf(w, "\n      %s", f.usage)
		if f.def != "" {
			fmt.Fprintf(w, " (default %s)", f.def)
		}
		fmt.Fprintln(w)
		if f.env != "" {
			fmt.Fprintf(w, "      env %s\n", f.env)
		}
	}
	if c.sealing {
		fmt.Fprint(w, "\nenvironment:\n")
		for _, e := range sealingEnv(flags) {
			fmt.Fprintf(w, "  %s\n      %s\n", e.name, e.usage)
		}
	}
	if len(flags) > 0 {
		fmt.Fprint(w, "\nA flag on the command line wins over its variable.\n")
	}
	return nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// versionJSON is what version prints.
type versionJSON struct {
	// Module and Version are the main module's path and version ("(devel)"
	// when built from a checkout).
	Module  string `json:"module"`
	Version string `json:"version"`
	// Payoutkit is the version of the payoutkit library built in.
	Payoutkit string `json:"payoutkit"`
	// Revision, Time and Modified describe the VCS checkout it was built
	// from, when the build recorded one.
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	Go       string `json:"go"`
}

// versionCommand prints the build's versions from its build information.
func versionCommand(*flag.FlagSet) runFunc {
	return func(_ context.Context, stdout, _ io.Writer) error {
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return errors.New("version: the binary carries no build information")
		}
		v := versionJSON{Module: bi.Main.Path, Version: bi.Main.Version, Go: bi.GoVersion, Payoutkit: bi.Main.Version}
		for _, d := range bi.Deps {
			if d.Path == "github.com/payoutkit/payoutkit" {
				v.Payoutkit = d.Version
				if d.Replace != nil {
					v.Payoutkit = d.Replace.Version
				}
			}
		}
		if v.Payoutkit == "" {
			v.Payoutkit = "(devel)"
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		return printJSON(stdout, v)
	}
}

// markdownCommands is the README's table of commands.
func markdownCommands() string {
	var b strings.Builder
	b.WriteString("| Command | Flags | What it does |\n|---|---|---|\n")
	for i := range commands {
		c := &commands[i]
		var names []string
		for _, f := range commandFlags(c) {
			names = append(names, "`-"+f.name+"`")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.name, strings.Join(names, " "), mdCell(upperFirst(c.summary)))
	}
	return b.String()
}

// markdownServeFlags is the README's configuration table: serve's flags.
func markdownServeFlags() string {
	var b strings.Builder
	b.WriteString("| Flag | Environment | Default | Meaning |\n|---|---|---|---|\n")
	flags := commandFlags(lookupCommand("serve"))
	for _, f := range flags {
		def := ""
		if f.def != "" {
			def = "`" + f.def + "`"
		}
		fmt.Fprintf(&b, "| `-%s` | `%s` | %s | %s |\n", f.name, f.env, def, mdCell(f.usage))
	}
	for _, e := range sealingEnv(flags) {
		fmt.Fprintf(&b, "| | `%s` | | %s |\n", e.name, mdCell(e.usage))
	}
	return b.String()
}

// mdCell escapes text for a Markdown table cell: its pipes, and the angle
// brackets of placeholders such as <db>, which would read as HTML.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}
