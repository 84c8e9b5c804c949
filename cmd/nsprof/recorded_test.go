package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/perf"
	"nsprof/record"
)

// TestRecordedCapture records the callchain fixture with record.Record and
// loads it with analyze.Load (in cmd/nsprof, the one package allowed to
// import both):
// kernel frames (when some were sampled) are named from the embedded
// kallsyms, and user frames by the bundle when the recorder adds one,
// else as callchain+0xOFFSET.
func TestRecordedCapture(t *testing.T) {
	rd, err := perf.Open(perf.Processes(os.Getpid()))
	if err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			testutils.RequireCI(t, "perf events not permitted (run as root): %v", err)
		}
		t.Fatalf("open perf events: %v", err)
	}
	rd.Close()
	bin := testutils.BuildFixture(t, "callchain")
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	res, err := record.Record(context.Background(), w, record.Options{
		Command: []string{bin, "0.5", "1", "nofork"},
		NoCPU:   true, NoMemory: true, NoDisk: true, NoNetwork: true,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("record: %v %+v", err, res)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := analyze.Load(&buf, analyze.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	samples, err := p.Select(analyze.Filter{Comm: "^callchain"})
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) < 200 {
		t.Fatalf("%d samples of the fixture", len(samples))
	}
	kernelNamed, kernelFrames := 0, 0
	userInFixture := 0
	base := filepath.Base(bin)
	for _, f := range p.Frames {
		if f.Kernel {
			kernelFrames++
			if !strings.HasPrefix(f.Loc.Function, "[unknown]") && f.Loc.DSO != "" {
				kernelNamed++
			}
			continue
		}
		if m := p.Mapping(f.PID, f.Addr); m != nil && m.File == bin {
			userInFixture++
			if p.Bundle == nil && (f.Loc.DSO != base || !strings.HasPrefix(f.Loc.Function, base+"+0x")) {
				t.Errorf("fixture frame %#x named %q in %q, want %s+0x…", f.Addr, f.Loc.Function, f.Loc.DSO, base)
			}
		}
	}
	// The recorder embeds the lines of kallsyms holding the kernel
	// addresses sampled, and none when there are none (a user loop's
	// samples may all be in user mode: TestKallsymsNotRead).
	if kernelFrames > 0 && p.Kallsyms == nil {
		t.Fatalf("%d kernel frames and no embedded kallsyms", kernelFrames)
	}
	if kernelFrames > 0 && kernelNamed*10 < kernelFrames*9 {
		t.Errorf("%d of %d kernel frames named from kallsyms (%v)", kernelNamed, kernelFrames, p.Kallsyms.Err())
	}
	t.Logf("%d kernel frames, %d named", kernelFrames, kernelNamed)
	if userInFixture == 0 {
		t.Error("no frames in the fixture binary")
	}
	top := p.Top(samples)
	if p.Bundle != nil && top[0].Name != "fixture_leaf" {
		t.Errorf("with a bundle, top function %+v, want fixture_leaf", top[0])
	}
	if top[0].SelfPercent < 50 || top[0].DSO != base && top[0].DSO != "callchain" {
		t.Errorf("top function %+v: want the fixture's hot loop", top[0])
	}
}
