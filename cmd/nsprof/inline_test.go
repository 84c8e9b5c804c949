package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// exportPprof exports the capture at capPath to a pprof file, with the
// extra arguments given, and returns the profile and the file's path.
func exportPprof(t *testing.T, capPath string, args ...string) (*profile.Profile, string) {
	t.Helper()
	pb := filepath.Join(t.TempDir(), "export.pb.gz")
	if _, stderr, status := nsprof(t, nil, append([]string{"export", capPath, "--format", "pprof", "-o", pb}, args...)...); status != 0 {
		t.Fatalf("export pprof: status %d: %s", status, stderr)
	}
	data, err := os.ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	return p, pb
}

// sourceLine returns the 1-based line of the fixture source holding text.
func sourceLine(t *testing.T, fixture, text string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutils.FixtureDir(), fixture+".c"))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%q not in %s.c", text, fixture)
	return 0
}

// TestExportInlineFrames records -O2 code whose hot loop is inlined two
// levels deep, deletes the binary, and exports the capture to pprof: the
// hot locations carry the inline chain inl_leaf <- inl_middle <-
// inl_outer with the source lines of the loop and of both calls, from the
// lines nsprof record bundled, and go tool pprof -lines shows them.
// report and the folded export show the inlined functions as frames
// (inl_leaf has the self time), or with --no-inline as part of inl_outer.
func TestExportInlineFrames(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "inlined")
	b, err := os.ReadFile(testutils.BuildFixture(t, "inlined", "-O2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	capPath := filepath.Join(dir, "inlined.syscap")
	cmd, stderr := nsprofProcess(t, "record", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", capPath, "--", bin, "1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	os.Remove(bin) // the capture must be enough
	p, pb := exportPprof(t, capPath, "--comm", "^inlined")
	// The loop's samples fall on its two lines.
	loop := sourceLine(t, "inlined", "for (unsigned long i = 0; i < n; i++)")
	leaf := sourceLine(t, "inlined", "sink += i * 7;")
	middle := sourceLine(t, "inlined", "\tinl_leaf(n);")
	outer := sourceLine(t, "inlined", "\tinl_middle(n);")
	want := map[string]bool{}
	for _, l := range []int{loop, leaf} {
		want[fmt.Sprintf("[inl_leaf:%d inl_middle:%d inl_outer:%d]", l, middle, outer)] = true
	}
	total, chained := int64(0), int64(0)
	for _, s := range p.Sample {
		total += s.Value[0]
		if len(s.Location) == 0 {
			continue
		}
		var got []string
		for _, l := range s.Location[0].Line {
			got = append(got, fmt.Sprintf("%s:%d", l.Function.Name, l.Line))
		}
		if want[fmt.Sprint(got)] {
			chained += s.Value[0]
		}
	}
	if chained*2 < total {
		t.Errorf("%d of %d samples have a leaf location of %v", chained, total, want)
	}
	gobin := testutils.LookPathOrSkip(t, "go")
	out, err := exec.Command(gobin, "tool", "pprof", "-lines", "-top", pb).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -lines -top: %v\n%s", err, out)
	}
	// The file names are where the fixture was compiled (the build cache
	// may hold another checkout's): match the base name.
	shown := false
	for _, l := range strings.Split(string(out), "\n") {
		for _, n := range []int{loop, leaf} {
			if strings.Contains(l, " inl_leaf ") && strings.HasSuffix(l, fmt.Sprintf("/inlined.c:%d (inline)", n)) {
				shown = true
			}
		}
	}
	if !shown {
		t.Errorf("go tool pprof -lines -top does not show inl_leaf inlined at inlined.c:%d or %d:\n%s", loop, leaf, out)
	}
	checkReportInline(t, capPath)
}

// checkReportInline checks report and the folded export of the capture
// of the inlined fixture, with and without --no-inline.
func checkReportInline(t *testing.T, capPath string) {
	t.Helper()
	self := func(out, fn string) int {
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) >= 4 && f[3] == fn {
				n, _ := strconv.Atoi(f[2])
				return n
			}
		}
		return -1
	}
	rep, stderr, status := nsprof(t, nil, "report", capPath, "--comm", "^inlined")
	if status != 0 {
		t.Fatalf("report: status %d: %s", status, stderr)
	}
	// All three are compiled into inl_outer: a few samples may fall on
	// inl_middle's or inl_outer's own instructions, the loop's are
	// inl_leaf's.
	leaf, middle, outer := self(rep, "inl_leaf"), max(self(rep, "inl_middle"), 0), max(self(rep, "inl_outer"), 0)
	if leaf < 100 || (middle+outer)*20 > leaf {
		t.Errorf("report: self samples inl_leaf %d, inl_middle %d, inl_outer %d; want the loop's in inl_leaf, inlined in the others\n%s", leaf, middle, outer, rep)
	}
	flat, _, _ := nsprof(t, nil, "report", capPath, "--comm", "^inlined", "--no-inline")
	if got := self(flat, "inl_outer"); got != leaf+middle+outer || self(flat, "inl_leaf") != -1 {
		t.Errorf("report --no-inline: inl_outer %d self samples, inl_leaf %d; want %d and not listed\n%s", got, self(flat, "inl_leaf"), leaf+middle+outer, flat)
	}
	folded, _, _ := nsprof(t, nil, "export", capPath, "--format", "folded", "--no-process-root", "--comm", "^inlined", "--focus", "inl_middle")
	all, viaLeaf := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		stack, count, _ := strings.Cut(l, " ")
		n, _ := strconv.Atoi(count)
		all += n
		if stack != "inl_middle" && !strings.HasPrefix(stack, "inl_middle;") {
			t.Errorf("folded --focus inl_middle: stack %q does not start at inl_middle", l)
		}
		if strings.HasPrefix(stack, "inl_middle;inl_leaf") {
			viaLeaf += n
		}
	}
	if all == 0 || viaLeaf*20 < all*19 {
		t.Errorf("folded --focus inl_middle: %d of %d samples through inl_middle;inl_leaf, want 95%%\n%s", viaLeaf, all, folded)
	}
}

// TestReturnAddressInline records a call whose return address is the
// first instruction of code inlined after it (fixture retinline). The
// caller's frame is named from the call itself: no ret_after on the
// stack, and the line of the call in ret_caller. Before, ret_after showed
// between ret_callee and ret_caller on every stack.
func TestReturnAddressInline(t *testing.T) {
	bin := testutils.BuildFixture(t, "retinline", "-O2")
	dir := t.TempDir()
	capPath := filepath.Join(dir, "retinline.syscap")
	cmd, stderr := nsprofProcess(t, "record", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", capPath, "--", bin, "1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	// Kernel frames are left out: an interrupt taken in ret_callee (a
	// loaded machine takes many) is a sample of ret_callee too.
	folded, errOut, status := nsprof(t, nil, "export", capPath, "--format", "folded", "--comm", "^retinline", "--hide-kernel")
	if status != 0 {
		t.Fatalf("export folded: status %d: %s", status, errOut)
	}
	total, right := 0, 0
	for _, l := range strings.Split(folded, "\n") {
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		n, _ := strconv.Atoi(l[i+1:])
		total += n
		// A sample may land in ret_after's own code (the leaf); as
		// ret_callee's caller it is wrong.
		if strings.Contains(l[:i], "ret_after;ret_callee") {
			t.Errorf("ret_after as ret_callee's caller: %s", l)
		}
		if strings.HasSuffix(l[:i], ";main;ret_caller;ret_callee") {
			right += n
		}
	}
	if right*10 < total*9 {
		t.Errorf("%d of %d samples on ...;main;ret_caller;ret_callee:\n%s", right, total, folded)
	}
	p, _ := exportPprof(t, capPath, "--comm", "^retinline")
	// Where ret_callee is the leaf, the next location is ret_caller's
	// call of it: one line, the call's. (A sample in ret_callee's
	// prologue, before its frame pointer is set, skips to main.)
	call := sourceLine(t, "retinline", "\tret_callee(n);")
	want := fmt.Sprintf("ret_caller:%d", call)
	callers, n := map[string]int64{}, int64(0)
	for _, smp := range p.Sample {
		if len(smp.Location) < 2 || len(smp.Location[0].Line) == 0 || smp.Location[0].Line[0].Function.Name != "ret_callee" {
			continue
		}
		var ls []string
		for _, l := range smp.Location[1].Line {
			ls = append(ls, fmt.Sprintf("%s:%d", l.Function.Name, l.Line))
		}
		callers[strings.Join(ls, " ")] += smp.Value[0]
		n += smp.Value[0]
	}
	if callers[want]*10 < n*9 {
		t.Errorf("ret_callee's callers %v, want %s for most of %d samples", callers, want, n)
	}
}

// TestInlineInPodmanRootless: the inlined fixture run in a rootless
// Podman container, recorded with -p: its source lines are bundled once
// for its file, by build-id (lines format 3), and read back through the
// container process's mapping, so report and the folded export show the
// inlined calls as they do on the host.
func TestInlineInPodmanRootless(t *testing.T) {
	requireRoot(t)
	bin := testutils.BuildFixture(t, "inlined", "-O2")
	pid, _ := containers.StartPodmanRootlessProgram(t, "overlay", bin, "3")
	capPath := filepath.Join(t.TempDir(), "podman-inlined.syscap")
	if _, stderr, status := nsprof(t, nil, "record", "-p", strconv.Itoa(pid), "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", capPath); status != 0 {
		t.Fatalf("record -p %d: status %d\n%s", pid, status, stderr)
	}
	lines := filepath.Join(t.TempDir(), "lines.txt")
	if _, stderr, status := nsprof(t, nil, "dump", "--extract", "__nsprof_lines__", "-o", lines, capPath); status != 0 {
		t.Fatalf("dump --extract: status %d\n%s", status, stderr)
	}
	text, err := os.ReadFile(lines)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(text), "nsprof-lines 3\n") || !strings.Contains(string(text), "\n@") || !strings.Contains(string(text), "inl_leaf") {
		t.Errorf("lines file: want version 3 with records of files, inl_leaf among them:\n%.600s", text)
	}
	checkReportInline(t, capPath)
}
