package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/perf"
	"nsprof/proc"
	"nsprof/unwind"
)

// An address of the process's anonymous executable memory that its dump
// does not describe is JIT code not described yet (jitMissed), until the
// dump describes it, with call frame information or without; an address
// of no such memory is not.
func TestJITMissed(t *testing.T) {
	b := jitDumpHeader()
	const a, c, v8 = 0x7f0000001000, 0x7f0000001110, 0x7f0000001220
	b = appendJITCode(b, a)
	path, f := openJITDump(t, b)
	u := &dwarfUnwinder{}
	p := &symProc{jit: []jitDump{{f: f}}, other: []span{{0x7f0000000000, 0x7f0000010000}}}
	at := int64(5e9)
	missed := func(pc uint64) bool {
		u.jitMissed = 0
		u.jitModule(p, pc, at)
		return u.jitMissed != 0
	}
	if missed(a + 5) {
		t.Error("described code missed")
	}
	if !missed(c + 5) {
		t.Error("code the dump does not describe yet not missed")
	}
	u.jitModule(p, c+7, at) // further on the same stack
	if u.jitMissed != c+5 {
		t.Errorf("missed at %#x, want the first address, %#x", u.jitMissed, c+5)
	}
	if missed(0x7e0000000000) {
		t.Error("an address of no anonymous executable memory missed")
	}
	b = appendJITCode(b, c)
	b = appendJITLoad(b, v8)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	at += int64(jitUnwindRecheck)
	if missed(c+5) || missed(v8+5) {
		t.Error("code described since still missed")
	}
	if !missed(v8 + 11) {
		t.Error("the address past the last code not missed")
	}
	if p.jitUnwind.reads != 2 {
		t.Errorf("%d reads found codes, want 2", p.jitUnwind.reads)
	}
}

// Spans merge into sorted, disjoint ones: overlapping and touching ones
// join.
func TestMergeSpans(t *testing.T) {
	for _, c := range []struct {
		a, b, want []span
	}{
		{nil, nil, []span{}},
		{[]span{{1, 3}}, nil, []span{{1, 3}}},
		{[]span{{1, 3}, {10, 12}}, []span{{2, 5}, {5, 6}, {20, 21}}, []span{{1, 6}, {10, 12}, {20, 21}}},
		{[]span{{10, 12}}, []span{{1, 2}, {3, 4}, {11, 30}}, []span{{1, 2}, {3, 4}, {10, 30}}},
		{[]span{{1, 100}}, []span{{2, 3}, {50, 60}}, []span{{1, 100}}},
	} {
		if got := mergeSpans(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("mergeSpans(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	var j jitUnwind
	j.known = []span{{0x1000, 0x1010}, {0x2000, 0x2010}}
	for pc, want := range map[uint64]bool{0xfff: false, 0x1000: true, 0x100f: true, 0x1010: false, 0x1500: false, 0x2005: true, 0x3000: false} {
		if got := j.knows(pc); got != want {
			t.Errorf("knows(%#x) = %v, want %v", pc, got, want)
		}
	}
}

// Stack copies put in the spill file are read back as they were, also
// after the file was emptied and filled again.
func TestStackSpill(t *testing.T) {
	var sp stackSpill
	defer sp.close()
	for round := range 2 {
		var offs []int64
		var want [][]byte
		for i := range 40 {
			b := bytes.Repeat([]byte(fmt.Sprintf("%d.%d;", round, i)), 300+i*50)
			off, ok := sp.put(b)
			if !ok {
				t.Fatalf("round %d: copy %d not put", round, i)
			}
			offs, want = append(offs, off), append(want, b)
		}
		for i := len(want) - 1; i >= 0; i-- {
			got, err := sp.get(offs[i], len(want[i]))
			if err != nil || !bytes.Equal(got, want[i]) {
				t.Fatalf("round %d: copy %d read back as %d bytes (%v), want %d bytes %q...", round, i, len(got), err, len(want[i]), want[i][:8])
			}
		}
		sp.reset()
		if st, err := sp.f.Stat(); err != nil || st.Size() != 0 {
			t.Fatalf("round %d: the file has %d bytes after reset (%v)", round, st.Size(), err)
		}
	}
	if _, ok := sp.put(make([]byte, maxJITDeferredBytes+1)); ok {
		t.Error("a copy past the bound put")
	}
}

// jitDumpFile writes a jitdump header followed by the given codes (each an
// unwinding record and a code load, see appendJITCode) to path.
func jitDumpFile(t *testing.T, path string, codes ...uint64) {
	t.Helper()
	b := jitDumpHeader()
	for _, c := range codes {
		b = appendJITCode(b, c)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A deferred sample waits while the dumps do not describe its code, and
// is written once a read does (completed); those of a process whose exit
// was read packGrace ago, and of one that execs, are written then even
// undescribed; the rest when the capture ends.
func TestRetryJIT(t *testing.T) {
	dir := t.TempDir()
	w, err := capture.Create(filepath.Join(dir, "c.syscap"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := &recorder{w: w, opts: &Options{Log: io.Discard}, sym: newSymbolizer()}
	r.dwarf = newDWARFUnwinder(r.sym, proc.FS{Root: dir}, perf.Format{})
	r.sym.jitClosing = func(pid int) { r.retryJIT(int32(pid), true) }
	r.jitq.procs = make(map[int32]*deferredProc)
	const code = 0x7f0000001000
	procs := map[int]string{}
	for _, pid := range []int{1, 2, 3, 4} {
		path := filepath.Join(dir, fmt.Sprintf("jit-%d.dump", pid))
		jitDumpFile(t, path)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r.sym.procs[pid] = &symProc{jit: []jitDump{{f: f}}, other: []span{{code, code + 0x1000}}, mapsTried: true}
		procs[pid] = path
		// Sampled in the trampoline's first instruction: its return
		// address at the top of the stack, into no mapping.
		stack := binary.LittleEndian.AppendUint64(nil, 0x1234)
		dp := &deferredProc{samples: []deferredSample{{time: 1e9, pid: int32(pid), tid: int32(pid),
			regs: unwind.Regs{IP: code, SP: 0x7ffc00000000}, stack: stack, missed: code}}}
		r.jitq.procs[int32(pid)] = dp
		r.jitq.held++
	}
	now := time.Now()
	r.tickJIT(now)
	if r.jitq.held != 4 || r.samples != 0 {
		t.Fatalf("%d held, %d written before any dump describes the code; want 4 and 0", r.jitq.held, r.samples)
	}
	// Process 1's dump describes the code.
	jitDumpFile(t, procs[1], code)
	r.tickJIT(now)
	if r.jitq.procs[1] != nil || r.jitq.completed != 1 || r.samples != 1 {
		t.Errorf("described code: %d completed, %d written, held %v; want 1, 1, none", r.jitq.completed, r.samples, r.jitq.procs[1] != nil)
	}
	// Process 2's exit was read packGrace ago, process 3's just now.
	r.sym.exited(2, 5e9)
	r.sym.exits[0].at = now.Add(-packGrace)
	r.sym.exited(3, 5e9)
	r.tickJIT(now)
	if r.jitq.procs[2] != nil || r.jitq.procs[3] == nil || r.jitq.unresolved != 1 || r.samples != 2 {
		t.Errorf("after exits: process 2 held %v, process 3 held %v, %d written as they were, %d written; want false, true, 1, 2",
			r.jitq.procs[2] != nil, r.jitq.procs[3] != nil, r.jitq.unresolved, r.samples)
	}
	// Process 4 execs.
	r.sym.execed(4, 6e9)
	if r.jitq.procs[4] != nil || r.samples != 3 {
		t.Errorf("after an exec: held %v, %d written; want none and 3", r.jitq.procs[4] != nil, r.samples)
	}
	r.closeJIT()
	if r.jitq.held != 0 || len(r.jitq.procs) != 0 || r.samples != 4 || r.jitq.completed != 1 || r.jitq.unresolved != 3 {
		t.Errorf("at the end: %d held, %d written, %d completed, %d as they were; want 0, 4, 1, 3", r.jitq.held, r.samples, r.jitq.completed, r.jitq.unresolved)
	}
}
