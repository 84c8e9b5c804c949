package record

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// quiet leaves out the counters, which these tests do not look at.
var quiet = Options{NoCPU: true, NoMemory: true, NoDisk: true, NoNetwork: true}

// TestRecordCommand records the callchain fixture (main thread, two
// threads, a forked child) from its exec and checks the process model, the
// known call chains, the build-id, and that Sysprof's own reader reads the
// capture to its end.
func TestRecordCommand(t *testing.T) {
	requirePerf(t)
	bin := testutils.BuildFixture(t, "callchain")
	opts := quiet
	opts.Command = []string{bin, "1", "2"}
	path, res := recordTo(t, context.Background(), opts)
	if res.ExitCode != 0 || res.Stopped != "command exited" {
		t.Fatalf("result %+v", res)
	}
	c := load(t, path)

	var procs []int32
	for pid, names := range c.processes {
		if slices.Contains(names, bin+" 1 2") {
			procs = append(procs, pid)
		}
	}
	if len(procs) != 2 {
		t.Fatalf("fixture processes %v, want the main one and its forked child (PROCESS frames: %v)", procs, c.processes)
	}
	// The main process is the one that forked the other.
	main, child := procs[0], procs[1]
	for _, f := range c.forks {
		if f.ChildPID == main {
			main, child = child, main
		}
	}
	threads := map[int32]bool{main: true}
	for _, f := range c.forks {
		if f.PID == main && f.ChildPID != child {
			threads[f.ChildPID] = true
		}
	}
	if len(threads) != 3 {
		t.Errorf("main process threads %v, want 3 (FORK frames %d)", threads, len(c.forks))
	}
	for _, pid := range procs {
		if !c.exits[pid] {
			t.Errorf("no EXIT frame for %d", pid)
		}
	}

	var mainMap *capture.Map
	for _, m := range c.maps[main] {
		if m.Filename == bin {
			mainMap = m
		}
	}
	if mainMap == nil {
		t.Fatalf("no MAP of %s for pid %d", bin, main)
	}
	if want := buildID(t, bin); mainMap.BuildID != want {
		t.Errorf("MAP build-id %q, want %q", mainMap.BuildID, want)
	}

	sym := newELFNamer(t, bin)
	perTID := map[int32]int{}
	good, total := 0, 0
	for _, s := range c.samples {
		if s.PID != main && s.PID != child {
			continue
		}
		perTID[s.TID]++
		chain := sym.userChain(c.maps[s.PID], s.Addrs)
		i := slices.Index(chain, "fixture_outer")
		if i < 0 {
			total++ // time spent elsewhere (startup, clock_gettime in the vdso)
			continue
		}
		total++
		root := "worker_thread"
		switch {
		case s.PID == child:
			root = "child_main"
		case s.TID == main:
			root = "main"
		}
		ok := i >= 2 && chain[i-1] == "fixture_middle" && chain[i-2] == "fixture_inner" &&
			i+1 < len(chain) && chain[i+1] == root
		if ok {
			good++
		} else if total-good < 5 {
			t.Logf("tid %d: unexpected chain %v", s.TID, chain)
		}
	}
	if total < 500 {
		t.Fatalf("only %d samples of the fixture", total)
	}
	if frac := float64(good) / float64(total); frac < 0.8 {
		t.Errorf("%d of %d samples (%.0f%%) show the known call chain", good, total, 100*frac)
	}
	for tid := range threads {
		if perTID[tid] == 0 {
			t.Errorf("no samples of thread %d", tid)
		}
	}
	if perTID[child] == 0 {
		t.Errorf("no samples of the forked child %d", child)
	}

	_, end := testutils.SysprofReadAll(t, path)
	if want := fmt.Sprintf("END frames=%d ", len(c.frames)); !strings.HasPrefix(end, want) || !strings.HasSuffix(end, "ok=1") {
		t.Errorf("libsysprof-capture: %s, want %s… ok=1", end, want)
	}
}

// TestRecordKernelFrames checks that a syscall-heavy program's samples
// carry kernel callchains.
func TestRecordKernelFrames(t *testing.T) {
	requirePerf(t)
	opts := quiet
	opts.Command = []string{testutils.BuildFixture(t, "syscalls"), "0.5"}
	path, _ := recordTo(t, context.Background(), opts)
	c := load(t, path)
	withKernel := 0
	for _, s := range c.samples {
		if len(s.Addrs) > 1 && s.Addrs[0] == capture.ContextKernel && s.Addrs[1] >= 0xffff800000000000 {
			withKernel++
		}
	}
	// At least 50 samples (the fixture's half second gives about 100 on
	// a quiet machine, fewer under load), a quarter with kernel frames.
	if len(c.samples) < 50 || withKernel < len(c.samples)/4 {
		t.Errorf("%d of %d samples have kernel frames", withKernel, len(c.samples))
	}
}

// checkEveryPIDDescribed requires a PROCESS frame for every sampled pid and
// mappings for every pid sampled in user space. One exception, logged and
// bounded: a short-lived process whose /proc files were unreadable when
// the recorder looked (it was in the middle of an exec, or already gone),
// so that it has a nameless PROCESS frame and no mappings. At most 3 such
// processes, with fewer than 20 user samples each: a process that ran
// long enough to be read must be described.
func checkEveryPIDDescribed(t *testing.T, c *captured) {
	t.Helper()
	unreadable := func(pid int32) bool {
		names := c.processes[pid]
		return len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return n != "" })
	}
	userSamples := map[int32]int{}
	for _, s := range c.samples {
		if slices.Contains(s.Addrs, capture.ContextUser) {
			userSamples[s.PID]++
		}
	}
	// A process the recorder found exiting, its mappings already gone
	// from /proc, says so in its process info: its exit-time samples
	// cannot be named.
	exitedUnmapped := map[int32]bool{}
	infos, _, err := capture.ReadProcessFile(&c.files)
	if err != nil {
		t.Errorf("process info: %v", err)
	}
	for _, pi := range infos {
		if strings.Contains(pi.Err, errExitedUnmapped) {
			exitedUnmapped[int32(pi.PID)] = true
		}
	}
	exempt := map[int32]int{}
	for pid, n := range userSamples {
		if (unreadable(pid) || exitedUnmapped[pid] && c.exits[pid]) && len(c.maps[pid]) == 0 {
			exempt[pid] = n
		}
	}
	if len(exempt) > 0 {
		t.Logf("nameless or exiting processes without mappings (pid: user samples): %v", exempt)
	}
	for pid, n := range exempt {
		if n >= 20 || len(exempt) > 3 {
			t.Errorf("nameless process %d without mappings has %d user samples (%d such processes)", pid, n, len(exempt))
		}
	}
	missing := map[int32]string{}
	for _, s := range c.samples {
		if len(c.processes[s.PID]) == 0 {
			missing[s.PID] = "PROCESS"
		}
		if _, ok := exempt[s.PID]; slices.Contains(s.Addrs, capture.ContextUser) && len(c.maps[s.PID]) == 0 && !ok {
			missing[s.PID] = "MAP"
		}
	}
	if len(missing) > 0 {
		t.Errorf("sampled pids without frames: %v", missing)
		for pid := range missing {
			n := 0
			for _, s := range c.samples {
				if s.PID == pid {
					n++
				}
			}
			var forks []string
			for _, f := range c.forks {
				if f.ChildPID == pid || f.PID == pid {
					forks = append(forks, fmt.Sprintf("%d->%d@%d", f.PID, f.ChildPID, f.Time))
				}
			}
			t.Logf("pid %d: %d samples, names %q, exited %v, forks %v", pid, n, c.processes[pid], c.exits[pid], forks)
			logPIDTimeline(t, c, pid)
		}
	}
}

// logPIDTimeline logs, for a failure's diagnosis, the frames of pid in
// file order as nsprof dump prints them (samples counted, not listed;
// times from the capture's first frame), and what the process-info file
// says of it.
func logPIDTimeline(t *testing.T, c *captured, pid int32) {
	t.Helper()
	d := capture.Dumper{}
	if len(c.frames) > 0 {
		d.Start = c.frames[0].Head().Time
	}
	var lines []string
	samples := 0
	flush := func() {
		if samples > 0 {
			lines = append(lines, fmt.Sprintf("  %d samples", samples))
			samples = 0
		}
	}
	for _, f := range c.frames {
		h := f.Head()
		if h.PID != pid {
			if fk, ok := f.(*capture.Fork); !ok || fk.ChildPID != pid {
				continue
			}
		}
		if f.Type() == capture.TypeSample {
			samples++
			continue
		}
		flush()
		line := string(d.Append(nil, f))
		if len(line) > 200 {
			line = line[:200] + "..."
		}
		lines = append(lines, "  "+line)
	}
	flush()
	if data, ok := c.files.Raw(capture.ProcessFile); ok {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, fmt.Sprintf(`"pid":%d,`, pid)) || strings.Contains(l, fmt.Sprintf(`"pid":%d}`, pid)) {
				lines = append(lines, "  info "+l)
			}
		}
	}
	if len(lines) > 40 {
		lines = append(lines[:40], "  ...")
	}
	t.Logf("pid %d in the capture:\n%s", pid, strings.Join(lines, "\n"))
}

// TestRecordPIDs records an already running process with -p semantics.
func TestRecordPIDs(t *testing.T) {
	requirePerf(t)
	cmd := exec.Command(testutils.BuildFixture(t, "callchain"), "5", "1", "nofork")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(200 * time.Millisecond)
	opts := quiet
	opts.PIDs = []int{cmd.Process.Pid}
	opts.Duration = time.Second
	path, res := recordTo(t, context.Background(), opts)
	if res.Stopped != "duration" {
		t.Errorf("stopped by %q", res.Stopped)
	}
	c := load(t, path)
	tids := map[int32]bool{}
	for _, s := range c.samples {
		if s.PID != int32(cmd.Process.Pid) {
			t.Fatalf("sample of pid %d, recording only %d", s.PID, cmd.Process.Pid)
		}
		tids[s.TID] = true
	}
	if len(c.samples) < 300 || len(tids) != 2 {
		t.Errorf("%d samples from threads %v, want both threads busy for 1s", len(c.samples), tids)
	}
	checkEveryPIDDescribed(t, c)
}

// TestDurationCountsFromSetUp: Options.Duration counts from the end of
// setting up, not from the call: with setting up made 600 ms slow, a
// 400 ms recording of a busy process still samples it for about 400 ms
// after that (before, the deadline had passed when the loop began, and
// it stopped at once).
func TestDurationCountsFromSetUp(t *testing.T) {
	requirePerf(t)
	cmd := exec.Command(testutils.BuildFixture(t, "callchain"), "5", "1", "nofork")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var setUp int64
	defer func(f func()) { afterSetup = f }(afterSetup)
	afterSetup = func() {
		time.Sleep(600 * time.Millisecond)
		setUp = capture.Now()
	}
	opts := quiet
	opts.PIDs = []int{cmd.Process.Pid}
	opts.Duration = 400 * time.Millisecond
	path, res := recordTo(t, context.Background(), opts)
	if res.Stopped != "duration" {
		t.Errorf("stopped by %q", res.Stopped)
	}
	last := setUp
	for _, s := range load(t, path).samples {
		last = max(last, s.Time)
	}
	if after := time.Duration(last - setUp); after < 300*time.Millisecond || after > 2*time.Second {
		t.Errorf("samples for %v after setting up ended, want about 400ms", after)
	}
}

// TestRecordSystemWide records everything for 2 seconds while processes
// start and exit.
func TestRecordSystemWide(t *testing.T) {
	requirePerf(t)
	busy := testutils.BuildFixture(t, "callchain")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The processes start once the recorder is set up: setting up a
	// system-wide recording reads every process, and in a CI run beside
	// other test packages it took longer than the 300 ms the loop waited
	// (4 of 30 /bin/true seen).
	ready := make(chan struct{})
	defer func(f func()) { afterSetup = f }(afterSetup)
	afterSetup = func() { close(ready) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		time.Sleep(300 * time.Millisecond)
		exec.CommandContext(ctx, "sh", "-c", "for i in $(seq 30); do /bin/true; sleep 0.01; done").Run()
		exec.CommandContext(ctx, busy, "0.5", "1").Run()
	}()
	opts := quiet
	opts.Duration = 2 * time.Second
	path, _ := recordTo(t, context.Background(), opts)
	<-done
	c := load(t, path)
	checkEveryPIDDescribed(t, c)
	trues := 0
	for pid, names := range c.processes {
		// Exec'd processes that exit before /proc is read are named by
		// their comm.
		if (slices.Contains(names, "/bin/true") || slices.Contains(names, "true")) && c.exits[pid] {
			trues++
		}
	}
	if trues < 20 {
		t.Errorf("saw %d of 30 short-lived /bin/true processes start and exit", trues)
	}
	busyPID := int32(0)
	for pid, names := range c.processes {
		if slices.Contains(names, busy+" 0.5 1") {
			busyPID = pid
		}
	}
	n := 0
	for _, s := range c.samples {
		if s.PID == busyPID {
			n++
		}
	}
	// It burns 0.5 s (about 500 samples alone); on a loaded machine (CI
	// runs test packages side by side) it gets less: 37 once, with a
	// full CI run and a second test run beside it. What is checked is
	// that a process started while recording has its samples.
	if n < 10 {
		t.Errorf("%d samples of the busy fixture started during the recording", n)
	}
	checkKallsymsExcerpt(t, c)
}

// checkKallsymsExcerpt checks that the kallsyms c embeds names every
// kernel address of its samples (the idle task's included) as this
// machine's /proc/kallsyms does, in an excerpt of it.
func checkKallsymsExcerpt(t *testing.T, c *captured) {
	t.Helper()
	text := embeddedKallsyms(t, c)
	host, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	if len(text)*4 > len(host) {
		t.Errorf("embedded kallsyms of %d bytes, /proc/kallsyms %d: not an excerpt", len(text), len(host))
	}
	part, err := symbol.NewKallsyms(text)
	if err != nil {
		t.Fatalf("embedded kallsyms: %v", err)
	}
	full, err := symbol.NewKallsyms(host)
	if err != nil {
		t.Fatal(err)
	}
	checked, idle := 0, 0
	for _, s := range c.samples {
		kernel := false
		for _, a := range s.Addrs {
			if capture.IsContext(a) {
				kernel = a == capture.ContextKernel
				continue
			}
			want, wok := full.Lookup(a)
			if !kernel || !wok {
				continue
			}
			if got, ok := part.Lookup(a); !ok || got != want {
				t.Fatalf("kernel address %#x of pid %d: the embedded kallsyms names %+v (%v), /proc/kallsyms %+v", a, s.PID, got, ok, want)
			}
			checked++
			if s.PID == 0 {
				idle++
			}
		}
	}
	if checked == 0 {
		t.Error("no kernel address sampled")
	}
	t.Logf("%d kernel addresses (%d of the idle task) named by an embedded kallsyms of %d bytes (/proc/kallsyms: %d)", checked, idle, len(text), len(host))
}

// embeddedKallsyms returns the text of the kallsyms c embeds.
func embeddedKallsyms(t *testing.T, c *captured) []byte {
	t.Helper()
	gz, ok := c.files.Raw("/proc/kallsyms.gz")
	if !ok {
		t.Fatal("kernel symbols not embedded")
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// TestRecordPIDNamespaceTraceFD runs a program in a new PID namespace that
// writes marks and samples through SYSPROF_TRACE_FD with its own pid and
// tids; after the merge they must carry the host pid and the host tids of
// the threads that wrote them. Also with --off-cpu, whose clone
// tracepoints are per CPU (perf.Options.CPUWideTracepoints), hits of
// every process that only the recorded ones' are taken of.
func TestRecordPIDNamespaceTraceFD(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("offcpu=%t", off), func(t *testing.T) { testRecordPIDNamespaceTraceFD(t, off) })
	}
}

func testRecordPIDNamespaceTraceFD(t *testing.T, offCPU bool) {
	requirePerf(t)
	unshare := testutils.LookPathOrSkip(t, "unshare")
	marks := testutils.BuildFixture(t, "tracefd-marks", testutils.PkgConfig(t, "sysprof-capture-4", "libsysprof-4-dev")...)
	opts := quiet
	// Lingering 1 s leaves the recorder time to read the process's /proc
	// files after its exec even on a loaded machine.
	opts.Command = []string{unshare, "--pid", "--fork", "--kill-child", marks, "3", "1"}
	opts.TraceFD = true
	opts.OffCPU = offCPU
	path, res := recordTo(t, context.Background(), opts)
	if res.ExitCode != 0 {
		if strings.Contains(res.Exit, "status 1") {
			testutils.RequireCI(t, "unshare --pid failed: %s", res.Exit)
		}
		t.Fatalf("command %s", res.Exit)
	}
	c := load(t, path)
	procs, threads, err := capture.ReadProcessFile(&c.files)
	if err != nil {
		t.Fatal(err)
	}
	var host int32
	for _, p := range procs {
		if len(p.Cmdline) > 0 && p.Cmdline[0] == marks {
			host = int32(p.PID)
			if len(p.NSpid) != 2 || p.NSpid[1] != 1 {
				t.Errorf("NSpid of %d = %v, want [%d 1]", p.PID, p.NSpid, p.PID)
			}
		}
	}
	if host == 0 || host == 1 {
		for _, p := range procs {
			t.Logf("process %d %q nspid %v", p.PID, p.Cmdline, p.NSpid)
		}
		t.Fatalf("fixture process not found (%d)", host)
	}
	nsOf := map[int32]int{}
	for _, th := range threads {
		if th.PID == int(host) && len(th.NSpid) > 1 {
			nsOf[int32(th.TID)] = th.NSpid[len(th.NSpid)-1]
		}
	}
	var fixtureMarks []*capture.Mark
	for _, m := range c.marks {
		if m.Group == "fixture" {
			fixtureMarks = append(fixtureMarks, m)
		}
	}
	if len(fixtureMarks) != 4 {
		t.Fatalf("%d fixture marks, want 4", len(fixtureMarks))
	}
	for _, m := range fixtureMarks {
		if m.PID != host {
			t.Errorf("mark pid %d, want host pid %d", m.PID, host)
		}
		var s *capture.Sample
		for _, cand := range c.samples {
			if cand.Time == m.Time && len(cand.Addrs) == 2 && cand.Addrs[0] == 0x401000 {
				s = cand
			}
		}
		if s == nil {
			t.Errorf("no trace-fd sample at the mark's time %d", m.Time)
			continue
		}
		ns, ok := nsOf[s.TID]
		if s.PID != host || !ok || "tid="+itoa(ns) != m.Message {
			t.Errorf("sample pid %d tid %d (namespace tid %d, known %t) for mark %q", s.PID, s.TID, ns, ok, m.Message)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestNoPerfStopsWhenCommandExits: without perf events nothing reports the
// command's exit but the child's wait, and the recording must end then,
// not at the next 100 ms tick (short commands under --memprof paid most of
// a tick, and the loop spun until it came).
func TestNoPerfStopsWhenCommandExits(t *testing.T) {
	best := time.Hour
	for range 3 {
		stamp := t.TempDir() + "/exited"
		opts := quiet
		opts.NoPerf = true
		// The exit lands mid-tick: 40 ms into a 100 ms one.
		opts.Command = []string{"sh", "-c", "sleep 0.04; exec date +%s%N >" + stamp}
		_, res := recordTo(t, context.Background(), opts)
		returned := time.Now()
		if res.ExitCode != 0 || res.Stopped != "command exited" {
			t.Fatalf("result %+v", res)
		}
		b, err := os.ReadFile(stamp)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		best = min(best, returned.Sub(time.Unix(0, ns)))
	}
	if best > tick/4 {
		t.Errorf("the recording ended %v after the command's last instant at best (3 runs), want well under a tick (%v)", best, tick)
	}
	t.Logf("the recording ended %v after the command's last instant (best of 3)", best)
}

// TestRecordKernelNotes: a recording embeds the kernel's notes as
// /sys/kernel/notes has them, with the kernel's GNU build-id, which the
// reports give as the build-id of the kernel's pprof mapping.
func TestRecordKernelNotes(t *testing.T) {
	requirePerf(t)
	want, err := os.ReadFile("/sys/kernel/notes")
	if err != nil {
		t.Fatal(err)
	}
	id := symbol.FindBuildIDNote(want, binary.LittleEndian, 4)
	if id == nil {
		t.Fatalf("/sys/kernel/notes has no GNU build-id note: %x", want)
	}
	opts := quiet
	opts.Command = []string{"sleep", "0.1"}
	path, _ := recordTo(t, context.Background(), opts)
	c := load(t, path)
	got, ok := c.files.Raw(capture.KernelNotesFile)
	if !ok {
		t.Fatalf("%s not embedded", capture.KernelNotesFile)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("embedded %s %x, want %x", capture.KernelNotesFile, got, want)
	}
	if gid := symbol.FindBuildIDNote(got, binary.LittleEndian, 4); !bytes.Equal(gid, id) {
		t.Errorf("embedded kernel build-id %x, want %x", gid, id)
	}
}

// goSpin is a Go program that burns CPU for about 0.3 s.
const goSpin = `package main

import "time"

func main() {
	end := time.Now().Add(300 * time.Millisecond)
	n := 0
	for time.Now().Before(end) {
		n++
	}
	println(n > 0)
}
`

// TestRecordGoBuildID records Go binaries, whose build-ids the kernel
// does not give (Go's linker puts the GNU build-id note outside the
// PT_NOTE segment the kernel reads): the MAP frames of the binary carry
// its GNU build-id read from the file, or its Go build-id (hex) when it
// was linked without a GNU one.
func TestRecordGoBuildID(t *testing.T) {
	requirePerf(t)
	goTool := testutils.LookPathOrSkip(t, "go")
	dir := t.TempDir()
	for name, data := range map[string]string{"go.mod": "module spin\n\ngo 1.21\n", "main.go": goSpin} {
		if err := os.WriteFile(dir+"/"+name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, ldflags string }{{"gnu", ""}, {"nognu", "-B=none"}} {
		t.Run(tc.name, func(t *testing.T) {
			bin := dir + "/spin-" + tc.name
			cmd := exec.Command(goTool, "build", "-ldflags="+tc.ldflags, "-o", bin, ".")
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			f, err := symbol.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			want := f.BuildID()
			if tc.ldflags != "" {
				if want != nil {
					t.Fatalf("%s has a GNU build-id %x", bin, want)
				}
				want = f.GoBuildID()
			}
			f.Close()
			if len(want) == 0 {
				t.Fatalf("%s: no build-id to expect", bin)
			}
			opts := quiet
			opts.Command = []string{bin}
			path, _ := recordTo(t, context.Background(), opts)
			c := load(t, path)
			n := 0
			for _, ms := range c.maps {
				for _, m := range ms {
					if m.Filename != bin {
						continue
					}
					n++
					if m.BuildID != hex.EncodeToString(want) {
						t.Errorf("MAP %#x-%#x of %s: build-id %q, want %x (%q)", m.Start, m.End, bin, m.BuildID, want, want)
					}
				}
			}
			if n == 0 {
				t.Errorf("no MAP frame of %s", bin)
			}
		})
	}
}
