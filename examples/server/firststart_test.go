package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"

	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// runProgram runs the real program (this test binary as main) with args to
// its end and returns its stdout, stderr and exit code.
func runProgram(t *testing.T, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	cmd := programCmd(t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		exit = exitErr.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errb.String(), exit
}

// servedProc is the real program serving in a child process, with its
// stdout kept.
type servedProc struct {
	*proc
	stdout *syncBuffer
}

// serveProc starts `server serve -addr 127.0.0.1:0 args...` as a child
// process and waits until it serves.
func serveProc(t *testing.T, args ...string) *servedProc {
	t.Helper()
	cmd := programCmd(t, append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)...)
	p := &servedProc{proc: &proc{cmd: cmd, stderr: &lineWatcher{addr: make(chan string, 1)}, exited: make(chan struct{})}, stdout: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case a := <-p.stderr.addr:
		p.url = "http://" + a
	case <-p.exited:
		t.Fatalf("server exited before serving (%v); stderr:\n%s", p.err, p.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not serve within 60s; stderr:\n%s", p.stderr.String())
	}
	return p
}

// stop sends SIGTERM and waits for a zero exit.
func (p *servedProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(40 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if p.err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", p.err, p.stderr.String())
	}
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// wantPrivateFile checks that path is a regular file readable by its owner
// alone.
func wantPrivateFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Fatalf("%s has mode %v; want -rw-------", path, fi.Mode())
	}
}

// The first start prints the credentials on stdout and writes the same to
// a file of its own (0600, path on stderr); a second start prints nothing,
// leaves the file as it was, and says how to make a new key or staff login.
// The first start also makes a key file and seals the webhook secret with
// it; the admin commands find the key the same way.
func TestFirstStartKeepsTheCredentials(t *testing.T) {
	t.Setenv(envSecretKey, "")
	t.Setenv(envSecretKeyPrevious, "")
	t.Setenv(envSecretKeyFile, "")
	dir := t.TempDir()
	db := filepath.Join(dir, "payoutkit.db")
	credentials := db + credentialsFileSuffix
	keyFile := db + secretKeyFileSuffix

	p := serveProc(t, "-db", db)
	first := decodeObject(t, p.stdout.String())
	wantKeys(t, first, "workspace_id", "api_key", "webhook_secret", "staff_email", "staff_password")
	wantPrivateFile(t, credentials)
	wantPrivateFile(t, keyFile)
	written, err := os.ReadFile(credentials)
	if err != nil {
		t.Fatal(err)
	}
	var inFile map[string]any
	if err := json.Unmarshal(written, &inFile); err != nil {
		t.Fatal(err)
	}
	for k, v := range first {
		if inFile[k] != v {
			t.Fatalf("the credentials file has %s = %v; stdout printed %v", k, inFile[k], v)
		}
	}
	if !strings.Contains(p.stderr.String(), credentials) || !strings.Contains(p.stderr.String(), keyFile) {
		t.Fatalf("stderr names neither file:\n%s", p.stderr.String())
	}
	ws, secret := first["workspace_id"].(string), first["webhook_secret"].(string)
	if st, env := call(t, "GET", p.url+"/v1/balance", first["api_key"].(string), ""); st != 200 || code(env) != 0 {
		t.Fatalf("balance with the printed key: %d %v", st, env)
	}
	p.stop(t)

	// Sealed by default: no plain secret in the workspaces table.
	if stored := rawSecret(t, db, ws); !strings.HasPrefix(stored, "sealed:v1:") || strings.Contains(stored, "whsec_") || strings.Contains(stored, secret) {
		t.Fatalf("stored webhook_secret %q", stored)
	}
	// The admin commands open it with the same key file.
	out, errOut, exit := runProgram(t, "webhook", "rotate-secret", "-db", db, "-workspace", ws)
	if exit != 0 {
		t.Fatalf("rotate-secret: exit %d\n%s", exit, errOut)
	}
	rotated := decodeObject(t, out)["webhook_secret"].(string)
	if stored := rawSecret(t, db, ws); !strings.HasPrefix(rotated, "whsec_") || !strings.HasPrefix(stored, "sealed:v1:") || strings.Contains(stored, rotated) {
		t.Fatalf("rotate-secret printed %q, stored %q", rotated, stored)
	}
	if out, errOut, exit := runProgram(t, "secrets", "reseal", "-db", db); exit != 0 || decodeObject(t, out)["current"] != float64(1) {
		t.Fatalf("secrets reseal: exit %d, %s\n%s", exit, out, errOut)
	}

	// A second start: nothing on stdout, the file intact, and a hint.
	p = serveProc(t, "-db", db)
	if p.stdout.String() != "" {
		t.Fatalf("the second start printed %q", p.stdout.String())
	}
	for _, want := range []string{"keys create", "staff add|reset-password", ws, credentials} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Fatalf("the second start's stderr does not mention %q:\n%s", want, p.stderr.String())
		}
	}
	p.stop(t)
	if again, err := os.ReadFile(credentials); err != nil || !bytes.Equal(again, written) {
		t.Fatalf("the credentials file changed: %v\n%s", err, again)
	}
	wantPrivateFile(t, credentials)

	// A new database whose credentials file is still there starts: the old
	// file is never replaced, and the new credentials go beside it, under a
	// name of the new workspace's own, which stderr names.
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		os.Remove(f)
	}
	p = serveProc(t, "-db", db)
	fresh := decodeObject(t, p.stdout.String())
	p.stop(t)
	if again, _ := os.ReadFile(credentials); !bytes.Equal(again, written) {
		t.Fatal("the credentials file changed")
	}
	beside := strings.TrimSuffix(credentials, ".json") + "-" + fresh["workspace_id"].(string) + ".json"
	wantPrivateFile(t, beside)
	if b, _ := os.ReadFile(beside); !strings.Contains(string(b), fresh["api_key"].(string)) {
		t.Fatalf("%s holds %s", beside, b)
	}
	if !strings.Contains(p.stderr.String(), beside) {
		t.Fatalf("stderr does not name %s:\n%s", beside, p.stderr.String())
	}
	// On another new database, -credentials-file names the file.
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		os.Remove(f)
	}
	other := filepath.Join(dir, "second.json")
	p = serveProc(t, "-db", db, "-credentials-file", other)
	second := decodeObject(t, p.stdout.String())
	p.stop(t)
	wantPrivateFile(t, other)
	if b, _ := os.ReadFile(other); !strings.Contains(string(b), second["api_key"].(string)) {
		t.Fatalf("-credentials-file holds %s", b)
	}
}

// A start that cannot listen creates nothing: no database, no key file, no
// credentials, nothing on stdout.
func TestTakenPortCreatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, addr := range []string{ln.Addr().String(), ":99999"} {
		dir := t.TempDir()
		out, errOut, exit := runProgram(t, "serve", "-addr", addr, "-db", filepath.Join(dir, "payoutkit.db"))
		if exit == 0 || out != "" || !strings.Contains(errOut, addr) {
			t.Fatalf("-addr %s: exit %d, stdout %q\n%s", addr, exit, out, errOut)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Fatalf("-addr %s left %v", addr, names)
		}
	}

	// A taken metrics port: no workspace, so no credentials and no key.
	dir := t.TempDir()
	db := filepath.Join(dir, "payoutkit.db")
	out, errOut, exit := runProgram(t, "serve", "-addr", "127.0.0.1:0", "-metrics-addr", ln.Addr().String(), "-db", db)
	if exit == 0 || out != "" {
		t.Fatalf("-metrics-addr taken: exit %d, stdout %q\n%s", exit, out, errOut)
	}
	for _, f := range []string{db + credentialsFileSuffix, db + secretKeyFileSuffix} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("-metrics-addr taken: %s was made", f)
		}
	}
}

// adminCommands are every command that opens a database it must find, with
// the flags each needs.
var adminCommands = [][]string{
	{"keys", "create", "-workspace", "ws_x"},
	{"keys", "reset", "-workspace", "ws_x"},
	{"keys", "list", "-workspace", "ws_x"},
	{"keys", "revoke", "-workspace", "ws_x", "-prefix", "pk_xxxxxxxx"},
	{"webhook", "set", "-workspace", "ws_x", "-url", "https://example.com/hooks"},
	{"webhook", "rotate-secret", "-workspace", "ws_x"},
	{"webhook", "events", "-workspace", "ws_x"},
	{"webhook", "resend", "-workspace", "ws_x", "-event", "evt_x"},
	{"staff", "add", "-workspace", "ws_x", "-email", "a@example.com"},
	{"staff", "remove", "-workspace", "ws_x", "-email", "a@example.com"},
	{"staff", "reset-password", "-workspace", "ws_x", "-email", "a@example.com"},
	{"audit"},
	{"secrets", "reseal"},
	{"migrate"},
}

// Every admin command on a missing database (a mistyped file, or a missing
// directory) exits non-zero naming the path, creates no file, and says
// nothing of internal files.
func TestAdminCommandsRefuseAMissingDatabase(t *testing.T) {
	t.Setenv(envSecretKey, "")
	t.Setenv(envSecretKeyPrevious, "")
	t.Setenv(envSecretKeyFile, "")
	dir := t.TempDir()
	for _, db := range []string{filepath.Join(dir, "typo.db"), filepath.Join(dir, "missing", "x.db")} {
		for _, c := range adminCommands {
			args := append(slices.Clone(c), "-db", db)
			out, errOut, exit := runProgram(t, args...)
			if exit == 0 || out != "" || !strings.Contains(errOut, db) || strings.Contains(errOut, "priority") || strings.Contains(errOut, "migration") {
				t.Errorf("%v: exit %d, stdout %q, stderr:\n%s", args, exit, out, errOut)
			}
			if names := dirEntries(t, dir); len(names) != 0 {
				t.Fatalf("%v left %v", args, names)
			}
		}
	}
}

// openOldSchema makes a SQLite database at payoutkit's first schema
// version, as an older binary left it.
func openOldSchema(t *testing.T, db string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+db+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	bdb := bun.NewDB(raw, sqlitedialect.New())
	ms := migrate.NewMigrations()
	if err := sqlite.AddMigrations(ms); err != nil {
		t.Fatal(err)
	}
	first := ms.Sorted()[0]
	if err := first.Up(t.Context(), migrate.NewMigrator(bdb, ms), &first); err != nil {
		t.Fatal(err)
	}
}

// schemaVersion reads a SQLite database's schema version.
func schemaVersion(t *testing.T, db string) int {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// An admin command on an older schema migrates nothing and says that
// migrate (or serve) upgrades it; migrate does, once.
func TestMigrateUpgrades(t *testing.T) {
	db := filepath.Join(t.TempDir(), "old.db")
	openOldSchema(t, db)
	if v := schemaVersion(t, db); v != 1 {
		t.Fatalf("the old database is at version %d", v)
	}
	for _, c := range adminCommands[:len(adminCommands)-1] {
		args := append(slices.Clone(c), "-db", db)
		out, errOut, exit := runProgram(t, args...)
		if exit == 0 || out != "" || !strings.Contains(errOut, "server migrate -db "+db) {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s", args, exit, out, errOut)
		}
	}
	if v := schemaVersion(t, db); v != 1 {
		t.Fatalf("the admin commands migrated the database to version %d", v)
	}
	out, errOut, exit := runProgram(t, "migrate", "-db", db)
	if exit != 0 || decodeObject(t, out)["migrated"] != true {
		t.Fatalf("migrate: exit %d, %s\n%s", exit, out, errOut)
	}
	if v := schemaVersion(t, db); v <= 1 {
		t.Fatalf("after migrate the database is at version %d", v)
	}
	if out, errOut, exit := runProgram(t, "migrate", "-db", db); exit != 0 || decodeObject(t, out)["migrated"] != false {
		t.Fatalf("migrate again: exit %d, %s\n%s", exit, out, errOut)
	}
	if out, errOut, exit := runProgram(t, "audit", "-db", db); exit != 0 || decodeObject(t, out)["ok"] != true {
		t.Fatalf("audit after migrate: exit %d, %s\n%s", exit, out, errOut)
	}
}

// staff reset-password prints a new password once; the old one stops
// working and so does every portal session of that login.
func TestStaffResetPassword(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	s := startServer(t, "-db", db)
	first := decodeObject(t, s.stdout.String())
	ws, email, password := first["workspace_id"].(string), first["staff_email"].(string), first["staff_password"].(string)
	c := newStaffClient(t)
	session, _ := c.signIn(s.url, email, password)
	if st := withCookie(t, http.MethodGet, s.url+"/", session); st != http.StatusOK {
		t.Fatalf("signed in: %d", st)
	}

	out, errOut, exit := runProgram(t, "staff", "reset-password", "-db", db, "-workspace", ws, "-email", email)
	if exit != 0 {
		t.Fatalf("reset-password: exit %d\n%s", exit, errOut)
	}
	reset := decodeObject(t, out)
	newPassword, _ := reset["staff_password"].(string)
	if reset["staff_email"] != email || len(newPassword) < 12 || newPassword == password {
		t.Fatalf("reset-password printed %v", reset)
	}
	if st := withCookie(t, http.MethodGet, s.url+"/", session); st == http.StatusOK {
		t.Fatal("the session outlived the reset")
	}
	if st, _ := newStaffClient(t).post(s.url+"/login", url.Values{"email": {email}, "password": {password}}); st == http.StatusSeeOther {
		t.Fatal("the old password still signs in")
	}
	newStaffClient(t).signIn(s.url, email, newPassword)

	// An unknown login is an error, not a password.
	if out, _, exit := runProgram(t, "staff", "reset-password", "-db", db, "-workspace", ws, "-email", "nobody@example.com"); exit == 0 || out != "" {
		t.Fatalf("reset-password of nobody: exit %d, %q", exit, out)
	}
}

// On PostgreSQL without a key, serve warns once that secrets are stored
// plain and how to make and pass a key; it makes no key file, and the
// first start's credentials go to -credentials-file. The admin commands
// refuse a schema without payoutkit's tables.
func TestPostgresStartWithoutKeyWarnsOnce(t *testing.T) {
	dsn := pgtest.Postgres(t)
	t.Setenv(envSecretKey, "")
	t.Setenv(envSecretKeyPrevious, "")
	t.Setenv(envSecretKeyFile, "")
	if out, errOut, exit := runProgram(t, "keys", "list", "-db", dsn, "-workspace", "ws_x"); exit == 0 || out != "" || !strings.Contains(errOut, "no payoutkit database") {
		t.Fatalf("keys list on an empty schema: exit %d, %q\n%s", exit, out, errOut)
	}
	dir := t.TempDir()
	credentials := filepath.Join(dir, "pg.json")
	s := startServer(t, "-db", dsn, "-credentials-file", credentials)
	if n := strings.Count(s.stderr.String(), "stored plain"); n != 1 {
		t.Fatalf("%d warnings of plain secrets; want 1:\n%s", n, s.stderr.String())
	}
	for _, want := range []string{envSecretKey, "openssl rand -base64 32", "secrets reseal", "-secret-key-file"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("the warning does not mention %q:\n%s", want, s.stderr.String())
		}
	}
	first := decodeObject(t, s.stdout.String())
	wantPrivateFile(t, credentials)
	if b, _ := os.ReadFile(credentials); !strings.Contains(string(b), first["api_key"].(string)) {
		t.Fatalf("the credentials file holds %s", b)
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Fatalf("the PostgreSQL start left %v beside the credentials", names)
	}
	s.shutdown(t)
	if _, err := os.Stat("payoutkit" + credentialsFileSuffix); err == nil {
		t.Fatal("a credentials file in the working directory")
	}
}
