package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// baselineCommand makes this binary serve the baseline instead of loading.
const baselineCommand = "baseline-serve"

// baselineBody is what the baseline answers: the size and shape of a
// balance read, with nothing behind it.
const baselineBody = `{"code":0,"message":"OK","data":{"currency":"USD","available":"100.00","in_progress":"0.00"}}` + "\n"

// serveBaseline serves the bare handler on a loopback port, prints the
// address, and serves until ctx ends. It runs in its own process, as the
// server does, so that both compete with the load generator alike.
func serveBaseline(ctx context.Context, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				http.Error(w, "no key", http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, baselineBody)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintln(stdout, ln.Addr().String())
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// baseline is a running baseline process.
type baseline struct {
	url  string
	pid  int
	stop func()
}

// startBaseline runs this same binary as the baseline server.
func startBaseline(ctx context.Context) (*baseline, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, baselineCommand)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return nil, fmt.Errorf("starting the baseline: %w", err)
	}
	return &baseline{url: "http://" + strings.TrimSpace(line), pid: cmd.Process.Pid, stop: stop}, nil
}
