package main

import (
	"cmp"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// foldedStacks records args and returns the capture's stacks, root first,
// with their sample counts, and the recorder's log.
func foldedStacks(t *testing.T, args ...string) (stacks map[string]int, total int, log string) {
	t.Helper()
	testutils.RequireRoot(t, "recording tests need root")
	out := filepath.Join(t.TempDir(), "c.syscap")
	_, stderr, status := nsprof(t, nil, append([]string{"record", "-v", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out}, args...)...)
	if status != 0 {
		t.Fatalf("record exited %d: %s", status, stderr)
	}
	folded, errs, status := nsprof(t, nil, "export", out, "--format", "folded", "--no-process-root", "--hide-kernel")
	if status != 0 {
		t.Fatalf("export exited %d: %s", status, errs)
	}
	stacks = make(map[string]int)
	for stack, n := range foldedCounts(t, folded) {
		stacks[stack] = int(n)
		total += int(n)
	}
	return stacks, total, stderr
}

// foldedCounts returns the counts of the folded stacks of export
// --format folded, by stack.
func foldedCounts(t *testing.T, folded string) map[string]int64 {
	t.Helper()
	counts := make(map[string]int64)
	for line := range strings.Lines(folded) {
		line = strings.TrimSpace(line)
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("folded line %q", line)
		}
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		counts[line[:i]] += n
	}
	return counts
}

// omitfpChains counts the fixture's stacks that reach main or the thread
// start routine through the known chain, and those whose comparator is
// reached through libc's qsort.
func omitfpChains(stacks map[string]int) (reached, inCompare, crossed int) {
	for s, n := range stacks {
		f := strings.Split(s, ";")
		root := -1
		for i, name := range f {
			if name == "main" || name == "omitfp_thread" {
				root = i
				break
			}
		}
		leaf := f[len(f)-1]
		if leaf == "omitfp_weigh" || leaf == "omitfp_compare" {
			inCompare += n
		}
		if root < 0 {
			continue
		}
		rest := strings.Join(f[root+1:], ";")
		rest = strings.TrimPrefix(rest, "omitfp_child;")
		if rest != "" && !strings.HasPrefix(rest, "omitfp_run") {
			continue // not the known chain
		}
		reached += n
		if strings.Contains(rest, "omitfp_sort;qsort_r;msort_with_tmp") && strings.Contains(rest, ";omitfp_compare") {
			crossed += n
		}
	}
	return
}

// unreached lists the n most frequent folded stacks that omitfpChains
// does not count as reaching main, with their counts: where unwinding
// stopped.
func unreached(stacks map[string]int, n int) string {
	type st struct {
		s string
		n int
	}
	var miss []st
	for s, c := range stacks {
		if r, _, _ := omitfpChains(map[string]int{s: c}); r == 0 {
			miss = append(miss, st{s, c})
		}
	}
	slices.SortFunc(miss, func(a, b st) int { return cmp.Or(b.n-a.n, strings.Compare(a.s, b.s)) })
	var b strings.Builder
	for i, m := range miss {
		if i == n {
			break
		}
		fmt.Fprintf(&b, "%6d %s\n", m.n, m.s)
	}
	return b.String()
}

// The -O2 -fomit-frame-pointer fixture (two threads and a forked child,
// its hot code called back by libc's qsort): with --call-graph dwarf at
// least 99% of its samples reach main or the thread start routine through
// the known chain, crossing qsort's libc frames, where frame pointers
// break at the first frame.
func TestRecordCallGraphDWARF(t *testing.T) {
	bin := testutils.BuildFixture(t, "omitfp", "-O2", "-fomit-frame-pointer")
	for _, mode := range []string{"dwarf", "fp", "dwarf-no-decode"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--call-graph", mode}
			switch mode {
			case "fp":
				args = []string{"-g"}
			case "dwarf-no-decode":
				args = []string{"--call-graph", "dwarf,16384", "--no-decode"}
			}
			stacks, total, log := foldedStacks(t, append(args, "--", bin, "1", "2")...)
			reached, inCompare, crossed := omitfpChains(stacks)
			t.Logf("%s: %d samples, %d reach main or omitfp_thread through the known chain, %d of %d in the comparator cross qsort", mode, total, reached, crossed, inCompare)
			if total < 500 {
				t.Fatalf("only %d samples", total)
			}
			if mode == "fp" {
				if reached*2 > total {
					t.Errorf("frame pointers reached main in %d of %d samples: the fixture keeps frame pointers?", reached, total)
				}
				return
			}
			if !strings.Contains(log, "dwarf unwinding: ") {
				t.Errorf("no unwinding summary in the log:\n%s", log)
			}
			if reached*100 < total*99 {
				t.Errorf("%d of %d samples reach main or omitfp_thread, want >= 99%%\nlog:\n%s\nstacks that do not, most frequent first:\n%s", reached, total, log, unreached(stacks, 8))
			}
			if crossed*100 < inCompare*99 || inCompare*2 < total {
				t.Errorf("%d of %d comparator samples cross qsort (of %d samples)", crossed, inCompare, total)
			}
		})
	}
}

// CFI is read through the process, as symbols are: a process in a
// pivot_root container, whose binary's host path holds a decoy, unwinds to
// main through the container's own files.
func TestRecordCallGraphDWARFContainer(t *testing.T) {
	testutils.RequireRoot(t, "containers need root")
	pid := containers.StartPivot(t)
	// Two seconds: on a loaded machine one second gave 60 samples, where
	// one stray sample failed the 99 %.
	stacks, total, log := foldedStacks(t, "-p", strconv.Itoa(pid), "--duration", "2", "--call-graph", "dwarf")
	// The hot samples come through the chain; the rest (time, usleep in
	// libc and the vdso) through main, or are in main's own code.
	want := "main;ctr_hot_outer;ctr_hot_middle;ctr_hot_leaf"
	reached := 0
	for s, n := range stacks {
		if strings.HasSuffix(s, ";ctr_jit_code") {
			// Generated code has no CFI: DWARF unwinding stops there,
			// as perf's does. It is a small share of the time.
			total -= n
			continue
		}
		if strings.Contains(s, want) || ((strings.Contains(s, ";main;") || strings.HasSuffix(s, ";main")) && !strings.Contains(s, "ctr_hot")) {
			reached += n
		} else {
			t.Logf("%d: %s", n, s)
		}
	}
	t.Logf("%d of %d samples reach main, through %s in the hot code", reached, total, want)
	if total < 50 || reached*100 < total*99 {
		t.Errorf("%d of %d samples reach main through %s\nlog:\n%s", reached, total, want, log)
	}
}

func TestRecordCallGraphUsage(t *testing.T) {
	for _, c := range []struct {
		arg         string
		dwarf, leaf int
		err         string
	}{
		{"fp", 0, defaultLeafStack, ""},
		{"fp,0", 0, 0, ""},
		{"fp,100", 0, 104, ""},
		{"fp,-8", 0, 0, "want a size"},
		{"dwarf", 8192, 0, ""},
		{"dwarf,100", 104, 0, ""},
		{"dwarf,65528", 65528, 0, ""},
		{"dwarf,65536", 0, 0, "at most 65528"},
		{"dwarf,0", 0, 0, "want a size"},
		{"dwarf,x", 0, 0, "want a size"},
		{"lbr", 0, 0, "want fp[,SIZE] or dwarf[,SIZE]"},
	} {
		dwarf, leaf, err := parseCallGraph(c.arg)
		if dwarf != c.dwarf || leaf != c.leaf || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %d %d %v, want %d %d %q", c.arg, dwarf, leaf, err, c.dwarf, c.leaf, c.err)
		}
	}
	_, stderr, status := nsprof(t, nil, "record", "--call-graph", "lbr", "-o", filepath.Join(t.TempDir(), "x"), "--", "true")
	if status != 2 || !strings.Contains(stderr, "want fp[,SIZE] or dwarf[,SIZE]") {
		t.Errorf("--call-graph lbr: status %d, %s", status, stderr)
	}
}

// Code built without unwind tables has its CFI only in .debug_frame, and
// a stripped binary's .debug_frame is in its debug file: --call-graph
// dwarf finds the file through .gnu_debuglink (next to the binary, CRC
// checked) and unwinds the fixture to main. Reading only the binary's own
// CFI, none of about 1950 samples got there.
func TestRecordCallGraphDWARFDebugFile(t *testing.T) {
	built := testutils.BuildFixture(t, "omitfp", "-O2", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")
	objcopy := testutils.LookPathOrSkip(t, "objcopy")
	dir := t.TempDir()
	bin, debug := filepath.Join(dir, "omitfp"), filepath.Join(dir, "omitfp.debug")
	for _, args := range [][]string{
		{"--only-keep-debug", built, debug},
		{"--strip-debug", "--add-gnu-debuglink=" + debug, built, bin},
	} {
		if out, err := exec.Command(objcopy, args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, out)
		}
	}
	// Two seconds of two threads: about 4,000 samples on an idle
	// machine; a loaded one gave 186 of one second. 200 are enough for
	// the 99 % to mean something.
	stacks, total, log := foldedStacks(t, "--call-graph", "dwarf", "--", bin, "2", "2")
	reached, _, _ := omitfpChains(stacks)
	t.Logf("%d of %d samples reach main or omitfp_thread", reached, total)
	if total < 200 {
		t.Fatalf("only %d samples", total)
	}
	if reached*100 < total*99 {
		t.Errorf("%d of %d samples reach main or omitfp_thread, want >= 99%%\nlog:\n%s", reached, total, log)
	}
}

// A stack the stack copy cuts short ends in a [stack truncated] frame at
// its root instead of passing for a complete one; a stack that fits is
// not marked. With --call-graph dwarf,1024 the fixture's 60-deep
// recursion (256 bytes a frame) is cut and its shallow call is not.
func TestRecordCallGraphDWARFTruncated(t *testing.T) {
	bin := testutils.BuildFixture(t, "deepstack", "-O2", "-fomit-frame-pointer")
	stacks, total, log := foldedStacks(t, "--call-graph", "dwarf,1024", "--", bin, "1")
	var deep, deepMarked, shallow, shallowMarked int
	for s, n := range stacks {
		marked := strings.HasPrefix(s, "[stack truncated];")
		switch {
		case strings.HasSuffix(s, ";deep_leaf") || strings.Contains(s, ";deep_rec"):
			deep += n
			if marked {
				deepMarked += n
			}
		case strings.HasSuffix(s, ";shallow_leaf"):
			shallow += n
			if marked {
				shallowMarked += n
			} else if !strings.Contains(s, "main;shallow_leaf") {
				t.Errorf("a shallow stack does not reach main: %s", s)
			}
		}
		if !marked && strings.Contains(s, "[stack truncated]") {
			t.Errorf("[stack truncated] not at the root: %s", s)
		}
	}
	t.Logf("%d samples: %d deep (%d marked truncated), %d shallow (%d marked)", total, deep, deepMarked, shallow, shallowMarked)
	if deep < total/4 || shallow < total/4 {
		t.Fatalf("deep %d, shallow %d of %d samples: the fixture should split its time", deep, shallow, total)
	}
	if deepMarked*100 < deep*99 {
		t.Errorf("%d of %d deep stacks marked truncated, want >= 99%%\nlog:\n%s", deepMarked, deep, log)
	}
	if shallowMarked != 0 {
		t.Errorf("%d of %d shallow stacks marked truncated", shallowMarked, shallow)
	}
}
