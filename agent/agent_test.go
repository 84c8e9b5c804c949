package agent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
