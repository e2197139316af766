package sqlite_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// The crash test runs this test binary again as a child that writes payouts
// until it is killed with SIGKILL; these variables tell the child what to do.
const (
	crashDBEnv    = "SQLSTORE_CRASH_DB"
	crashWSEnv    = "SQLSTORE_CRASH_WORKSPACE"
	crashRoundEnv = "SQLSTORE_CRASH_ROUND"
)

// A process killed in the middle of writing loses nothing it acknowledged
// and leaves no half-made change: every payout it reported exists, and the
// money adds up.
func TestCrash(t *testing.T) {
	if os.Getenv(crashDBEnv) != "" {
		t.Skip("this is the crash child")
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	nw, err := newEngine(t, s).CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "Crash", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ws := nw.Workspace.ID

	var acked []string
	for round := range 5 {
		acked = append(acked, crashChild(t, path, ws, round, 200)...)

		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatalf("round %d: reopening after the crash: %v", round, err)
		}
		for _, id := range acked {
			if _, err := s.Payout(t.Context(), ws, id); err != nil {
				t.Fatalf("round %d: acknowledged payout %s: %v", round, id, err)
			}
		}
		a, err := s.Audit(t.Context(), ws)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Check(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		payouts := countAll(t, func(r payoutkit.PageRequest) (int, string, error) {
			p, err := s.Payouts(t.Context(), ws, payoutkit.PayoutFilter{}, r)
			return len(p.Items), p.Next, err
		})
		debits := countAll(t, func(r payoutkit.PageRequest) (int, string, error) {
			p, err := s.Ledger(t.Context(), ws, r)
			n := 0
			for _, l := range p.Items {
				if l.Kind == payoutkit.LedgerPayoutDebit {
					n++
				}
			}
			return n, p.Next, err
		})
		if payouts != debits || payouts < len(acked) {
			t.Fatalf("round %d: %d payouts, %d debits, %d acknowledged", round, payouts, debits, len(acked))
		}
		t.Logf("round %d: %d acknowledged, %d stored", round, len(acked), payouts)
		s.Close()
	}
}

// crashChild runs the child until it has acknowledged n payouts, kills it
// and returns the acknowledged ids.
func crashChild(t *testing.T, path, ws string, round, n int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDBEnv+"="+path, crashWSEnv+"="+ws, fmt.Sprintf("%s=%d", crashRoundEnv, round))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	lines := bufio.NewScanner(out)
	for len(acked) < n && lines.Scan() {
		line := lines.Text()
		if id, ok := strings.CutPrefix(line, "ACK "); ok {
			acked = append(acked, id)
		} else if strings.HasPrefix(line, "ERR ") {
			t.Errorf("child: %s", line)
		}
	}
	_ = cmd.Process.Kill() // SIGKILL: no deferred function, no Close
	_ = cmd.Wait()
	if len(acked) < n {
		t.Fatalf("round %d: the child acknowledged %d payouts and stopped; stderr:\n%s", round, len(acked), stderr.String())
	}
	return acked
}

// TestCrashChild is the child of TestCrash: it funds the workspace and
// creates payouts from several goroutines until it is killed, printing each
// acknowledged payout_id on its own line.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashDBEnv)
	if path == "" {
		t.Skip("helper process for TestCrash")
	}
	ws, round := os.Getenv(crashWSEnv), os.Getenv(crashRoundEnv)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	eng := newEngine(t, s)
	fund(t, eng, ws, "fund-"+round, "1000000.00")
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 16 { // enough to fill group-commit batches, so that kills land inside them
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				_, _, err := eng.CreatePayout(t.Context(), ws, payoutRequest(id, "0.01"))
				mu.Lock()
				if err != nil {
					fmt.Println("ERR", id, err)
				} else {
					fmt.Println("ACK", id) // os.Stdout is unbuffered: one write per line
				}
				mu.Unlock()
				if err != nil {
					return
				}
				if i%7 == 3 { // settle some, so that the kill can land in those too
					_, _ = eng.FailPayout(t.Context(), ws, id, "crash test")
				}
			}
		})
	}
	wg.Wait()
}

func countAll(t *testing.T, page func(payoutkit.PageRequest) (int, string, error)) int {
	t.Helper()
	total := 0
	req := payoutkit.PageRequest{Limit: 500}
	for {
		n, next, err := page(req)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if next == "" {
			return total
		}
		req.Cursor = next
	}
}
