package payoutkit_test

import (
	"os/exec"
	"strings"
	"testing"
)

// What an embedding program may not inherit from the library: the browser
// tests' driver, the OpenAPI validator of httpserver's tests, the server's
// metrics, the EVM processor's go-ethereum and, on SQLite, the PostgreSQL
// driver.
var unwantedDeps = []string{
	"github.com/chromedp/",
	"github.com/ethereum/go-ethereum",
	"github.com/getkin/kin-openapi",
	"github.com/prometheus/",
	"github.com/jackc/pgx",
}

// depsOf lists the packages a program importing pkgs builds, one a line,
// skipping the test without the go command.
func depsOf(t *testing.T, pkgs ...string) []string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.CommandContext(t.Context(), goCmd, append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// A program that imports the engine, the in-memory and SQLite stores, the
// HTTP API and the portal builds none of unwantedDeps: those belong to the
// examples' module, to tests, or to the PostgreSQL store alone.
func TestEmbeddingPullsNoExtraDependencies(t *testing.T) {
	for _, pkg := range depsOf(t,
		"github.com/payoutkit/payoutkit",
		"github.com/payoutkit/payoutkit/storage/memstore",
		"github.com/payoutkit/payoutkit/storage/sqlite",
		"github.com/payoutkit/payoutkit/httpserver",
		"github.com/payoutkit/payoutkit/portal",
	) {
		for _, bad := range unwantedDeps {
			if strings.HasPrefix(pkg, bad) {
				t.Errorf("an embedding program builds %s", pkg)
			}
		}
	}
}

// A program that serves no portal (the engine, its stores and the HTTP
// API) builds nothing of staff identity: neither package staff nor the
// TOTP library it uses.
func TestEmbeddingWithoutPortalPullsNoStaffIdentity(t *testing.T) {
	for _, pkg := range depsOf(t,
		"github.com/payoutkit/payoutkit",
		"github.com/payoutkit/payoutkit/storage/memstore",
		"github.com/payoutkit/payoutkit/storage/sqlite",
		"github.com/payoutkit/payoutkit/storage/postgres",
		"github.com/payoutkit/payoutkit/httpserver",
	) {
		if pkg == "github.com/payoutkit/payoutkit/staff" || strings.HasPrefix(pkg, "github.com/pquerna/otp") {
			t.Errorf("a program without the portal builds %s", pkg)
		}
	}
}

// The library's own module requires none of the examples' dependencies
// (the browser driver, the metrics client) nor processor/evm's
// (go-ethereum), so that they stay out of an embedding program's module
// graph: a program that does not import processor/evm never downloads
// go-ethereum.
func TestLibraryModuleLeavesExamplesDependenciesOut(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.CommandContext(t.Context(), goCmd, "list", "-m", "all")
	cmd.Env = append(cmd.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, out)
	}
	for mod := range strings.Lines(string(out)) {
		for _, bad := range []string{"github.com/chromedp/", "github.com/prometheus/", "github.com/ethereum/go-ethereum"} {
			if strings.HasPrefix(mod, bad) {
				t.Errorf("the library's module graph holds %s", strings.TrimSpace(mod))
			}
		}
	}
}
