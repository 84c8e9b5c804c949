package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/otlp"
	"nsprof/record"
)

// TestSpoolBound fills the spool past its bound and checks that the
// oldest periods are removed, counted and logged, the newest kept.
func TestSpoolBound(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	a := &agent{o: Options{Spool: dir, SpoolMax: 2500, Log: &log}, samples: map[int]int64{}}
	for seq := 1; seq <= 5; seq++ {
		name := filepath.Join(dir, fmt.Sprintf("period-%09d%s", seq, spoolExt))
		if err := os.WriteFile(name, make([]byte, 1000), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Not periods: left alone and not counted.
	os.WriteFile(filepath.Join(dir, "period-000000009.syscap.tmp"), make([]byte, 5000), 0o600)
	if err := a.bound(); err != nil {
		t.Fatal(err)
	}
	files, err := a.spooled()
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, f := range files {
		seqs = append(seqs, f.seq)
	}
	if fmt.Sprint(seqs) != "[4 5]" || a.st.Dropped != 3 {
		t.Errorf("spool keeps periods %v, dropped %d; want [4 5], 3 dropped", seqs, a.st.Dropped)
	}
	if n := strings.Count(log.String(), "dropped period"); n != 3 {
		t.Errorf("log names %d dropped periods, want 3:\n%s", n, log.String())
	}
}

// TestSpoolBoundKeepsSending: the period being sent stays in the full
// spool, the oldest others go, and each one dropped waits to be reported
// in the next push with its samples.
func TestSpoolBoundKeepsSending(t *testing.T) {
	dir := t.TempDir()
	a := &agent{o: Options{Spool: dir, SpoolMax: 2500, Log: io.Discard}, samples: map[int]int64{}}
	for seq := 1; seq <= 5; seq++ {
		name := filepath.Join(dir, fmt.Sprintf("period-%09d%s", seq, spoolExt))
		if err := os.WriteFile(name, make([]byte, 1000), 0o600); err != nil {
			t.Fatal(err)
		}
		a.samples[seq] = int64(10 * seq)
	}
	a.sending = 1
	if err := a.bound(); err != nil {
		t.Fatal(err)
	}
	files, err := a.spooled()
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, f := range files {
		seqs = append(seqs, f.seq)
	}
	if fmt.Sprint(seqs) != "[1 5]" {
		t.Errorf("spool keeps periods %v while period 1 is sent; want [1 5]", seqs)
	}
	if a.st.Dropped != 3 || a.unreported != 3 || a.unreportedSamples != 20+30+40 || a.st.DroppedSamples != 90 {
		t.Errorf("dropped %d periods, %d unreported with %d samples (%d in all); want 3, 3, 90, 90",
			a.st.Dropped, a.unreported, a.unreportedSamples, a.st.DroppedSamples)
	}
}

// TestAgentCarriesLostOfEmptyPeriod: a spooled period whose kernel lost
// 7 samples and took none sends no request (there is nothing to send),
// so its losses go with the next push: the agent, run for one period of
// its own against a real collector, reports the 7 in that period's
// nsprof.lost_samples, on top of the period's own losses, and logs them.
func TestAgentCarriesLostOfEmptyPeriod(t *testing.T) {
	testutils.RequireRoot(t, "the agent records the whole system: run as root")
	col := testutils.StartOtelcol(t)
	spool := t.TempDir()
	writeLostOnly(t, filepath.Join(spool, fmt.Sprintf("period-%09d%s", 1, spoolExt)), 7)
	c, err := otlp.NewClient(col.HTTP, otlp.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := Run(ctx, Options{Client: c, Period: time.Second, Periods: 1, Spool: spool, Log: &log,
		Record: record.Options{System: true, Frequency: 49}})
	t.Logf("agent: %+v\n%s", st, log.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "its 7 lost samples are reported with the next push") {
		t.Errorf("the log does not say the empty period's 7 lost samples wait for the next push")
	}
	lines := col.Lines(t, 1, 10*time.Second)
	if len(lines) != 1 {
		t.Fatalf("the collector wrote %d requests, want 1 (the recorded period; the empty one sends nothing)", len(lines))
	}
	ps, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles([]byte(lines[0]))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := ps.ResourceProfiles().At(0).Resource().Attributes().AsRaw()[otlp.AttrLostSamples].(int64)
	if own := st.Lost; got != own+7 || st.Unreported != 0 {
		t.Errorf("the push reports %d lost samples; want the empty period's 7 plus its own %d (%d left unreported)", got, own, st.Unreported)
	}
}

// writeLostOnly writes a capture at path whose "Lost Samples" counter
// says lost, with no sample.
func writeLostOnly(t *testing.T, path string, lost int64) {
	t.Helper()
	w, err := capture.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: w.StartTime()}
	if err := w.DefineCounters(h, []capture.Counter{{Category: capture.LostSamplesCategory, Name: capture.LostSamplesName, ID: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetCounters(h, []capture.CounterUpdate{{ID: 1, Value: capture.IntValue(lost)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
