package record

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// offInterval is an off-CPU interval of a capture, and whether its stack
// is named fixture_block by the capture's own symbol bundle.
type offInterval struct {
	capture.OffCPU
	inBlock bool
}

// offCPUIntervals returns the off-CPU intervals of capture c, and its
// count of context switches that lost their other half.
func offCPUIntervals(t *testing.T, c *captured, n int) ([]offInterval, string) {
	t.Helper()
	unpaired := "0"
	for _, fr := range c.frames {
		if m, ok := fr.(*capture.Metadata); ok && m.ID == capture.MetaOffCPUUnpaired {
			unpaired = m.Value
		}
	}
	lookup := func(name string) []byte {
		t.Helper()
		b, err := c.files.Lookup(name)
		if err != nil {
			t.Fatalf("capture %d: %v", n, err)
		}
		return b
	}
	recs, err := capture.DecodeOffCPU(lookup(capture.OffCPUFile))
	if err != nil {
		t.Fatalf("capture %d: %v", n, err)
	}
	syms, err := capture.DecodeSymbols(lookup(capture.SymbolsFile))
	if err != nil {
		t.Fatalf("capture %d: %v", n, err)
	}
	// The stacks are in the order of the records (see offCPU.write).
	var inBlock []bool
	if err := capture.DecodeStacks(lookup(capture.StacksFile), func(r *capture.StackRecord) {
		inBlock = append(inBlock, slices.ContainsFunc(r.Addrs, func(a uint64) bool {
			s, ok := syms.Lookup(r.PID, a)
			return ok && s.Name == "fixture_block"
		}))
	}); err != nil {
		t.Fatalf("capture %d: %v", n, err)
	}
	if len(inBlock) != len(recs) {
		t.Fatalf("capture %d: %d stacks, %d off-CPU records", n, len(inBlock), len(recs))
	}
	out := make([]offInterval, len(recs))
	for i, r := range recs {
		out[i] = offInterval{r, inBlock[i]}
	}
	return out, unpaired
}

// TestRecordSplitExitDuringCut: a process that exits while a cut is being
// made (after the ending capture's end, before the next capture begins)
// has its last moments in the next capture, which must describe it and
// name its stacks. The cut is held (duringCut) until the offcpu fixture,
// asleep in fixture_block when the capture ended, has woken and exited,
// as a bundle that takes longer than the rest of a sleep lets it: the
// next capture then holds the end of that sleep. Before, the process,
// gone from /proc with its EXIT record still in the rings, was forgotten
// at the cut, and that part of its sleep was in no function (an
// intermittent failure of TestRecordSplitOffCPU, when the last capture
// held more than 5 % of the fixture's sleep).
func TestRecordSplitExitDuringCut(t *testing.T) {
	requirePerf(t)
	// One sleep of 900 ms, begun about a second into the recording,
	// across the cut at 1 or 1.5 s, then 50 ms of spinning.
	fx := startSplitFixture(t, "1", "900", "50")
	pid := fx.pid

	held := 0 // the capture whose cut waited for the exit
	defer func(f func(int)) { duringCut = f }(duringCut)
	duringCut = func(n int) {
		if held != 0 {
			return
		}
		// The fixture runs once sh has exec'd it: asleep (or about
		// to be) in fixture_block.
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != fx.bin {
			return
		}
		held = n
		select {
		case <-fx.gone:
		case <-time.After(10 * time.Second):
			t.Errorf("the fixture did not exit within 10 s")
		}
	}

	files := fx.record(t, "")
	block, _ := fx.measured(t)
	if held == 0 || held >= len(files) {
		t.Fatalf("no cut waited for the fixture's exit with a capture after it (held at capture %d of %d)", held, len(files))
	}
	var asleep, unnamed, after int64
	for _, f := range files {
		c := load(t, f.Path)
		ivs, unpaired := offCPUIntervals(t, c, f.N)
		for _, iv := range ivs {
			if iv.TID != pid || iv.State != 'S' {
				continue
			}
			if !iv.inBlock {
				unnamed += iv.Duration
				continue
			}
			asleep += iv.Duration
			if f.N == held+1 {
				after += iv.Duration
			}
		}
		if f.N == held+1 {
			if len(c.processes[pid]) == 0 {
				t.Errorf("capture %d, begun before the fixture exited, does not describe it", f.N)
			}
			if !c.exits[pid] {
				t.Errorf("capture %d has no EXIT of the fixture", f.N)
			}
			// Described as alive at the capture's start, not when the
			// cut got to it: after its exit, the frames that describe
			// the fixture would follow its EXIT.
			if desc, exit := describedAt(c, pid); exit != 0 && desc > exit {
				t.Errorf("capture %d describes the fixture at %d, after its EXIT at %d", f.N, desc, exit)
			}
			t.Logf("capture %d: %v of the fixture asleep in fixture_block; %s switches unpaired", f.N, time.Duration(after), unpaired)
		}
	}
	t.Logf("%d captures, the cut of capture %d held until the fixture exited; fixture_block off the CPU %v (%v after that cut), elsewhere %v; the fixture measured %v asleep",
		len(files), held, time.Duration(asleep), time.Duration(after), time.Duration(unnamed), time.Duration(block))
	if after == 0 {
		t.Errorf("capture %d holds none of the fixture's sleep in fixture_block", held+1)
	}
	if d := asleep - block; d < -block/20 || d > block/20 {
		t.Errorf("off-CPU time in fixture_block over the captures: %v; the fixture slept %v (want within 5%%); asleep elsewhere than fixture_block %v",
			time.Duration(asleep), time.Duration(block), time.Duration(unnamed))
	}
}

// splitFixture is the offcpu fixture, run by sh a second after it starts
// so that its sleeps fall inside a recording begun meanwhile.
type splitFixture struct {
	bin   string // the fixture's path
	pid   int32
	times string // where it writes what it measured
	// gone is closed once it has exited and been reaped (no longer in
	// /proc); exited gives its exit status 200 ms later, when ctx ends.
	gone   chan struct{}
	exited chan error
	ctx    context.Context
}

// startSplitFixture starts the offcpu fixture with args (iterations,
// milliseconds asleep, milliseconds spinning) a second from now.
func startSplitFixture(t *testing.T, args ...string) *splitFixture {
	t.Helper()
	f := &splitFixture{bin: testutils.BuildFixture(t, "offcpu"), times: filepath.Join(t.TempDir(), "times"),
		gone: make(chan struct{}), exited: make(chan error, 1)}
	cmd := exec.Command("sh", append([]string{"-c", `sleep 1; exec "$0" "$@"`, f.bin}, append(args, f.times)...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	f.pid = int32(cmd.Process.Pid)
	var cancel context.CancelFunc
	f.ctx, cancel = context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		err := cmd.Wait()
		close(f.gone)
		time.Sleep(200 * time.Millisecond)
		f.exited <- err
		cancel()
	}()
	return f
}

// record records the fixture with off-CPU time, its switch-ins from
// source ("" for the default), cut every 500 ms, until it has exited,
// and returns the captures.
func (f *splitFixture) record(t *testing.T, source string) []SplitFile {
	t.Helper()
	dir := t.TempDir()
	var files []SplitFile
	opts := quiet
	opts.PIDs = []int{int(f.pid)}
	opts.Duration = time.Minute
	opts.Frequency = 99
	opts.OffCPU = true
	opts.OffCPUSwitchIns = source
	// The leaf step finds fixture_block, the caller of libc's frameless
	// nanosleep, as record --call-graph fp does by default.
	opts.LeafStack = 512
	opts.Log = testWriter{t}
	_, err := RecordSplit(f.ctx, opts, Split{
		Every: 500 * time.Millisecond,
		Path:  func(n int) string { return fmt.Sprintf("%s/part-%d.syscap", dir, n) },
		Done: func(sf SplitFile) error {
			files = append(files, sf)
			return nil
		},
	})
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	return files
}

// measured waits for the fixture's exit and returns what it measured of
// its time asleep and spinning, in ns.
func (f *splitFixture) measured(t *testing.T) (block, spin int64) {
	t.Helper()
	if err := <-f.exited; err != nil {
		t.Fatalf("fixture: %v", err)
	}
	b, err := os.ReadFile(f.times)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscanf(string(b), "block %d spin %d", &block, &spin); err != nil {
		t.Fatalf("fixture output %q: %v", b, err)
	}
	return block, spin
}

// describedAt returns the time of the latest PROCESS or MAP frame of pid
// in c, and of its EXIT frame (0 for none).
func describedAt(c *captured, pid int32) (desc, exit int64) {
	for _, fr := range c.frames {
		switch f := fr.(type) {
		case *capture.Process:
			if f.PID == pid {
				desc = max(desc, f.Time)
			}
		case *capture.Map:
			if f.PID == pid {
				desc = max(desc, f.Time)
			}
		case *capture.Exit:
			if f.PID == pid {
				exit = f.Time
			}
		}
	}
	return desc, exit
}
