package main

import (
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// A static glibc program's startup code has no frame pointers, so the
// kernel's frame-pointer walk goes on past __libc_start_call_main and
// reads a function pointer left on the stack (the address of
// __do_global_dtors_aux), which used to be named register_tm_clones at the
// root of every stack. The recorder drops such addresses: no call
// instruction precedes them. Every stack through the fixture's chain must
// start at __libc_start_call_main (the main thread and the forked child)
// or start_thread (the worker thread).
func TestStaticProgramRoots(t *testing.T) {
	bin := testutils.BuildFixture(t, "callchain", "-static")
	stacks, total, log := foldedStacks(t, "--", bin, "1", "1")
	chain := 0
	for s, n := range stacks {
		if !strings.Contains(s, ";fixture_outer;") {
			continue
		}
		chain += n
		root, _, _ := strings.Cut(s, ";")
		if root != "__libc_start_call_main" && root != "start_thread" {
			t.Errorf("%d samples with root %s: %s", n, root, s)
		}
	}
	if chain*10 < total*9 {
		t.Errorf("%d of %d samples through fixture_outer; recorder log:\n%s", chain, total, log)
	}
}

// The fakeframe fixture's frame-pointer chain runs, past its last real
// frame, into a data address and then a function pointer (see
// fakeframe.c). Both are left out: every stack through fakeframe_leaf
// starts at fakeframe_tramp, its real caller.
func TestFakeFrameRoots(t *testing.T) {
	bin := testutils.BuildFixture(t, "fakeframe")
	stacks, total, log := foldedStacks(t, "--", bin, "1")
	leaf := 0
	for s, n := range stacks {
		if !strings.Contains(s, "fakeframe_leaf") {
			continue
		}
		leaf += n
		if !strings.HasPrefix(s, "fakeframe_tramp;fakeframe_leaf") {
			t.Errorf("%d samples on %s, want the root fakeframe_tramp", n, s)
		}
	}
	if leaf*10 < total*9 {
		t.Errorf("%d of %d samples through fakeframe_leaf; recorder log:\n%s", leaf, total, log)
	}
}
