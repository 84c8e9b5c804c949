//go:build otlp

package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"nsprof/internal/testutils"
)

// TestAgentCollectorAway runs nsprof agent system-wide for three periods
// while a CPU-bound fixture runs, with the collector killed before the
// first period ends and started again two seconds later: every period
// must arrive, in order, none twice, with the fixture's functions.
func TestAgentCollectorAway(t *testing.T) {
	requireRoot(t)
	col := testutils.StartOtelcol(t)
	busy := startBusy(t)

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
	if !strings.Contains(stderr, "3 periods recorded, 3 sent") || !strings.Contains(stderr, " 0 dropped, 0 refused") || strings.Contains(stderr, " 0 retries") {
		t.Errorf("agent's summary:\n%s", stderr)
	}
	lines := col.Lines(t, 3, 10*time.Second)
	// Wait a moment for a duplicate to show.
	time.Sleep(300 * time.Millisecond)
	lines = col.Lines(t, 3, 0)
	if len(lines) != 3 {
		t.Fatalf("the collector wrote %d requests, want 3 (one per period)\nagent:\n%s", len(lines), stderr)
	}
	procs, times := testutils.ReadCollected(t, lines)
	starts := slices.Compact(slices.Clone(times))
	if !slices.IsSortedFunc(starts, time.Time.Compare) || len(starts) != 3 {
		t.Errorf("period start times %v: want 3 distinct, in order", starts)
	}
	cp := procs[int64(busy)]
	if cp == nil || cp.Total["fixture_leaf"] == 0 {
		t.Errorf("no samples of the fixture's fixture_leaf (pid %d) at the collector", busy)
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

// TestAgentReportsDrops runs nsprof agent for five periods with a spool
// of one byte while the collector is away until the agent dropped a
// period: the periods dropped are named in the log and reported in the
// pushes that follow (nsprof.dropped_periods, nsprof.dropped_samples, on
// the resources of one request each), and every push says how many
// samples the kernel lost in its period (nsprof.lost_samples). A
// CPU-bound fixture runs meanwhile: a period of an idle machine may have
// no sample, and then has nothing to send, fail or drop.
func TestAgentReportsDrops(t *testing.T) {
	requireRoot(t)
	col := testutils.StartOtelcol(t)
	startBusy(t)
	col.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	errb := &signalWriter{match: "dropped period", seen: make(chan struct{})}
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		select {
		case <-errb.seen:
			col.Start(t)
		case <-ctx.Done():
		}
	}()
	err := runIO(ctx, []string{"agent", "--otlp-endpoint", col.HTTP, "--period", "1s", "-F", "49", "--periods", "5",
		"--spool", t.TempDir(), "--spool-max", "1B"}, nil, io.Discard, errb)
	cancel()
	<-restarted
	stderr := errb.String()
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, stderr)
	}
	t.Logf("agent:\n%s", stderr)
	var recorded, sent, dropped, refused, droppedSamples int
	if _, err := fmt.Sscanf(stderr[strings.LastIndex(stderr, "nsprof agent: "):], "nsprof agent: %d periods recorded, %d sent (%d samples), %d dropped, %d refused (%d samples)",
		&recorded, &sent, new(int), &dropped, &refused, &droppedSamples); err != nil {
		t.Fatalf("agent's summary: %v\n%s", err, stderr)
	}
	if recorded != 5 || dropped == 0 || sent+dropped != 5 || droppedSamples == 0 {
		t.Fatalf("%d periods recorded, %d sent, %d dropped (%d samples): want 5 recorded, some dropped, the rest sent", recorded, sent, dropped, droppedSamples)
	}
	lines := col.Lines(t, sent, 10*time.Second)
	var gotPeriods, gotSamples int64
	withLost := 0
	for i, line := range lines {
		ps, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		attrs := ps.ResourceProfiles().At(0).Resource().Attributes().AsRaw()
		for _, rp := range ps.ResourceProfiles().All() {
			if other := rp.Resource().Attributes().AsRaw(); other["nsprof.dropped_periods"] != attrs["nsprof.dropped_periods"] {
				t.Errorf("request %d: resources disagree on nsprof.dropped_periods: %v and %v", i+1, attrs["nsprof.dropped_periods"], other["nsprof.dropped_periods"])
			}
		}
		n, _ := attrs["nsprof.dropped_periods"].(int64)
		s, _ := attrs["nsprof.dropped_samples"].(int64)
		gotPeriods += n
		gotSamples += s
		if _, ok := attrs["nsprof.lost_samples"].(int64); ok {
			withLost++
		}
	}
	if gotPeriods != int64(dropped) || gotSamples != int64(droppedSamples) {
		t.Errorf("the pushes report %d dropped periods with %d samples; the agent dropped %d with %d", gotPeriods, gotSamples, dropped, droppedSamples)
	}
	if withLost != len(lines) {
		t.Errorf("%d of %d requests carry nsprof.lost_samples", withLost, len(lines))
	}
	if got := strings.Count(stderr, "dropped period"); got != dropped {
		t.Errorf("the log names %d dropped periods, want %d", got, dropped)
	}
}

// TestAgentPeriodsAbut runs nsprof agent for three periods while a
// CPU-bound fixture runs: each period's profiles start where the last
// one's end, on the wall clock, since the periods are cuts of one
// recording (perf record --switch-output), not recordings of their own
// with the set-up and symbolization of one between them. (Without the
// fixture, a period of an idle machine at -F 99 may have no sample, and
// then sends no request, by design: 3 runs of 12 failed so.)
func TestAgentPeriodsAbut(t *testing.T) {
	requireRoot(t)
	col := testutils.StartOtelcol(t)
	startBusy(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var errb strings.Builder
	if err := runIO(ctx, []string{"agent", "--otlp-endpoint", col.HTTP, "--period", "1s", "-F", "99", "--periods", "3",
		"--spool", t.TempDir()}, nil, io.Discard, &errb); err != nil {
		t.Fatalf("agent: %v\n%s", err, errb.String())
	}
	lines := col.Lines(t, 3, 10*time.Second)
	if len(lines) != 3 {
		t.Fatalf("the collector wrote %d requests, want 3\n%s", len(lines), errb.String())
	}
	var start, end []time.Time
	for i, line := range lines {
		ps, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		prof := ps.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
		start = append(start, prof.Time().AsTime())
		end = append(end, prof.Time().AsTime().Add(time.Duration(prof.DurationNano())))
	}
	for i := 1; i < len(start); i++ {
		if gap := start[i].Sub(end[i-1]); gap < -time.Millisecond || gap > time.Millisecond {
			t.Errorf("period %d starts %v after period %d ends (%v to %v, then %v)", i+1, gap, i, start[i-1], end[i-1], start[i])
		}
	}
}

// startBusy starts the CPU-bound callchain fixture for 20 s, killed when
// the test ends, and returns its pid: system-wide periods then all have
// samples.
func startBusy(t *testing.T) int {
	t.Helper()
	bin := testutils.BuildFixture(t, "callchain")
	busy := exec.Command(bin, "20", "1", "nofork")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	return busy.Process.Pid
}
