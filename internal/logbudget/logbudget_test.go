package logbudget

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := New()
	b.now = func() time.Time { return now }
	if ok, n := b.Allow("a"); !ok || n != 0 {
		t.Fatalf("first line: %v %d", ok, n)
	}
	for range 5 {
		if ok, _ := b.Allow("a"); ok {
			t.Fatal("a repeat within the window was allowed")
		}
	}
	if ok, _ := b.Allow("b"); !ok {
		t.Fatal("another kind was held back")
	}
	now = now.Add(Window)
	if ok, n := b.Allow("a"); !ok || n != 5 {
		t.Fatalf("after the window: %v, %d suppressed; want true, 5", ok, n)
	}
	if ok, n := b.Allow("b"); !ok || n != 0 {
		t.Fatalf("b after the window: %v %d", ok, n)
	}
}

// A budget with many kinds forgets the quiet ones, not those holding
// lines back.
func TestBudgetForgetsQuietKinds(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := New()
	b.now = func() time.Time { return now }
	b.Allow("busy")
	b.Allow("busy") // one held back
	for i := range maxKinds - 1 {
		b.Allow(strings.Repeat("q", i+1))
	}
	now = now.Add(Window)
	b.Allow("new")
	if len(b.seen) != 2 {
		t.Fatalf("%d kinds remembered; want the busy one and the new one", len(b.seen))
	}
	if ok, n := b.Allow("busy"); !ok || n != 1 {
		t.Fatalf("busy after the window: %v %d; want true, 1", ok, n)
	}
}

func TestLogSaysHowManyItStandsFor(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := New()
	b.now = func() time.Time { return now }
	var out bytes.Buffer
	l := slog.New(slog.NewTextHandler(&out, nil))
	for range 3 {
		b.Log(context.Background(), l, slog.LevelWarn, "k", "down")
	}
	now = now.Add(Window)
	b.Log(context.Background(), l, slog.LevelWarn, "k", "down")
	if n := strings.Count(out.String(), "msg=down"); n != 2 {
		t.Fatalf("%d lines; want 2:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "similar_lines_suppressed=2") {
		t.Fatalf("the second line does not say how many it stands for:\n%s", out.String())
	}
}
