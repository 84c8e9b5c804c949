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

// Samples in glibc's strlen, built without frame pointers, leave rbp at
// its caller's frame, so the kernel's walk skips that caller,
// leafcall_count. With --call-graph fp (the default) the recorder finds
// it from strlen's CFI and a 512-byte stack copy; with fp,0 (the kernel's
// chain alone) strlen shows leafcall_outer as its caller.
func TestLeafCaller(t *testing.T) {
	bin := testutils.BuildFixture(t, "leafcall")
	for _, tc := range []struct {
		callGraph, parent string
	}{
		{"fp", "leafcall_count"},
		{"fp,0", "leafcall_outer"},
	} {
		stacks, total, log := foldedStacks(t, "--call-graph", tc.callGraph, "--", bin, "1")
		inStrlen, right := 0, 0
		for s, n := range stacks {
			f := strings.Split(s, ";")
			if len(f) < 2 || !strings.Contains(f[len(f)-1], "strlen") {
				continue
			}
			inStrlen += n
			if f[len(f)-2] == tc.parent && strings.Contains(s, "main;leafcall_outer;") {
				right += n
			}
		}
		if inStrlen*2 < total {
			t.Fatalf("%s: %d of %d samples in strlen; recorder log:\n%s", tc.callGraph, inStrlen, total, log)
		}
		if right*10 < inStrlen*9 {
			t.Errorf("%s: %d of %d samples in strlen called from %s under leafcall_outer, want 90%%; recorder log:\n%s\nstacks: %v",
				tc.callGraph, right, inStrlen, tc.parent, log, stacks)
		}
	}
}
