package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EnvPostgresBin names the environment variable that may name the directory
// of PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup); without
// it, Cluster looks under /usr/lib/postgresql/*/bin (Debian's layout), then
// on PATH.
const EnvPostgresBin = "PAYOUTKIT_POSTGRES_BIN"

// Cluster is a real PostgreSQL primary with a real streaming standby, each
// its own server on a free loopback port in a temporary directory: the rig
// of the failover tests. The servers run as the postgres user when the test
// runs as root (they refuse to run as root), and are stopped when the test
// ends.
type Cluster struct {
	t   testing.TB
	bin string
	dir string
	// as runs commands as this user (nil: as the test's own).
	as *syscall.Credential
	// Primary and Standby are the servers; after Promote, Standby is the
	// primary.
	Primary, Standby *Server
}

// Server is one server of a Cluster.
type Server struct {
	Name    string
	Port    int
	DataDir string
}

// DSN is the server's DSN for database db.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	// Async makes the standby asynchronous: the primary does not wait for
	// it (no synchronous_standby_names).
	Async bool
}

// StartCluster starts a primary and a standby (synchronous unless
// opts.Async), and waits until the standby streams. Without PostgreSQL's
// server binaries the test is skipped, except under CI=true, where it
// fails.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	bin, err := serverBinaries()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the failover tests: %v", err)
		}
		t.Skipf("PostgreSQL's server binaries are not installed (%v); set %s or install Debian's postgresql package", err, EnvPostgresBin)
	}
	c := &Cluster{t: t, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the servers need the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.as = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if c.dir, err = os.MkdirTemp("", "payoutkit-cluster-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(c.dir) })
	if c.as != nil {
		if err := os.Chown(c.dir, int(c.as.Uid), int(c.as.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	c.Primary = &Server{Name: "primary", Port: freePort(t), DataDir: filepath.Join(c.dir, "primary")}
	c.Standby = &Server{Name: "standby", Port: freePort(t), DataDir: filepath.Join(c.dir, "standby")}
	t.Cleanup(c.stop)

	c.run("initdb", "-D", c.Primary.DataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	c.configure(c.Primary, "wal_level = replica", "max_wal_senders = 8", "hot_standby = on", "wal_keep_size = '256MB'")
	c.start(c.Primary)
	c.run("pg_basebackup", "-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=standby", c.Primary.Port),
		"-D", c.Standby.DataDir, "-R", "-X", "stream", "--no-sync")
	c.configure(c.Standby)
	c.start(c.Standby)
	if !opts.Async {
		// Set on the primary after the copy, so that the promoted standby
		// does not wait for a standby of its own.
		c.SQL(c.Primary, "ALTER SYSTEM SET synchronous_standby_names = 'standby'")
		c.SQL(c.Primary, "SELECT pg_reload_conf()")
	}
	want := "async"
	if !opts.Async {
		want = "sync"
	}
	c.waitFor(30*time.Second, func() bool {
		out, err := c.sql(c.Primary, "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby' AND state = 'streaming'")
		return err == nil && strings.TrimSpace(out) == want
	}, "the standby streaming as "+want)
	return c
}

// serverBinaries finds the directory of initdb, pg_ctl and pg_basebackup.
func serverBinaries() (string, error) {
	if dir := os.Getenv(EnvPostgresBin); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_basebackup")); err == nil {
			return d, nil
		}
	}
	p, err := osexec.LookPath("pg_basebackup")
	if err != nil {
		return "", errors.New("no pg_basebackup under /usr/lib/postgresql/*/bin or on PATH")
	}
	return filepath.Dir(p), nil
}

// versionOf is the major version in a Debian binary directory's path.
func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// configure appends the server's own settings, and lines, to its
// postgresql.conf.
func (c *Cluster) configure(s *Server, lines ...string) {
	c.t.Helper()
	conf := append([]string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", s.Port),
		fmt.Sprintf("unix_socket_directories = '%s'", c.dir),
		"max_connections = 200",
		"shared_buffers = '64MB'",
		"fsync = on",
		"log_min_messages = warning",
	}, lines...)
	f, err := os.OpenFile(filepath.Join(s.DataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n# payoutkit's test cluster\n" + strings.Join(conf, "\n") + "\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) start(s *Server) {
	c.t.Helper()
	c.run("pg_ctl", "-D", s.DataDir, "-l", filepath.Join(c.dir, s.Name+".log"), "-w", "-t", "60", "start")
}

// stop stops both servers fast, whatever state they are in.
func (c *Cluster) stop() {
	for _, s := range []*Server{c.Primary, c.Standby} {
		if _, err := os.Stat(filepath.Join(s.DataDir, "postmaster.pid")); err == nil {
			_, _ = c.output("pg_ctl", "-D", s.DataDir, "-m", "immediate", "-w", "stop")
		}
	}
}

// run runs one of the server binaries, as the servers' user, failing the
// test with its output when it fails.
func (c *Cluster) run(name string, args ...string) string {
	c.t.Helper()
	out, err := c.output(name, args...)
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func (c *Cluster) output(name string, args ...string) (string, error) {
	cmd := osexec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "PGHOST="+c.dir, "LC_ALL=C")
	if c.as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.as}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// SQL runs query on the server's postgres database and returns its output
// (psql's unaligned rows), failing the test on an error.
func (c *Cluster) SQL(s *Server, query string) string {
	c.t.Helper()
	out, err := c.sql(s, query)
	if err != nil {
		c.t.Fatalf("%s on %s: %v\n%s", query, s.Name, err, out)
	}
	return out
}

func (c *Cluster) sql(s *Server, query string) (string, error) {
	psql := filepath.Join(c.bin, "psql")
	if _, err := os.Stat(psql); err != nil {
		psql = "psql"
	}
	cmd := osexec.Command(psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "postgres", "-d", "postgres", "-c", query)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// CreateDatabase creates database name on the primary (and so, through
// replication, on the standby).
func (c *Cluster) CreateDatabase(name string) {
	c.t.Helper()
	c.SQL(c.Primary, "CREATE DATABASE "+name)
}

// MultiHostDSN is a DSN naming both servers, primary first, that connects
// to whichever accepts writes (target_session_attrs=read-write).
func (c *Cluster) MultiHostDSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		c.Primary.Port, c.Standby.Port, db)
}

// KillPrimary kills the primary's postmaster with SIGKILL, as a crash of
// its machine would end it, and waits until it is gone.
func (c *Cluster) KillPrimary() {
	c.t.Helper()
	pid := c.postmasterPID(c.Primary)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		c.t.Fatalf("killing the primary's postmaster %d: %v", pid, err)
	}
	c.waitFor(30*time.Second, func() bool { return !alive(pid) }, "the primary's postmaster to die")
	// Its backends notice their postmaster's death and end; a client may
	// still hold a socket to one for a moment.
}

// alive reports whether process pid runs. A zombie does not: the
// postmaster, detached by pg_ctl, is reaped by init, which may take its
// time (seconds, in some containers).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // no /proc: kill's word
	}
	// The state follows the command's name, in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func (c *Cluster) postmasterPID(s *Server) int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.DataDir, "postmaster.pid"))
	if err != nil {
		c.t.Fatalf("reading %s's postmaster.pid: %v", s.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		c.t.Fatalf("%s's postmaster.pid: %v", s.Name, err)
	}
	return pid
}

// Promote promotes the standby to primary and waits until it accepts
// writes; Primary and Standby swap.
func (c *Cluster) Promote() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.Standby.DataDir, "-w", "-t", "60", "promote")
	c.waitFor(30*time.Second, func() bool {
		out, err := c.sql(c.Standby, "SELECT pg_is_in_recovery()")
		return err == nil && strings.TrimSpace(out) == "f"
	}, "the promoted standby to accept writes")
	c.Primary, c.Standby = c.Standby, c.Primary
}

// DetachStandby stops the standby's WAL receiver (its primary_conninfo
// cleared and reloaded), so that it falls behind the primary.
func (c *Cluster) DetachStandby() {
	c.t.Helper()
	c.SQL(c.Standby, "ALTER SYSTEM SET primary_conninfo = ''")
	c.SQL(c.Standby, "SELECT pg_reload_conf()")
	c.waitFor(30*time.Second, func() bool {
		out, err := c.sql(c.Standby, "SELECT count(*) FROM pg_stat_wal_receiver")
		return err == nil && strings.TrimSpace(out) == "0"
	}, "the standby's WAL receiver to stop")
}

// PauseReplay pauses (or resumes) the standby's replay of WAL.
func (c *Cluster) PauseReplay(pause bool) {
	c.t.Helper()
	if pause {
		c.SQL(c.Standby, "SELECT pg_wal_replay_pause()")
	} else {
		c.SQL(c.Standby, "SELECT pg_wal_replay_resume()")
	}
}

// RestartPrimary restarts the primary in immediate mode (no checkpoint, as
// after a crash: recovery replays its WAL).
func (c *Cluster) RestartPrimary() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.Primary.DataDir, "-l", filepath.Join(c.dir, c.Primary.Name+".log"), "-m", "immediate", "-w", "-t", "60", "restart")
}

// Log returns the end of a server's log, for a failing test.
func (c *Cluster) Log(s *Server) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, s.Name+".log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (c *Cluster) waitFor(d time.Duration, ok func() bool, what string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !ok() {
		select {
		case <-ctx.Done():
			c.t.Fatalf("waited %v for %s\nprimary log:\n%s\nstandby log:\n%s", d, what, c.Log(c.Primary), c.Log(c.Standby))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
