package main

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// TestAgentCollectorAway runs nsprof agent system-wide for three periods
// while a CPU-bound fixture runs, with the collector killed before the
// first period ends and started again two seconds later: every period
// must arrive, in order, none twice, with the fixture's functions.
func TestAgentCollectorAway(t *testing.T) {
	requireRoot(t)
	col := testutils.StartOtelcol(t)
	bin := testutils.BuildFixture(t, "callchain")
	busy := exec.Command(bin, "20", "1", "nofork")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })

	col.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	// The collector comes back 1.5 s after the agent's first retry.
	errb := &signalWriter{match: "retrying", seen: make(chan struct{})}
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		select {
		case <-errb.seen:
			time.Sleep(1500 * time.Millisecond)
			col.Start(t)
		case <-ctx.Done():
		}
	}()
	var out strings.Builder
	err := runIO(ctx, []string{"agent", "--otlp-endpoint", col.HTTP, "--period", "1s", "-F", "99", "--periods", "3",
		"--spool", t.TempDir()}, nil, &out, errb)
	cancel()
	<-restarted
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, errb.String())
	}
	stderr := errb.String()
	t.Logf("agent:\n%s", stderr)
	if !strings.Contains(stderr, "3 periods recorded, 3 sent") || !strings.Contains(stderr, " 0 dropped") || strings.Contains(stderr, " 0 retries") {
		t.Errorf("agent's summary:\n%s", stderr)
	}
	lines := col.Lines(t, 3, 10*time.Second)
	// Wait a moment for a duplicate to show.
	time.Sleep(300 * time.Millisecond)
	lines = col.Lines(t, 3, 0)
	if len(lines) != 3 {
		t.Fatalf("the collector wrote %d requests, want 3 (one per period)\nagent:\n%s", len(lines), stderr)
	}
	procs, times := readCollected(t, lines)
	starts := slices.Compact(slices.Clone(times))
	if !slices.IsSortedFunc(starts, time.Time.Compare) || len(starts) != 3 {
		t.Errorf("period start times %v: want 3 distinct, in order", starts)
	}
	cp := procs[int64(busy.Process.Pid)]
	if cp == nil || cp.total["fixture_leaf"] == 0 {
		t.Errorf("no samples of the fixture's fixture_leaf (pid %d) at the collector", busy.Process.Pid)
	}
}

// signalWriter collects what is written and closes seen at the first
// write holding match.
type signalWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	match string
	seen  chan struct{}
	done  bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && strings.Contains(string(p), w.match) {
		w.done = true
		close(w.seen)
	}
	return w.b.Write(p)
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
