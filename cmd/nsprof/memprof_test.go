package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/record"
)

// memprofLib builds preload/memprof.c as the Makefile does and points
// nsprof at it through NSPROF_MEMPROF_LIB.
func memprofLib(t *testing.T) {
	t.Helper()
	testutils.RequireRoot(t, "recording tests need root")
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutils.RequireCI(t, "gcc not found (apt-get install gcc): %v", err)
	}
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "preload", "memprof.c")
	lib := filepath.Join(t.TempDir(), record.MemprofLibName)
	cmd := exec.Command(gcc, "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-fno-omit-frame-pointer",
		"-fvisibility=hidden", "-pthread", "-o", lib, src, "-ldl", "-lm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", src, err, b)
	}
	t.Setenv(record.MemprofLibEnv, lib)
}

// memRow is one row of the "Top functions by bytes" table.
type memRow struct{ selfBytes, selfCalls, totalBytes, totalCalls int64 }

var memRowRE = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)`)

// memTop parses the first table of `report --memory` by function name.
func memTop(t *testing.T, out string) map[string]memRow {
	t.Helper()
	_, table, ok := strings.Cut(out, "Top functions by bytes")
	if !ok {
		t.Fatalf("no function table in:\n%s", out)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := map[string]memRow{}
	for _, line := range strings.Split(table, "\n") {
		m := memRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var v [4]int64
		for i := range v {
			v[i], _ = strconv.ParseInt(m[i+1], 10, 64)
		}
		rows[m[5]] = memRow{v[0], v[1], v[2], v[3]}
	}
	return rows
}

// TestMemprofFixture records the fixture whose allocations are known
// (fixtures/memprof.c), with and without CPU sampling, and checks the
// report's exact per-function totals, the leak and its stack, the fork
// child and that Sysprof 3.46's reader reads every ALLOCATION frame.
func TestMemprofFixture(t *testing.T) {
	memprofLib(t)
	fixture := testutils.BuildFixture(t, "memprof")
	for _, perf := range []bool{false, true} {
		t.Run(fmt.Sprintf("perf=%t", perf), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "mem.syscap")
			args := []string{"record", "--memprof", "--no-cpu", "--no-disk", "--no-network", "-o", out}
			if !perf {
				args = append(args, "--no-perf")
			}
			_, stderr, status := nsprof(t, nil, append(args, "--", fixture)...)
			if status != 0 {
				t.Fatalf("record: status %d\n%s", status, stderr)
			}
			if strings.Contains(stderr, "lost") {
				t.Errorf("events lost:\n%s", stderr)
			}
			rep, stderr, status := nsprof(t, nil, "report", "--memory", "-n", "0", out)
			if status != 0 {
				t.Fatalf("report: status %d\n%s", status, stderr)
			}
			rows := memTop(t, rep)
			want := map[string]memRow{
				"alloc_small":   {2400, 100, 2400, 100},
				"alloc_calloc":  {1000, 1, 1000, 1}, // nmemb × size
				"grow_buffer":   {55000, 10, 55000, 10},
				"alloc_array":   {63, 1, 63, 1},
				"alloc_aligned": {996, 4, 996, 4},
				"leak_memory":   {4242, 1, 4242, 1},
				"thread_work":   {256000, 4000, 256000, 4000},
				"child_work":    {5120, 10, 5120, 10},
			}
			for fn, w := range want {
				if got, ok := rows[fn]; !ok || got != w {
					t.Errorf("%s: got %+v (found %t), want %+v", fn, got, ok, w)
				}
			}
			if m := rows["main"]; m.totalBytes < 2400+1000+55000+63+996+4242 {
				t.Errorf("main total %d bytes, want at least its callees'", m.totalBytes)
			}
			_, leaks, _ := strings.Cut(rep, "Leaks by stack")
			leaks, _, _ = strings.Cut(leaks, "Temporary allocations")
			if !regexp.MustCompile(`(?m)^  4242 bytes in 1 objects, pid \d+\n\s+leak_memory \(\S+\)\n\s+main \(`).MatchString(leaks) {
				t.Errorf("leak of 4242 bytes from leak_memory <- main not reported:\n%s", leaks)
			}
			if strings.Contains(leaks, "grow_buffer") || strings.Contains(leaks, "thread_work") {
				t.Errorf("freed blocks reported as leaks:\n%s", leaks)
			}
			_, temps, _ := strings.Cut(rep, "Temporary allocations by stack")
			if !strings.Contains(temps, "2400 bytes in 100 objects") {
				t.Errorf("alloc_small's 100 temporary blocks not reported:\n%s", temps)
			}
			// The fork child is its own process.
			pidOf := map[string]string{}
			for _, m := range regexp.MustCompile(`pid (\d+)\n\s+(leak_memory|child_work) `).FindAllStringSubmatch(rep, -1) {
				pidOf[m[2]] = m[1]
			}
			if pidOf["leak_memory"] == "" || pidOf["child_work"] == "" || pidOf["leak_memory"] == pidOf["child_work"] {
				t.Errorf("fork child not recorded as its own process: %v", pidOf)
			}
			if !perf {
				sysprofReadsAllocations(t, out)
			}
			checkMemoryExport(t, out, rows, want)
		})
	}
}

// checkMemoryExport exports a memprof capture as a pprof heap profile and
// reads it back with go tool pprof, once per sample type: every
// function's flat and cumulative bytes and objects equal the report's
// (rows), the fixture's exact totals (want) among them, and in-use is
// the leak alone. The folded export weighs the same stacks by bytes.
func checkMemoryExport(t *testing.T, capPath string, rows map[string]memRow, want map[string]memRow) {
	t.Helper()
	pb := filepath.Join(t.TempDir(), "heap.pb.gz")
	if _, stderr, status := nsprof(t, nil, "export", capPath, "--memory", "--format", "pprof", "-o", pb); status != 0 {
		t.Fatalf("export --memory: status %d\n%s", status, stderr)
	}
	typ, space := pprofMemTop(t, pb, "")
	if typ != "alloc_space" {
		t.Errorf("default sample type %q, want alloc_space", typ)
	}
	_, objects := pprofMemTop(t, pb, "alloc_objects")
	pbInuse := filepath.Join(t.TempDir(), "inuse.pb.gz")
	if _, stderr, status := nsprof(t, nil, "export", capPath, "--memory", "--memory-value", "inuse_space", "--format", "pprof", "-o", pbInuse); status != 0 {
		t.Fatalf("export --memory --memory-value inuse_space: status %d\n%s", status, stderr)
	}
	if typ, _ := pprofMemTop(t, pbInuse, ""); typ != "inuse_space" {
		t.Errorf("--memory-value inuse_space: default sample type %q", typ)
	}
	for fn, r := range rows {
		if got := space[fn]; got != [2]int64{r.selfBytes, r.totalBytes} {
			t.Errorf("pprof alloc_space of %s: flat, cum %v, report %d %d", fn, got, r.selfBytes, r.totalBytes)
		}
		if got := objects[fn]; got != [2]int64{r.selfCalls, r.totalCalls} {
			t.Errorf("pprof alloc_objects of %s: flat, cum %v, report %d %d", fn, got, r.selfCalls, r.totalCalls)
		}
	}
	for fn, w := range want {
		if got := space[fn]; got[0] != w.selfBytes {
			t.Errorf("pprof alloc_space of %s: %d bytes, want %d", fn, got[0], w.selfBytes)
		}
	}
	if len(space) != len(rows) {
		t.Errorf("pprof lists %d functions, the report %d", len(space), len(rows))
	}
	_, inuse := pprofMemTop(t, pb, "inuse_space")
	_, inuseObj := pprofMemTop(t, pb, "inuse_objects")
	if inuse["leak_memory"] != [2]int64{4242, 4242} || inuseObj["leak_memory"] != [2]int64{1, 1} || inuse["main"][1] != 4242 {
		t.Errorf("pprof inuse: leak_memory %v bytes %v objects, main %v; want the 4242-byte leak", inuse["leak_memory"], inuseObj["leak_memory"], inuse["main"])
	}
	for _, fn := range []string{"grow_buffer", "thread_work", "alloc_small", "child_work"} {
		if inuse[fn] != [2]int64{} {
			t.Errorf("pprof inuse_space of freed %s: %v", fn, inuse[fn])
		}
	}
	folded, stderr, status := nsprof(t, nil, "export", capPath, "--memory", "--format", "folded")
	if status != 0 {
		t.Fatalf("export --memory --format folded: status %d\n%s", status, stderr)
	}
	leaf := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(l, ' ')
		n, err := strconv.ParseInt(l[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("folded line %q", l)
		}
		leaf[l[strings.LastIndexByte(l[:i], ';')+1:i]] += n
	}
	for fn, w := range want {
		if leaf[fn] != w.selfBytes {
			t.Errorf("folded --memory: %s %d bytes, want %d", fn, leaf[fn], w.selfBytes)
		}
	}
}

// pprofMemTop runs go tool pprof -top on a heap profile with sample type
// index ("" for the default) and returns the type shown and each
// function's flat and cumulative values, in bytes or objects.
func pprofMemTop(t *testing.T, pb, index string) (string, map[string][2]int64) {
	t.Helper()
	gobin := testutils.LookPathOrSkip(t, "go")
	args := []string{"tool", "pprof", "-top", "-unit=B", "-nodefraction=0", "-nodecount=1000"}
	if index != "" {
		args = append(args, "-sample_index="+index)
	}
	out, err := exec.Command(gobin, append(args, pb)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %s: %v\n%s", strings.Join(args[2:], " "), err, out)
	}
	typ := ""
	rows := map[string][2]int64{}
	inRows := false
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Type: "); ok {
			typ = v
		}
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == "flat" {
			inRows = true
			continue
		}
		if !inRows || len(f) < 6 {
			continue
		}
		flat, err1 := strconv.ParseInt(strings.TrimSuffix(f[0], "B"), 10, 64)
		cum, err2 := strconv.ParseInt(strings.TrimSuffix(f[3], "B"), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("pprof row %q", line)
		}
		// An inlined function's row says so ("calloc (inline)", as
		// glibc's ld.so calls calloc through an inline wrapper).
		rows[strings.TrimSuffix(strings.Join(f[5:], " "), " (inline)")] = [2]int64{flat, cum}
	}
	if len(rows) == 0 {
		t.Fatalf("no rows in go tool pprof output:\n%s", out)
	}
	return typ, rows
}

// sysprofReadsAllocations checks that Sysprof 3.46's reader sees the same
// ALLOCATION frames as nsprof dump.
func sysprofReadsAllocations(t *testing.T, path string) {
	t.Helper()
	lines, end := testutils.SysprofReadAll(t, path)
	if !strings.Contains(end, "ok=1") {
		t.Fatalf("Sysprof's reader stopped early: %s", end)
	}
	dump, _, status := nsprof(t, nil, "dump", "-t", "ALLOCATION", path)
	if status != 0 {
		t.Fatal("dump failed")
	}
	var ours, theirs []string
	for _, l := range strings.Split(strings.TrimSpace(dump), "\n") {
		if strings.Contains(l, " ALLOCATION ") {
			ours = append(ours, l)
		}
	}
	for _, l := range lines {
		if strings.Contains(l, " ALLOCATION ") {
			theirs = append(theirs, l)
		}
	}
	if len(ours) == 0 || len(ours) != len(theirs) {
		t.Fatalf("Sysprof read %d ALLOCATION frames, nsprof %d", len(theirs), len(ours))
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Fatalf("frame %d: Sysprof reads\n%s\nnsprof dumps\n%s", i, theirs[i], ours[i])
		}
	}
}

// TestMemprofStress runs 8 threads of malloc/free churn: every event
// arrives (none lost, no deadlock), and in sampling mode the 8 M
// allocations' estimated bytes and count are within 3% of the truth. The
// full 8 × 1 M run without sampling is bench/memprof.sh's.
//
// Sampling one allocation per 16 KiB takes about 49,000 of the 800 MB, so
// the estimate's standard error is about 1/sqrt(49000) = 0.45% (measured:
// 0.52% over 12 runs), and 3% is over 5 of them. At one per 64 KiB it was
// 0.9% (measured 1.0% over 20 runs): 3% was a 3-sigma bound, and a run
// under load missed it by drawing +3.1%.
func TestMemprofStress(t *testing.T) {
	memprofLib(t)
	stress := testutils.BuildFixture(t, "memstress")
	t.Run("all", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "stress.syscap")
		_, stderr, status := nsprof(t, nil, "record", "--memprof", "--no-perf", "--no-cpu", "--no-disk", "--no-network", "-o", out, "--", stress, "8", "100000", "100")
		if status != 0 {
			t.Fatalf("record: status %d\n%s", status, stderr)
		}
		if strings.Contains(stderr, "lost") {
			t.Errorf("events lost:\n%s", stderr)
		}
		rep, _, _ := nsprof(t, nil, "report", "--memory", "-n", "0", out)
		if got, want := memTop(t, rep)["churn"], (memRow{80000000, 800000, 80000000, 800000}); got != want {
			t.Errorf("churn: got %+v, want %+v", got, want)
		}
	})
	t.Run("sampled", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "sampled.syscap")
		_, stderr, status := nsprof(t, nil, "record", "--memprof", "--memprof-sample", "16384", "--no-perf", "--no-cpu", "--no-disk", "--no-network", "-o", out, "--", stress, "8", "1000000", "100")
		if status != 0 {
			t.Fatalf("record: status %d\n%s", status, stderr)
		}
		rep, _, _ := nsprof(t, nil, "report", "--memory", "-n", "0", out)
		got := memTop(t, rep)["churn"]
		if d := float64(got.selfBytes)/8e8 - 1; d > 0.03 || d < -0.03 {
			t.Errorf("churn: estimated %d bytes, want 800000000 ± 3%%", got.selfBytes)
		}
		if d := float64(got.selfCalls)/8e6 - 1; d > 0.03 || d < -0.03 {
			t.Errorf("churn: estimated %d allocations, want 8000000 ± 3%%", got.selfCalls)
		}
		// Every sampled block of churn is freed, so none of its stacks
		// may be live at the end. Other live blocks may be: the dynamic
		// loader's TLS blocks of threads whose stacks glibc caches
		// (calloc in ld-linux), when the sampling happens to pick one.
		_, leaks, ok := strings.Cut(rep, "Leaks by stack")
		leaks, _, _ = strings.Cut(leaks, "Temporary allocations")
		if !ok || strings.Contains(leaks, "churn") {
			t.Errorf("sampled frees not matched:\n%s", rep)
		}
	})
}

// TestMemprofUsage checks the flag combinations refused.
func TestMemprofUsage(t *testing.T) {
	for _, args := range [][]string{
		{"record", "--memprof-sample", "100", "--", "true"},
		{"record", "--memprof", "--memprof-sample", "-1", "--", "true"},
		{"record", "--memprof", "-p", "1"},
		{"report", "--memory", "--marks", "x.syscap"},
		{"report", "--value", "alloc_space", "--summary", "x.syscap"},
		{"export", "--memory", "--format", "folded", "--memory-value", "bytes", "x.syscap"},
		{"export", "--format", "folded", "--memory-value", "inuse_space", "x.syscap"},
	} {
		if _, _, status := nsprof(t, nil, args...); status != 2 {
			t.Errorf("%q: status %d, want 2", args, status)
		}
	}
}

// TestMemprofEventTimes: every ALLOCATION frame's time lies within the
// CLOCK_MONOTONIC readings the program took just before and after the
// malloc or free (fixtures/memclock.c, 4 threads × 20000 blocks of
// unique sizes), both when the preload extrapolates times from the TSC
// (most of them, counted in the nsprof.memprof.tsc-times metadata) and
// when it reads the clock for every event.
func TestMemprofEventTimes(t *testing.T) {
	memprofLib(t)
	bin := testutils.BuildFixture(t, "memclock")
	const threads, count = 4, 20000
	// Extrapolated times may be off by the rate's and the anchor's error:
	// tens of ns. Order across threads needs them well under the time
	// between two threads' events on one block.
	const slack = 200
	for _, mode := range []string{"tsc", "gettime"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			out, log := filepath.Join(dir, "clock.syscap"), filepath.Join(dir, "brackets")
			_, stderr, status := nsprof(t, nil, "record", "--memprof", "-e", "NSPROF_MEMPROF_CLOCK="+mode, "--no-perf", "--no-cpu", "--no-disk", "--no-network", "--no-memory",
				"-o", out, "--", bin, strconv.Itoa(threads), strconv.Itoa(count), log)
			if status != 0 {
				t.Fatalf("record: status %d\n%s", status, stderr)
			}
			type bracket struct{ lo, hi [2]int64 } // malloc, free
			want := map[int64]*bracket{}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var size int64
				var v [4]int64
				if _, err := fmt.Sscan(line, &size, &v[0], &v[1], &v[2], &v[3]); err != nil {
					t.Fatalf("bracket line %q: %v", line, err)
				}
				want[size] = &bracket{lo: [2]int64{v[0], v[2]}, hi: [2]int64{v[1], v[3]}}
			}
			if len(want) != threads*count {
				t.Fatalf("%d brackets, want %d", len(want), threads*count)
			}
			r, err := capture.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			type key struct {
				tid  int32
				addr uint64
			}
			pending := map[key]int64{} // a bracketed block's allocation, by thread and address
			checked, worst := 0, int64(0)
			tscTimes := int64(-1)
			check := func(size int64, i int, at int64) {
				bk := want[size]
				lo, hi := bk.lo[i]-slack, bk.hi[i]+slack
				worst = max(worst, bk.lo[i]-at, at-bk.hi[i])
				if at < lo || at > hi {
					t.Errorf("block of %d bytes: %s at %d, outside [%d, %d] by %d ns", size, []string{"malloc", "free"}[i], at, bk.lo[i], bk.hi[i], max(bk.lo[i]-at, at-bk.hi[i]))
				}
				checked++
			}
			for {
				f, err := r.Next()
				if err != nil {
					break
				}
				switch f := f.(type) {
				case *capture.Metadata:
					if f.ID == "nsprof.memprof.tsc-times" {
						tscTimes, _ = strconv.ParseInt(f.Value, 10, 64)
					}
				case *capture.Allocation:
					k := key{f.TID, f.Addr}
					if f.Size > 0 {
						if want[f.Size] != nil {
							check(f.Size, 0, f.Time)
							pending[k] = f.Size
						}
					} else if size, ok := pending[k]; ok {
						check(size, 1, f.Time)
						delete(pending, k)
					}
				}
			}
			if t.Failed() {
				return
			}
			if checked != 2*threads*count {
				t.Errorf("%d event times checked, want %d", checked, 2*threads*count)
			}
			t.Logf("%d event times within their brackets (worst %d ns outside); %d times from the TSC", checked, worst, tscTimes)
			switch {
			case mode == "tsc" && tscTimes < int64(checked)/2:
				t.Errorf("%d event times from the TSC, want most of %d: the extrapolation was not exercised", tscTimes, checked)
			case mode == "gettime" && tscTimes != 0:
				t.Errorf("%d event times from the TSC with NSPROF_MEMPROF_CLOCK=gettime", tscTimes)
			}
		})
	}
}

// TestMemprofInlineFrames: allocations made from a function inlined into
// another are charged to the inlined function by report --memory (from
// the source lines the recording bundled), and to the one it was inlined
// into with --no-inline; the folded heap export follows. An allocation
// whose return address lies in code inlined after the call is charged to
// the caller.
func TestMemprofInlineFrames(t *testing.T) {
	memprofLib(t)
	bin := testutils.BuildFixture(t, "meminline", "-O2")
	out := filepath.Join(t.TempDir(), "meminline.syscap")
	_, stderr, status := nsprof(t, nil, "record", "--memprof", "--no-perf", "--no-cpu", "--no-disk", "--no-network", "--no-memory", "-o", out, "--", bin)
	if status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	const bytes, calls = 4096 * 1000, 1000
	rep, _, _ := nsprof(t, nil, "report", "--memory", "-n", "0", out)
	top := memTop(t, rep)
	if got := top["mi_block"]; got.selfBytes != bytes || got.selfCalls != calls {
		t.Errorf("mi_block: %+v, want %d bytes in %d calls of its own\n%s", got, bytes, calls, rep)
	}
	if got := top["mi_outer"]; got.selfBytes != 0 || got.totalBytes != bytes {
		t.Errorf("mi_outer: %+v, want %d bytes in total, none of its own\n%s", got, bytes, rep)
	}
	// malloc returns into mi_after's inlined code; the call is mi_plain's.
	if got := top["mi_plain"]; got.selfBytes != 2048*1000 || top["mi_after"] != (memRow{}) {
		t.Errorf("mi_plain %+v, mi_after %+v; want %d bytes of mi_plain's own and no mi_after\n%s", got, top["mi_after"], 2048*1000, rep)
	}
	flat, _, _ := nsprof(t, nil, "report", "--memory", "--no-inline", "-n", "0", out)
	top = memTop(t, flat)
	if got := top["mi_outer"]; got.selfBytes != bytes || top["mi_block"] != (memRow{}) {
		t.Errorf("--no-inline: mi_outer %+v, mi_block %+v; want %d bytes of mi_outer's own and no mi_block\n%s", got, top["mi_block"], bytes, flat)
	}
	folded, _, _ := nsprof(t, nil, "export", "--memory", "--format", "folded", out)
	if !strings.Contains(folded, ";mi_outer;mi_block "+strconv.Itoa(bytes)) {
		t.Errorf("folded heap profile has no main...;mi_outer;mi_block %d line:\n%s", bytes, folded)
	}
}

// memLostRE matches the "lost" line of report --memory and --summary.
var memLostRE = regexp.MustCompile(`(\d+) events not recorded \((\d+) with the ring full, (\d+) in signal handlers with no room\)`)

// TestMemprofSignalHandler: a SIGALRM handler makes 2000 malloc(777)
// calls while the thread churns malloc(32)/free, so most signals land
// inside the preload's hooks (fixtures/memsignal.c). Every allocation is
// recorded, or counted as lost in signal handlers, and the count is the
// same in record's summary, report --memory and report --summary.
// Before the preload recorded them, about 94% were missing and nothing
// said so.
func TestMemprofSignalHandler(t *testing.T) {
	memprofLib(t)
	bin := testutils.BuildFixture(t, "memsignal")
	const made, size = 2000, 777
	out := filepath.Join(t.TempDir(), "signal.syscap")
	_, stderr, status := nsprof(t, nil, "record", "--memprof", "--no-perf", "--no-cpu", "--no-disk", "--no-network", "--no-memory",
		"-o", out, "--", bin, strconv.Itoa(made))
	if status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	rep, _, status := nsprof(t, nil, "report", "--memory", "-n", "0", out)
	if status != 0 {
		t.Fatalf("report --memory: status %d", status)
	}
	m := memLostRE.FindStringSubmatch(rep)
	if m == nil {
		t.Fatalf("report --memory does not say what was not recorded:\n%s", rep)
	}
	dropped, _ := strconv.ParseInt(m[3], 10, 64)
	got := memTop(t, rep)["on_signal"]
	if got.selfCalls+dropped != made || got.selfBytes != size*got.selfCalls {
		t.Errorf("on_signal: %d allocations of %d bytes recorded and %d dropped, want %d made", got.selfCalls, got.selfBytes, dropped, made)
	}
	// Recorded, not merely counted: the handler finds the ring or a side
	// slot free but for a handler interrupting another.
	if dropped > made/100 {
		t.Errorf("%d of %d allocations in the signal handler dropped", dropped, made)
	}
	t.Logf("%d of %d allocations in the signal handler recorded, %d dropped", got.selfCalls, made, dropped)
	if dropped > 0 && !strings.Contains(stderr, fmt.Sprintf("%d in signal handlers", dropped)) {
		t.Errorf("record's summary does not count the %d dropped:\n%s", dropped, stderr)
	}
	sum, _, _ := nsprof(t, nil, "report", "--summary", out)
	if s := memLostRE.FindStringSubmatch(sum); s == nil || s[0] != m[0] {
		t.Errorf("report --summary says %q, report --memory %q:\n%s", s, m[0], sum)
	}
}

// TestMemprofAllocAPIs records the allocator's corner cases
// (fixtures/memapis.c): malloc(0) and the other calls that return a
// block of 0 bytes are allocations, later freed, not frees; pvalloc is
// recorded with its size rounded up to whole pages; realloc(p, 0) frees
// p. The heap export and dump agree.
func TestMemprofAllocAPIs(t *testing.T) {
	memprofLib(t)
	bin := testutils.BuildFixture(t, "memapis")
	out := filepath.Join(t.TempDir(), "apis.syscap")
	_, stderr, status := nsprof(t, nil, "record", "--memprof", "--no-perf", "--no-cpu", "--no-disk", "--no-network", "--no-memory", "-o", out, "--", bin)
	if status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	rep, _, status := nsprof(t, nil, "report", "--memory", "-n", "0", out)
	if status != 0 {
		t.Fatalf("report --memory: status %d", status)
	}
	page := int64(os.Getpagesize())
	rows := memTop(t, rep)
	want := map[string]memRow{
		"alloc_zero":      {0, 10, 0, 10},
		"alloc_zero_apis": {0, 7, 0, 7},
		"alloc_pvalloc":   {5 * page, 4, 5 * page, 4},
		"alloc_valloc":    {100, 1, 100, 1},
		"alloc_memalign":  {756, 3, 756, 3},
		"shrink_to_zero":  {300, 1, 300, 1},
	}
	for fn, w := range want {
		if got, ok := rows[fn]; !ok || got != w {
			t.Errorf("%s: got %+v (found %t), want %+v", fn, got, ok, w)
		}
	}
	// Every block of the fixture is freed: only stdio's buffer may leak.
	lk := regexp.MustCompile(`leaked .* in (\d+) objects`).FindStringSubmatch(rep)
	if lk == nil {
		t.Fatalf("no leak line:\n%s", rep)
	}
	if n, _ := strconv.Atoi(lk[1]); n > 1 {
		t.Errorf("%d objects leaked, want at most stdout's buffer: frees not matched to their blocks\n%s", n, rep)
	}
	pb := filepath.Join(t.TempDir(), "heap.pb.gz")
	if _, stderr, status := nsprof(t, nil, "export", out, "--memory", "--format", "pprof", "-o", pb); status != 0 {
		t.Fatalf("export --memory: status %d\n%s", status, stderr)
	}
	if _, objects := pprofMemTop(t, pb, "alloc_objects"); objects["alloc_zero"] != [2]int64{10, 10} {
		t.Errorf("pprof alloc_objects of alloc_zero: %v, want 10", objects["alloc_zero"])
	}
	dump, _, _ := nsprof(t, nil, "dump", "-t", "ALLOCATION", out)
	if n := strings.Count(dump, " size=0 "); n != 17 {
		t.Errorf("dump shows %d allocations of size 0, want 17", n)
	}
}

// TestMemprofInPIDNamespace records the fixture run as pid 1 of its own
// PID namespace: the preload lays its events out as ALLOCATION frames
// with the ids it sees, and the recorder must give every frame the
// host's pid (a recorded process's, not 1), and the main threads of
// unshare, the program and its fork child their host tid, their pid. (Worker
// threads that exit before the recorder reads their registration keep
// their namespace tid, as before the frames were written from the
// rings: /proc no longer lists them.) The totals are the fixture's and
// Sysprof's reader reads every frame.
func TestMemprofInPIDNamespace(t *testing.T) {
	memprofLib(t)
	unshare := testutils.LookPathOrSkip(t, "unshare")
	fixture := testutils.BuildFixture(t, "memprof")
	out := filepath.Join(t.TempDir(), "mem.syscap")
	_, stderr, status := nsprof(t, nil, "record", "--memprof", "--no-perf", "--no-cpu", "--no-disk", "--no-network", "-o", out,
		"--", unshare, "--pid", "--fork", "--", fixture)
	if status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	rep, stderr, status := nsprof(t, nil, "report", "--memory", "-n", "0", out)
	if status != 0 {
		t.Fatalf("report: status %d\n%s", status, stderr)
	}
	rows := memTop(t, rep)
	for fn, w := range map[string]memRow{"thread_work": {256000, 4000, 256000, 4000}, "child_work": {5120, 10, 5120, 10}, "leak_memory": {4242, 1, 4242, 1}} {
		if got := rows[fn]; got != w {
			t.Errorf("%s: got %+v, want %+v", fn, got, w)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	procs := map[int32]bool{}
	ids := map[[2]int32]int{}
	for {
		f, err := rd.Next()
		if err != nil {
			break
		}
		switch f := f.(type) {
		case *capture.Process:
			procs[f.PID] = true
		case *capture.Allocation:
			ids[[2]int32{f.PID, f.TID}]++
		}
	}
	if len(ids) < 3 {
		t.Fatalf("ALLOCATION frames of %d threads, want the main thread, a worker and the fork child: %v", len(ids), ids)
	}
	mains := 0
	for id, n := range ids {
		if id[0] <= 1 || !procs[id[0]] {
			t.Errorf("%d ALLOCATION frames of pid %d tid %d: not the host pid of a recorded process (%v)", n, id[0], id[1], procs)
		}
		if id[0] == id[1] {
			mains++
		}
	}
	if mains != 3 {
		t.Errorf("ALLOCATION frames of %d main threads with host ids, want unshare's, the program's and its fork child's: %v", mains, ids)
	}
	sysprofReadsAllocations(t, out)
}

// TestMemprofDiskFull records a malloc-heavy program into a 2 MiB tmpfs:
// the frames written straight from the rings (one writev a chunk) fill
// it, and nsprof stops with a clear error and a non-zero status, leaving
// a capture that nsprof and Sysprof's reader read cleanly to its last
// whole frame.
func TestMemprofDiskFull(t *testing.T) {
	memprofLib(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		testutils.RequireCI(t, "mount tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	fixture := testutils.BuildFixture(t, "memstress", "-pthread")
	out := filepath.Join(dir, "c.syscap")
	// 2 threads × 200,000 malloc/free pairs: about 40 MB of frames.
	_, stderr, status := nsprof(t, nil, "record", "--memprof", "--no-perf", "--no-cpu", "--no-disk", "--no-network", "--no-memory", "-o", out,
		"--", fixture, "2", "200000", "100")
	if status == 0 {
		t.Fatalf("exit 0 on a full disk; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, "no space left on device") {
		t.Errorf("stderr does not say why:\n%s", stderr)
	}
	if frames := readClean(t, out); len(frames) == 0 {
		t.Fatal("nothing readable in the capture")
	}
	if _, end := testutils.SysprofReadAll(t, out); !strings.HasSuffix(end, "ok=1") {
		t.Errorf("libsysprof-capture: %s", end)
	}
}
