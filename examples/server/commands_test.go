package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// -h, --help and help at every level answer on stdout with exit 0: the list
// of commands at the top, a group's subcommands, a command's flags each
// with its PAYOUTKIT_* variable where it has one.
func TestHelpAtEveryLevel(t *testing.T) {
	// The real program, at each level: exit 0, help on stdout alone.
	for _, args := range [][]string{{"-h"}, {"workspace", "-h"}, {"keys", "--help"}, {"keys", "create", "-h"}, {"help", "staff", "remove"}} {
		out, errOut, exit := runProgram(t, args...)
		if exit != 0 || errOut != "" || out == "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, exit, out, errOut)
		}
	}
	// What each level says, in-process.
	help := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if err := run(t.Context(), args, &stdout, &stderr); err != nil || stderr.Len() != 0 {
			t.Fatalf("%v: %v, stderr %q", args, err, stderr.String())
		}
		return stdout.String()
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"help"}, {"help", "-h"}} {
		out := help(args...)
		for _, c := range commands {
			if !strings.Contains(out, "  "+c.name+" ") {
				t.Errorf("%v does not list %q:\n%s", args, c.name, out)
			}
		}
	}
	for _, g := range groups {
		for _, args := range [][]string{{g.name, "-h"}, {g.name, "--help"}, {g.name, "help"}, {"help", g.name}} {
			out := help(args...)
			for _, c := range commands {
				sub, ok := strings.CutPrefix(c.name, g.name+" ")
				if ok && !strings.Contains(out, "  "+sub+" ") {
					t.Errorf("%v does not list %q:\n%s", args, sub, out)
				}
			}
		}
	}
	for i := range commands {
		c := &commands[i]
		if c.name == "help" {
			continue
		}
		words := strings.Fields(c.name)
		for _, args := range [][]string{append(slices.Clone(words), "-h"), append([]string{"help"}, words...)} {
			out := help(args...)
			if !strings.HasPrefix(out, "usage: server "+c.name) {
				t.Fatalf("%v printed:\n%s", args, out)
			}
			for _, f := range commandFlags(c) {
				if !strings.Contains(out, "\n  -"+f.name) {
					t.Errorf("%v lacks -%s:\n%s", args, f.name, out)
				}
				if f.env != "" && !strings.Contains(out, "env "+f.env+"\n") {
					t.Errorf("%v lacks -%s's %s:\n%s", args, f.name, f.env, out)
				}
			}
			if c.sealing && !strings.Contains(out, envSecretKey+"\n") {
				t.Errorf("%v lacks %s:\n%s", args, envSecretKey, out)
			}
		}
	}
	// Every serve flag has its variable; the admin commands' -db has one.
	for _, f := range commandFlags(lookupCommand("serve")) {
		if f.env == "" {
			t.Errorf("serve -%s has no variable", f.name)
		}
	}
	for _, c := range commands {
		for _, f := range commandFlags(&c) {
			if f.name == "db" && f.env != "PAYOUTKIT_DB" {
				t.Errorf("%s -db: variable %q", c.name, f.env)
			}
		}
	}
}

// A mistake in the command line exits 2 with a message on stderr naming it
// and nothing on stdout, and creates nothing.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	// The real program: exit 2, the message on stderr.
	for _, args := range [][]string{{"nonsense"}, {"keys", "list", "-nonsense", "-db", db}} {
		out, errOut, exit := runProgram(t, args...)
		if exit != 2 || out != "" || !strings.Contains(errOut, "error: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2", args, exit, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nonsense"}, `unknown command "nonsense"`},
		{[]string{"keys", "nonsense"}, `unknown command "keys nonsense"`},
		{[]string{"keys"}, "keys: which command?"},
		{[]string{"help", "nonsense"}, `unknown command "nonsense"`},
		{[]string{"keys", "list", "-nonsense", "-db", db}, "keys list: flag provided but not defined: -nonsense; run `server keys list -h`"},
		{[]string{"keys", "list", "-db", db}, "-workspace is required"},
		{[]string{"keys", "list", "-db", db, "-workspace", "ws_x", "extra"}, `keys list: unexpected argument "extra"`},
		{[]string{"-nonsense"}, "serve: flag provided but not defined: -nonsense"},
		{[]string{"serve", "-rate-limit", "x", "-db", db}, `serve: invalid value "x" for flag -rate-limit`},
		{[]string{"workspace", "create", "-db", db}, "-name is required"},
	} {
		var stdout, stderr strings.Builder
		err := run(t.Context(), tc.args, &stdout, &stderr)
		if !errors.As(err, new(usageError)) || stdout.Len() != 0 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, stdout %q; want a usage error with %q", tc.args, err, stdout.String(), tc.want)
		}
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Fatalf("usage errors left %v", names)
	}
}

// version prints the build's module and versions as JSON.
func TestVersion(t *testing.T) {
	out, errOut, exit := runProgram(t, "version")
	if exit != 0 || errOut != "" {
		t.Fatalf("version: exit %d, stderr %q", exit, errOut)
	}
	var v versionJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version printed %q: %v", out, err)
	}
	if v.Module != "github.com/payoutkit/payoutkit/examples" || v.Version == "" || v.Payoutkit == "" || !strings.HasPrefix(v.Go, "go") {
		t.Fatalf("version printed %+v", v)
	}
}

// A command that matches nothing says so and exits 1, printing nothing on
// stdout: a typo during an incident must not look like success.
func TestCommandsThatMatchNothingFail(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	ws := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Acme"))["workspace_id"].(string)
	prefix := decodeObject(t, mustCommand(t, "keys", "create", "-db", db, "-workspace", ws))["prefix"].(string)
	mustCommand(t, "staff", "add", "-db", db, "-workspace", ws, "-email", "ops@example.com")
	mustCommand(t, "addresses", "add", "-db", db, "-workspace", ws, "-network", "TRON", "-address", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "revoke", "-workspace", ws, "-prefix", "zzzzzzzz"}, "has no key with prefix zzzzzzzz"},
		{[]string{"staff", "remove", "-workspace", ws, "-email", "nobody@example.com"}, "has no staff login nobody@example.com"},
		{[]string{"addresses", "remove", "-workspace", ws, "-network", "TRON", "-address", "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf"}, "has no TRON address TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf"},
	} {
		out, errOut, exit := runProgram(t, append(tc.args, "-db", db)...)
		if exit != 1 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, exit, out, errOut, tc.want)
		}
	}

	// What they do match still works, once; a key revoked already is what
	// was asked, and says when it was revoked.
	if got := mustCommand(t, "keys", "revoke", "-db", db, "-workspace", ws, "-prefix", prefix); got != `{"revoked":1}`+"\n" {
		t.Fatalf("keys revoke printed %q", got)
	}
	out, errOut, exit := runProgram(t, "keys", "revoke", "-db", db, "-workspace", ws, "-prefix", prefix)
	if exit != 0 || out != `{"revoked":0}`+"\n" || !strings.Contains(errOut, "revoked already") {
		t.Fatalf("revoking twice: exit %d, stdout %q, stderr %q", exit, out, errOut)
	}
	if got := mustCommand(t, "staff", "remove", "-db", db, "-workspace", ws, "-email", "ops@example.com"); got != `{"removed":1}`+"\n" {
		t.Fatalf("staff remove printed %q", got)
	}
	if _, err := command(t, "staff", "remove", "-db", db, "-workspace", ws, "-email", "ops@example.com"); err == nil {
		t.Fatal("removing a staff login twice succeeded")
	}
	if got := mustCommand(t, "addresses", "remove", "-db", db, "-workspace", ws, "-network", "TRON", "-address", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"); got != `{"removed":1}`+"\n" {
		t.Fatalf("addresses remove printed %q", got)
	}
}

// The README's table of commands and its configuration table are the ones
// the command definitions make: a command or flag added to the server and
// missing from the README fails here. PAYOUTKIT_UPDATE_README=1 rewrites
// them in place.
func TestReadmeCommandTables(t *testing.T) {
	const path = "../../README.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, table := range []struct{ name, want string }{
		{"commands", markdownCommands()},
		{"configuration", markdownServeFlags()},
	} {
		begin := "<!-- generated: " + table.name + " (examples/server TestReadmeCommandTables) -->\n"
		end := "<!-- end: " + table.name + " -->"
		i, j := strings.Index(readme, begin), strings.Index(readme, end)
		if i < 0 || j < i {
			t.Fatalf("README.md lacks the %s table between %q and %q", table.name, begin, end)
		}
		got := readme[i+len(begin) : j]
		if got == table.want {
			continue
		}
		if os.Getenv("PAYOUTKIT_UPDATE_README") == "1" {
			readme = readme[:i+len(begin)] + table.want + readme[j:]
			continue
		}
		t.Errorf("README.md's %s table is not the one the commands make (PAYOUTKIT_UPDATE_README=1 go test -run TestReadmeCommandTables ./examples/server/ rewrites it):\n%s", table.name, table.want)
	}
	if readme != string(raw) {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
