package perf

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// TestUprobeExec places a uprobe and a uretprobe on fixture_work of the
// spans fixture, which calls it 10 times on its main thread, through the
// fixture's [Exec] target, and a second uprobe there that copies the call
// site: all three hit exactly 10 times, in the fixture's pid, returns
// after their entries, the first entry with a user callchain and no
// stack, the second with the 8 bytes of its call site and no callchain,
// the returns with neither (three layouts in one ring); the probes write
// beside the CPU samples, which Reader.Uprobe does not claim.
func TestUprobeExec(t *testing.T) {
	bin := testutils.BuildFixture(t, "spans")
	f, err := symbol.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Funcs(func(n string) bool { return n == "fixture_work" })
	if err != nil || len(syms) != 1 {
		t.Fatalf("fixture_work: %v, %v", syms, err)
	}
	off, ok := f.FileOffset(syms[0].Addr)
	f.Close()
	if !ok {
		t.Fatalf("no file offset for %#x", syms[0].Addr)
	}
	cmd, release := startBeforeExec(t, bin)
	r, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{Uprobes: []Uprobe{
		{Path: bin, Offset: off, Stack: true},
		{Path: bin, Offset: off, Return: true},
		{Path: bin, Offset: off, CallSite: true},
	}})
	requirePerf(t, err)
	defer r.Close()
	release()
	pid := uint32(cmd.Process.Pid)
	var hits [3]int
	var last uint64
	var samples, bad int
	readAll(t, r, 10*time.Second, func(rec *Record) {
		if rec.Type != RecordSample {
			return
		}
		i, ok := r.Uprobe(&rec.Sample)
		if !ok {
			samples++
			return
		}
		s := &rec.Sample
		hits[i]++
		if s.PID != pid || s.TID != pid || s.Time < last || (i == 0) != (len(s.Callchain) > 0) || (i == 1 && hits[1] > hits[0]) ||
			(i == 2) != (len(s.Stack) == 8) || (i != 2 && len(s.Stack) != 0) {
			bad++
			t.Logf("probe %d hit %+v", i, s)
		}
		last = s.Time
	})
	if hits != [3]int{10, 10, 10} || bad > 0 {
		t.Errorf("entries, returns and entries with call sites %v (%d out of order, place or layout), want 10 each", hits, bad)
	}
	t.Logf("%d CPU samples beside the probes", samples)
}

// TestUprobeBadPath: a probe on a file that does not exist fails at
// open, naming the probe.
func TestUprobeBadPath(t *testing.T) {
	cmd, release := startBeforeExec(t, "/bin/true")
	_, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{Uprobes: []Uprobe{{Path: "/nonexistent/lib.so", Offset: 0x1000}}})
	release()
	if err == nil {
		t.Fatal("probe on a missing file opened")
	}
	if want := "uprobe /nonexistent/lib.so+0x1000"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
}

// ourUprobeGroups returns the lines of uprobe_events that name a probe
// of this process's groups.
func ourUprobeGroups(t *testing.T) []string {
	t.Helper()
	file, err := uprobeEventsFile()
	if err != nil {
		testutils.RequireCI(t, "%v", err)
		t.Fatal(err)
	}
	ns, err := pidNamespace()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf(":%s%d_%d_", uprobeGroupPrefix, ns, os.Getpid())
	var ours []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, prefix) {
			ours = append(ours, l)
		}
	}
	return ours
}

// TestUprobeDefinitions: opening probes defines them in tracefs, first
// removing those a recorder of this PID namespace that is gone left
// (a group named for an exited process's pid), but not those of a live
// one (this process's, under a sequence number it has not used); Close
// removes its own.
func TestUprobeDefinitions(t *testing.T) {
	file, err := uprobeEventsFile()
	if err != nil {
		testutils.RequireCI(t, "%v", err)
		t.Fatal(err)
	}
	ns, err := pidNamespace()
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d_%d_1/p0", uprobeGroupPrefix, ns, dead.Process.Pid)
	live := fmt.Sprintf("%s%d_%d_999999/p0", uprobeGroupPrefix, ns, os.Getpid())
	for _, g := range []string{stale, live} {
		if err := appendLine(file, "p:"+g+" /bin/true:0x1000"); err != nil {
			t.Fatalf("define %s: %v", g, err)
		}
	}
	defer appendLine(file, "-:"+stale)
	defer appendLine(file, "-:"+live)

	cmd, release := startBeforeExec(t, "/bin/true")
	r, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{Uprobes: []Uprobe{{Path: "/bin/true", Offset: 0x1000}, {Path: "/bin/true", Offset: 0x1000, Return: true}}})
	release()
	requirePerf(t, err)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), stale) || !strings.Contains(string(b), live) {
		t.Errorf("uprobe_events after open, want %s removed and %s kept:\n%s", stale, live, b)
	}
	if ours := ourUprobeGroups(t); len(ours) != 3 {
		t.Errorf("this process's probes while open: %q, want the 2 opened and %s", ours, live)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if ours := ourUprobeGroups(t); len(ours) != 1 {
		t.Errorf("this process's probes after Close: %q, want %s alone", ours, live)
	}
}
