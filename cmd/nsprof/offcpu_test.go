package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// switchInSources are the values of record's --off-cpu-switch-ins: the
// BPF program (which must load here: the tests run as root) and perf's
// SWITCH records, its fallback.
var switchInSources = []string{capture.OffCPUSwitchInsBPF, capture.OffCPUSwitchInsPerf}

// metadataValue returns the value of the capture's metadata key (the
// last one), or "" when it has none.
func metadataValue(t *testing.T, capPath, key string) string {
	t.Helper()
	data, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	v := ""
	for {
		f, err := cr.Next()
		if err == io.EOF {
			return v
		}
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := f.(*capture.Metadata); ok && m.ID == key {
			v = m.Value
		}
	}
}

// offCPUCounts returns the capture's off-CPU counts (intervals, those
// unpaired, still open at the end, switch-ins the BPF program lost) for
// a failure's message: a missing interval that the recorder counted as
// lost is told apart from one it lost silently.
func offCPUCounts(t *testing.T, capPath string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range []string{capture.MetaOffCPUIntervals, capture.MetaOffCPUUnpaired, capture.MetaOffCPUBySample, capture.MetaOffCPUOpen, capture.MetaOffCPUSwitchInsLost} {
		fmt.Fprintf(&b, " %s=%q", k, metadataValue(t, capPath, k))
	}
	return b.String()
}

// largest formats the entries of totals of at least floor, the largest
// first: where off-CPU time went when a function lacks some.
func largest(totals map[string]int64, floor int64) string {
	names := slices.SortedFunc(maps.Keys(totals), func(a, b string) int { return cmp.Compare(totals[b], totals[a]) })
	var b strings.Builder
	for _, n := range names {
		if totals[n] >= floor {
			fmt.Fprintf(&b, " %s=%.3fs", n, float64(totals[n])/1e9)
		}
	}
	return b.String()
}

// checkSwitchIns checks that the capture says its switch-ins came from
// source.
func checkSwitchIns(t *testing.T, capPath, source string) {
	t.Helper()
	if got := metadataValue(t, capPath, capture.MetaOffCPUSwitchIns); got != source {
		t.Errorf("metadata %s = %q, want %q", capture.MetaOffCPUSwitchIns, got, source)
	}
}

// offCPUFixture records the offcpu fixture (iterations of 200 ms asleep
// in fixture_block, then 100 ms of wall-clock time in fixture_spin) with
// record --off-cpu, its switch-ins from source, and returns the capture
// and what the fixture measured of its own functions, in ns.
func offCPUFixture(t *testing.T, iterations int, source string) (capPath string, block, spin int64) {
	t.Helper()
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "offcpu")
	dir := t.TempDir()
	capPath = filepath.Join(dir, "off.syscap")
	out := filepath.Join(dir, "times")
	_, stderr, status := nsprof(t, nil, "record", "--off-cpu", "--off-cpu-switch-ins="+source, "-o", capPath, "--", bin, fmt.Sprint(iterations), "200", "100", out)
	if status != 0 {
		t.Fatalf("record --off-cpu: status %d\n%s", status, stderr)
	}
	checkSwitchIns(t, capPath, source)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscanf(string(b), "block %d spin %d", &block, &spin); err != nil {
		t.Fatalf("fixture output %q: %v", b, err)
	}
	return capPath, block, spin
}

// functionTotals runs report --json with args and returns each
// function's total value and the sample type's name.
func functionTotals(t *testing.T, capPath string, args ...string) (map[string]int64, string) {
	t.Helper()
	out, stderr, status := nsprof(t, nil, append([]string{"report", capPath, "--json", "--limit", "0"}, args...)...)
	if status != 0 {
		t.Fatalf("report %q: status %d\n%s", args, status, stderr)
	}
	var r valueReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report %q: %v\n%s", args, err, out)
	}
	totals := make(map[string]int64)
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			totals[f.Name] += int64(f.Total)
		}
	}
	typ := ""
	if r.SampleType != nil {
		typ = r.SampleType.Type
	}
	return totals, typ
}

// TestOffCPUFixture: recorded with --off-cpu, the fixture's blocking
// function carries its known time asleep (iterations x 200 ms) within 5 %
// in the off_cpu column, under a leaf frame naming the sleep; the
// default view still shows CPU samples only; and --wall splits the run
// between the blocking and the spinning function as the fixture measured
// it (2:1 by construction: the spin lasts 100 ms of wall-clock time
// however loaded the machine is, its preempted time being off-CPU time
// in state R), within 10 %: sampling counts whole periods of about 1 ms.
// Both sources of switch-ins, the BPF program and perf's SWITCH records,
// must give that.
func TestOffCPUFixture(t *testing.T) {
	for _, source := range switchInSources {
		t.Run(source, func(t *testing.T) { testOffCPUFixture(t, source) })
	}
}

func testOffCPUFixture(t *testing.T, source string) {
	const iterations = 5
	capPath, block, spin := offCPUFixture(t, iterations, source)
	want := int64(iterations * 200e6)
	if n := sysprofReadsOffCPU(t, capPath); n < iterations {
		t.Errorf("Sysprof read %d off-CPU marks, want at least the %d sleeps of 200 ms", n, iterations)
	}

	off, typ := functionTotals(t, capPath, "--off-cpu")
	if typ != "off_cpu" {
		t.Fatalf("report --off-cpu: sample type %q, want off_cpu", typ)
	}
	got := off["fixture_block"]
	t.Logf("off_cpu: fixture_block %.3fs (%d x 200ms = %.3fs; the fixture measured %.3fs); [off-CPU: S sleeping] %.3fs; capture:%s",
		float64(got)/1e9, iterations, float64(want)/1e9, float64(block)/1e9, float64(off["[off-CPU: S sleeping]"])/1e9, offCPUCounts(t, capPath))
	// Against what the fixture measured it blocked: on a loaded machine
	// its 200 ms sleeps overrun, and the overrun is off-CPU time too.
	if math.Abs(float64(got-block)) > 0.05*float64(block) || block < want {
		t.Errorf("off_cpu of fixture_block: %d ns, want the fixture's %d ns (at least %d) within 5%%; capture:%s; functions of 10 ms or more: %s", got, block, want, offCPUCounts(t, capPath), largest(off, 10e6))
	}
	if s := off["[off-CPU: S sleeping]"]; s < got*95/100 {
		t.Errorf("off_cpu under [off-CPU: S sleeping]: %d ns, want at least fixture_block's %d", s, got)
	}

	if pb := pprofTotal(t, capPath, "fixture_block", "off_cpu", "--off-cpu"); pb != got {
		t.Errorf("export --format pprof --off-cpu: fixture_block %d ns, report %d", pb, got)
	}

	cpu, _ := functionTotals(t, capPath)
	for name := range cpu {
		if strings.HasPrefix(name, "[off-CPU") {
			t.Errorf("the default view (CPU samples) has off-CPU frame %s", name)
		}
	}
	if cpu["fixture_spin"] == 0 {
		t.Errorf("no CPU sample in fixture_spin: %v", cpu)
	}

	wall, typ := functionTotals(t, capPath, "--wall")
	if typ != "wall" {
		t.Fatalf("report --wall: sample type %q, want wall", typ)
	}
	wb, ws := wall["fixture_block"], wall["fixture_spin"]
	if ws == 0 {
		t.Fatalf("--wall: nothing in fixture_spin: %v", wall)
	}
	ratio, known := float64(wb)/float64(ws), float64(block)/float64(spin)
	t.Logf("wall: fixture_block %.3fs, fixture_spin %.3fs: ratio %.3f; the fixture measured %.3fs and %.3fs: %.3f",
		float64(wb)/1e9, float64(ws)/1e9, ratio, float64(block)/1e9, float64(spin)/1e9, known)
	if math.Abs(ratio-known) > 0.1*known {
		t.Errorf("--wall splits fixture_block:fixture_spin %.3f, the fixture measured %.3f (want within 10%%)", ratio, known)
	}
	if math.Abs(float64(ws-spin)) > 0.1*float64(spin) {
		t.Errorf("--wall: fixture_spin %d ns, the fixture measured %d ns (want within 10%%)", ws, spin)
	}
}

// startInPIDNamespace starts the offcpu fixture (iterations, to write
// its times to out) as pid 1 of a new PID namespace and returns the
// unshare command and the fixture's host pid once it runs the fixture.
func startInPIDNamespace(t *testing.T, bin string, iterations int, out string) (*exec.Cmd, int) {
	t.Helper()
	unshare := testutils.LookPathOrSkip(t, "unshare")
	cmd := exec.Command(unshare, "--pid", "--fork", bin, fmt.Sprint(iterations), "200", "100", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		if f := strings.Fields(string(b)); len(f) > 0 {
			pid, _ := strconv.Atoi(f[0])
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == bin {
				return cmd, pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no fixture under unshare pid %d after 5s", cmd.Process.Pid)
	return nil, 0
}

// TestOffCPUTargets: record --off-cpu with -p and with -a follows a
// fixture that runs as pid 1 of its own PID namespace (the events carry
// host pids): its blocking function carries off-CPU time, the capture
// knows its namespace pid, and --wall splits its time about 2:1 between
// the blocking and the spinning function (the recording starts and, with
// -a, ends in the middle of an iteration: 30 % allowed).
func TestOffCPUTargets(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "offcpu")
	for _, source := range switchInSources {
		for _, mode := range []string{"-p", "-a"} {
			t.Run(source+mode, func(t *testing.T) { testOffCPUTarget(t, bin, mode, source) })
		}
	}
}

func testOffCPUTarget(t *testing.T, bin, mode, source string) {
	dir := t.TempDir()
	capPath := filepath.Join(dir, "off.syscap")
	cmd, pid := startInPIDNamespace(t, bin, 12, filepath.Join(dir, "times"))
	args := []string{"record", "--off-cpu", "--off-cpu-switch-ins=" + source, "-o", capPath}
	if mode == "-p" {
		args = append(args, "-p", fmt.Sprint(pid))
	} else {
		// Setting up -a (every process looked at) takes part of
		// the duration on a loaded machine.
		args = append(args, "-a", "--duration", "2.5")
	}
	_, stderr, status := nsprof(t, nil, args...)
	if status != 0 {
		t.Fatalf("record %q: status %d\n%s", args, status, stderr)
	}
	cmd.Wait()
	checkSwitchIns(t, capPath, source)
	sel := []string{"--pid", fmt.Sprint(pid)}
	off, _ := functionTotals(t, capPath, append(sel, "--off-cpu")...)
	if b := off["fixture_block"]; b < 600e6 {
		t.Errorf("off_cpu of fixture_block: %d ns, want at least 600 ms (3 of 200 ms)", b)
	}
	wall, _ := functionTotals(t, capPath, append(sel, "--wall")...)
	wb, ws := wall["fixture_block"], wall["fixture_spin"]
	t.Logf("%s: pid %d: off_cpu fixture_block %.3fs; wall fixture_block %.3fs fixture_spin %.3fs", mode, pid, float64(off["fixture_block"])/1e9, float64(wb)/1e9, float64(ws)/1e9)
	if ws == 0 || math.Abs(float64(wb)/float64(ws)-2) > 0.6 {
		t.Errorf("--wall: fixture_block %d ns, fixture_spin %d ns, want about 2:1", wb, ws)
	}
	if t.Failed() {
		t.Logf("record:\n%s", stderr)
	}
	out, stderr, status := nsprof(t, nil, "report", capPath, "--json", "--by", "process", "--pid", fmt.Sprint(pid), "--off-cpu")
	if status != 0 {
		t.Fatalf("report: status %d\n%s", status, stderr)
	}
	var r struct {
		Groups []struct {
			NSPID int32 `json:"nspid"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 1 || r.Groups[0].NSPID != 1 {
		t.Errorf("report --by process --pid %d: %+v, want one process of namespace pid 1", pid, r.Groups)
	}
}

// TestOffCPUPerCPUSamplesTargetOnly: with --off-cpu, a command or -p
// is sampled by a cpu-clock event per CPU, which samples every process
// that runs: the capture keeps the target's samples and none of another
// process spinning beside it all along (the same fixture binary), nor of
// nsprof; the summary counts those left out.
func TestOffCPUPerCPUSamplesTargetOnly(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "offcpu")
	for _, mode := range []string{"command", "-p"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			other := exec.Command(bin, "1", "0", "20000", filepath.Join(dir, "other-times"))
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				other.Process.Kill()
				other.Wait()
			})
			capPath := filepath.Join(dir, "off.syscap")
			args := []string{"record", "--off-cpu", "-o", capPath}
			target := 0
			if mode == "-p" {
				cmd := exec.Command(bin, "8", "200", "100", filepath.Join(dir, "times"))
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					cmd.Process.Kill()
					cmd.Wait()
				})
				target = cmd.Process.Pid
				args = append(args, "-p", fmt.Sprint(target), "--duration", "1.5")
			} else {
				args = append(args, "--", bin, "4", "200", "100", filepath.Join(dir, "times"))
			}
			_, stderr, status := nsprof(t, nil, args...)
			if status != 0 {
				t.Fatalf("record %q: status %d\n%s", args, status, stderr)
			}
			dump, _, status := nsprof(t, nil, "dump", "-t", "SAMPLE", "-t", "PROCESS", capPath)
			if status != 0 {
				t.Fatal("dump failed")
			}
			samples := map[int]int{}
			var procs []int
			for _, l := range strings.Split(dump, "\n") {
				f := strings.Fields(l)
				if len(f) < 4 || !strings.HasPrefix(f[2], "pid=") {
					continue
				}
				pid, _ := strconv.Atoi(strings.TrimPrefix(f[2], "pid="))
				switch f[3] {
				case "SAMPLE":
					samples[pid]++
				case "PROCESS":
					procs = append(procs, pid)
				}
			}
			if mode == "command" && len(procs) == 1 {
				target = procs[0]
			}
			if len(procs) != 1 || procs[0] != target {
				t.Fatalf("processes in the capture: %v, want the target alone (pid %d)", procs, target)
			}
			t.Logf("samples by pid: %v; target %d, spinning beside it %d, nsprof %d", samples, target, other.Process.Pid, os.Getpid())
			if samples[target] < 50 {
				t.Errorf("%d samples of the target, want at least 50 (it spins 100 ms of every 300)", samples[target])
			}
			for pid, n := range samples {
				if pid != target {
					t.Errorf("%d samples of pid %d, not the target %d (the process spinning beside it is %d, nsprof %d)", n, pid, target, other.Process.Pid, os.Getpid())
				}
			}
			m := regexp.MustCompile(`(\d+) samples of other processes left out`).FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("the summary counts no samples of other processes left out: the other process spun all along\n%s", stderr)
			}
			if n, _ := strconv.Atoi(m[1]); n < 100 {
				t.Errorf("%d samples of other processes left out, want at least 100 (one spun all along)", n)
			}
		})
	}
}

// sysprofReadsOffCPU checks what Sysprof 3.46's reader sees of a
// capture with off-CPU time or blocking calls: the whole capture; the
// SAMPLE frames nsprof dump shows, and as many as the CPU samples nsprof
// reports (the off-CPU and blocking stacks are not SAMPLE frames, which
// Sysprof's callgraph counts as CPU samples), none under a marker frame
// (a JIT address); and, with off-CPU time, as MARK frames of group off-cpu, exactly the
// intervals of the capture's __nsprof_offcpu__ at least the mark
// threshold long, with their process, thread, time, duration and state.
// It returns the off-CPU marks Sysprof read.
func sysprofReadsOffCPU(t *testing.T, path string) (marks int) {
	t.Helper()
	lines, end := testutils.SysprofReadAll(t, path)
	if !strings.HasSuffix(end, "ok=1") {
		t.Fatalf("Sysprof's reader stopped early: %s", end)
	}
	dump, _, status := nsprof(t, nil, "dump", "-t", "SAMPLE", path)
	if status != 0 {
		t.Fatal("dump failed")
	}
	var ours, theirs, theirMarks []string
	for _, l := range strings.Split(strings.TrimSpace(dump), "\n") {
		if strings.Contains(l, " SAMPLE ") {
			ours = append(ours, l)
		}
	}
	marked := 0
	for _, l := range lines {
		if strings.Contains(l, " SAMPLE ") {
			theirs = append(theirs, l)
			if strings.Contains(l, ",0xe0000000000000") {
				marked++
			}
		}
		if strings.Contains(l, ` MARK `) && strings.Contains(l, ` group="off-cpu" `) {
			theirMarks = append(theirMarks, l)
		}
	}
	out, stderr, status := nsprof(t, nil, "report", path, "--json")
	if status != 0 {
		t.Fatalf("report: status %d\n%s", status, stderr)
	}
	var r struct {
		Capture struct {
			Samples int64 `json:"samples"`
		} `json:"capture"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if cpu := r.Capture.Samples; int64(len(theirs)) != cpu || marked != 0 {
		t.Errorf("Sysprof read %d SAMPLE frames (%d under a marker frame: off-CPU or blocking stacks its callgraph counts as CPU samples); nsprof reports %d CPU samples", len(theirs), marked, cpu)
	}
	if len(ours) != len(theirs) {
		t.Fatalf("Sysprof read %d SAMPLE frames, nsprof dumps %d", len(theirs), len(ours))
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Fatalf("frame %d: Sysprof reads\n%s\nnsprof dumps\n%s", i, theirs[i], ours[i])
		}
	}

	// The marks: the intervals of at least the threshold.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var files capture.Files
	markNs := int64(-2)
	intervals := map[string]capture.OffCPU{}
	for {
		f, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch f := f.(type) {
		case *capture.FileChunk:
			files.Add(f)
		case *capture.Metadata:
			if f.ID == capture.MetaOffCPUMarkNs {
				markNs, _ = strconv.ParseInt(f.Value, 10, 64)
			}
		}
	}
	if !files.Has(capture.OffCPUFile) {
		if len(theirMarks) > 0 {
			t.Errorf("Sysprof read %d off-CPU marks of a capture without off-CPU time", len(theirMarks))
		}
		return 0 // --blocking alone
	}
	recs, err := capture.DecodeOffCPU(mustLookup(t, &files, capture.OffCPUFile))
	if err != nil {
		t.Fatal(err)
	}
	if markNs < -1 {
		t.Fatalf("no %s metadata", capture.MetaOffCPUMarkNs)
	}
	start := cr.Header().StartTime
	rel := func(ns int64) string {
		sign := "+"
		if ns < 0 {
			sign, ns = "-", -ns
		}
		return fmt.Sprintf("%s%d.%09d", sign, ns/1e9, ns%1e9)
	}
	want := 0
	for _, rec := range recs {
		if markNs >= 0 && rec.Duration >= markNs {
			intervals[fmt.Sprintf("%s duration=%s name=%q message=%q", rel(rec.Time-start), rel(rec.Duration),
				capture.OffCPUMarkName(rec.State), capture.OffCPUMarkMessage(rec.TID))] = rec
			want++
		}
	}
	for _, l := range theirMarks {
		// +0.046975531 cpu=-1 pid=9616 MARK duration=+0.200084515 group="off-cpu" name="S sleeping" message="tid 9616"
		f := strings.Fields(l)
		key := f[0] + " " + strings.Replace(l[strings.Index(l, "duration="):], ` group="off-cpu"`, "", 1)
		if _, ok := intervals[key]; !ok {
			t.Errorf("Sysprof read an off-CPU mark of no interval of %s: %s", capture.OffCPUFile, l)
		}
		delete(intervals, key)
	}
	for k := range intervals {
		t.Errorf("Sysprof read no mark of the interval %s", k)
	}
	t.Logf("Sysprof read %d SAMPLE frames (%d CPU samples reported) and %d off-CPU marks (%d intervals of %d at least %dns)",
		len(theirs), r.Capture.Samples, len(theirMarks), want, len(recs), markNs)
	return len(theirMarks)
}

// mustLookup returns the embedded file at path.
func mustLookup(t *testing.T, fs *capture.Files, path string) []byte {
	t.Helper()
	b, err := fs.Lookup(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pprofTotal exports the capture as a pprof profile with args and
// returns the first sample type's sum over the samples through function
// fn; that type must be typ, in nanoseconds (the one args select).
func pprofTotal(t *testing.T, capPath, fn, typ string, args ...string) int64 {
	t.Helper()
	pb := filepath.Join(t.TempDir(), "p.pb.gz")
	if _, stderr, status := nsprof(t, nil, append([]string{"export", capPath, "--format", "pprof", "-o", pb}, args...)...); status != 0 {
		t.Fatalf("export %q: status %d\n%s", args, status, stderr)
	}
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prof, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(prof.SampleType) == 0 || prof.SampleType[0].Type != typ || prof.SampleType[0].Unit != "nanoseconds" {
		t.Fatalf("export %q: sample types %v, want %s in nanoseconds first", args, prof.SampleType, typ)
	}
	var n int64
	for _, s := range prof.Sample {
		through := false
		for _, l := range s.Location {
			for _, ln := range l.Line {
				through = through || ln.Function.Name == fn
			}
		}
		if through {
			n += s.Value[0]
		}
	}
	return n
}

// TestOffCPUPodmanRootless: record --off-cpu -p on the target of a
// rootless podman container (its own user, PID and mount namespaces)
// gives its sleeps (usleep(1000) after each burst of work, in main) as
// off-CPU time under the sleeping marker, with the stack through main,
// labelled with its container and namespace pid.
func TestOffCPUPodmanRootless(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	pid, id := containers.StartPodmanRootless(t, "overlay")
	capPath := filepath.Join(t.TempDir(), "off.syscap")
	if _, stderr, status := nsprof(t, nil, "record", "--off-cpu", "-p", fmt.Sprint(pid), "--duration", "2", "-o", capPath); status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	sel := []string{"--pid", fmt.Sprint(pid)}
	off, _ := functionTotals(t, capPath, append(sel, "--off-cpu")...)
	sleep, inMain := off["[off-CPU: S sleeping]"], off["main"]
	t.Logf("off_cpu of pid %d: sleeping %.3fs, through main %.3fs", pid, float64(sleep)/1e9, float64(inMain)/1e9)
	if sleep < 100e6 || inMain < sleep*9/10 {
		t.Errorf("off_cpu: %d ns sleeping, %d ns through main; want at least 100 ms, nearly all through main: %v", sleep, inMain, off)
	}
	out, stderr, status := nsprof(t, nil, append([]string{"report", capPath, "--json", "--by", "process", "--off-cpu"}, sel...)...)
	if status != 0 {
		t.Fatalf("report: status %d\n%s", status, stderr)
	}
	var r struct {
		Groups []struct {
			NSPID     int32  `json:"nspid"`
			Container string `json:"container"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 1 || r.Groups[0].NSPID == 0 || !strings.HasPrefix(r.Groups[0].Container, "podman:") {
		t.Errorf("report --by process: %+v, want the process of podman container %.12s with its namespace pid", r.Groups, id)
	}
}
