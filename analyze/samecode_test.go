package analyze

import (
	"bytes"
	"sync"
	"testing"

	"nsprof/capture"
)

// namesOf names the addresses it holds, by process, and counts what it
// was asked.
type namesOf struct {
	mu    sync.Mutex
	names map[[2]uint64]string
	asked map[[2]uint64]int
}

func (n *namesOf) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	k := [2]uint64{uint64(pid), addr}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.asked[k]++
	name, ok := n.names[k]
	return Location{Function: name}, ok
}

// TestSymbolizeSameCodeOnce: the frames at one offset of one file (by
// build-id) in several processes are named once, from the first, and
// share its name; a file with another build-id at the same path and
// address, a frame where a process's mapping replaced another's that no
// bundle names in a process sampled before the replacement (see
// TestSameCodeAfterExec), or a file without a build-id is named on its
// own; and a frame whose first could not be named is named on its own.
func TestSymbolizeSameCodeOnce(t *testing.T) {
	type mapping struct {
		start, off uint64
		file, id   string
		time       int64 // of the MAP frame; 0: 1
	}
	procs := []struct {
		pid  int32
		maps []mapping
		addr uint64
	}{
		{1, []mapping{{0x1000, 0, "/bin/a", "aa", 0}}, 0x1010},
		{2, []mapping{{0x5000, 0, "/bin/a", "aa", 0}}, 0x5010},                                    // same code as pid 1
		{3, []mapping{{0x1000, 0, "/bin/a", "bb", 0}}, 0x1010},                                    // another build of /bin/a
		{4, []mapping{{0x1000, 0, "/bin/old", "cc", 0}, {0x1000, 0, "/bin/a", "aa", 50}}, 0x1010}, // /bin/a replaced /bin/old after the sample
		{5, []mapping{{0x1000, 0, "/bin/a", "", 0}}, 0x1010},                                      // no build-id
		{6, []mapping{{0x7000, 0x2000, "/lib/d", "dd", 0}}, 0x7010},                               // not named in its process...
		{7, []mapping{{0x9000, 0x2000, "/lib/d", "dd", 0}}, 0x9010},                               // ...but in this one
		{8, []mapping{{0x1000, 0, "/bin/old", "cc", 0}, {0x1000, 0, "/bin/a", "aa", 1}}, 0x1010},  // /bin/a replaced /bin/old before the sample: pid 1's code
	}
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, pr := range procs {
		h := capture.FrameHeader{PID: pr.pid, Time: 1, CPU: -1}
		w.WriteFrame(&capture.Process{FrameHeader: h, Cmdline: "p"})
		for _, m := range pr.maps {
			mh := h
			mh.Time = max(m.time, 1)
			w.WriteFrame(&capture.Map{FrameHeader: mh, Start: m.start, End: m.start + 0x1000, Offset: m.off, Filename: m.file, BuildID: m.id})
		}
		w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pr.pid, Time: int64(2 + i), CPU: 0}, TID: pr.pid, Addrs: []uint64{capture.ContextUser, pr.addr}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	s := &namesOf{names: map[[2]uint64]string{
		{1, 0x1010}: "a_f", {2, 0x5010}: "wrong: pid 2 is named from pid 1",
		{3, 0x1010}: "b_f", {5, 0x1010}: "noid_f",
		// Pid 4's sample is of its earlier image: asked by the pid
		// standing for it (see splitImages), and not as /bin/a's.
		{imagePIDBase, 0x1010}: "old_f", {4, 0x1010}: "wrong: pid 4's image then was /bin/old",
		{7, 0x9010}: "d_f",
	}, asked: map[[2]uint64]int{}}
	p.Symbolize(s)
	want := map[int32]string{1: "a_f", 2: "a_f", 3: "b_f", 4: "old_f", 5: "noid_f", 6: "d_f", 7: "d_f", 8: "a_f"}
	for _, smp := range p.Samples {
		f := p.Frames[p.Stack(smp.Stack)[0]]
		if f.Loc.Function != want[smp.PID] {
			t.Errorf("pid %d %#x named %q, want %q", smp.PID, f.Addr, f.Loc.Function, want[smp.PID])
		}
	}
	if len(p.Samples) != len(procs) {
		t.Errorf("%d samples, want %d", len(p.Samples), len(procs))
	}
	for _, pid := range []uint64{2, 8} {
		if n := s.asked[[2]uint64{pid, procs[pid-1].addr}]; n != 0 {
			t.Errorf("pid %d's frame was looked up %d times, want 0 (named from pid 1's)", pid, n)
		}
	}
	for _, pr := range procs {
		if pr.pid == 2 || pr.pid == 8 {
			continue
		}
		if n := s.asked[[2]uint64{uint64(pr.pid), pr.addr}]; n != 1 {
			t.Errorf("pid %d's frame was looked up %d times, want 1", pr.pid, n)
		}
	}
}

// TestSameCodeShards: with frames enough to be matched in several shards,
// the frames at one code are one frame, standing for the first sampled
// (in stack order) of them, and every stack's frames are renumbered to
// the merged ones, as one pass over the frames as read finds them.
func TestSameCodeShards(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	type raw struct {
		pid            int32
		addr           uint64
		kernel, caller bool
	}
	var stacks [][]raw
	const procs, perProc = 64, 600
	for pid := int32(1); pid <= procs; pid++ {
		h := capture.FrameHeader{PID: pid, Time: 1, CPU: -1}
		w.WriteFrame(&capture.Process{FrameHeader: h, Cmdline: "p"})
		base := uint64(0x400000) + uint64(pid%4)*0x100000 // four layouts of one file
		w.WriteFrame(&capture.Map{FrameHeader: h, Start: base, End: base + 0x10000, Filename: "/bin/a", BuildID: "aa"})
		for j := range perProc {
			off := uint64((int(pid)*7919 + j*104729) % 0x8000)
			k, u0, u1 := 0xffffffff81000000+off, base+off, base+(off*31)%0x10000
			addrs := []uint64{capture.ContextKernel, k, capture.ContextUser, u0, u1}
			w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pid, Time: int64(2 + j), CPU: 0}, TID: pid, Addrs: addrs})
			stacks = append(stacks, []raw{{pid, k, true, false}, {pid, u0, false, false}, {pid, u1, false, true}})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoSymbolize: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != len(stacks) {
		t.Fatalf("%d samples, want %d", len(p.Samples), len(stacks))
	}
	first := make(map[codeKey]FrameID)
	read := make(map[raw]bool) // the frames as read, one per process and address
	for i, s := range p.Samples {
		st := p.Stack(s.Stack)
		if len(st) != len(stacks[i]) {
			t.Fatalf("sample %d: %d frames, want %d", i, len(st), len(stacks[i]))
		}
		for j, r := range stacks[i] {
			read[r] = true
			got := p.Frames[st[j]]
			k, _, ok := p.codeOf(&frameKey{PID: r.pid, Addr: r.addr, Kernel: r.kernel, Caller: r.caller})
			if !ok {
				t.Fatalf("sample %d frame %d (%+v): no code", i, j, r)
			}
			id, seen := first[k]
			if !seen {
				// The first frame at this code stands for the others.
				if got.PID != r.pid || got.Addr != r.addr || got.Kernel != r.kernel || got.Caller != r.caller {
					t.Fatalf("sample %d frame %d: %+v, want the first at its code %+v", i, j, got, r)
				}
				first[k] = st[j]
				continue
			}
			if st[j] != id {
				t.Fatalf("sample %d frame %d (%+v): frame %d, want %d (%+v) of the same code", i, j, r, st[j], id, p.Frames[id])
			}
		}
	}
	if len(p.Frames) != len(first) {
		t.Errorf("%d frames for %d codes", len(p.Frames), len(first))
	}
	if len(read) < 1<<15 {
		t.Fatalf("%d frames as read: too few for shards", len(read))
	}
	if len(first) == len(read) {
		t.Fatal("no frames share code: the test checks nothing")
	}
	t.Logf("%d frames as read, %d after merging", len(read), len(first))
}

// TestSameCodeAfterExec: in processes that execed a program over the
// image they were forked with, both at one address, a frame there whose
// process's bundle names it shares its code's name with the other
// processes (named once), and one the bundle leaves out (the recorder's
// sample of the earlier image, which the later one shadows) is not named
// from the later image's code in another process; in a process sampled
// only after its exec, one the bundle leaves out is of the later image
// and shares its code's name.
func TestSameCodeAfterExec(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x400000
	var syms []capture.Symbol
	for pid := int32(1); pid <= 4; pid++ {
		w.WriteFrame(&capture.Process{FrameHeader: capture.FrameHeader{PID: pid, Time: 1, CPU: -1}, Cmdline: "go"})
		if pid > 1 {
			// The forked go command's image, then the compiler's.
			w.WriteFrame(&capture.Map{FrameHeader: capture.FrameHeader{PID: pid, Time: 2, CPU: -1}, Start: base, End: base + 0x2000, Filename: "/bin/go", BuildID: "99"})
		}
		w.WriteFrame(&capture.Map{FrameHeader: capture.FrameHeader{PID: pid, Time: 5, CPU: -1}, Start: base, End: base + 0x2000, Filename: "/bin/compile", BuildID: "cc"})
		for _, off := range []uint64{0x10, 0x110} {
			at := int64(10)
			if pid == 3 && off == 0x110 {
				at = 3 // go's, before the exec
			}
			w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pid, Time: at, CPU: 0}, TID: pid, Addrs: []uint64{capture.ContextUser, base + off}})
		}
		// Pid 1 ran the compiler alone; pid 2's compiler was sampled at
		// both addresses; pid 3's at the first only, its sample at the
		// second being go's before the exec, which the recorder leaves
		// out; pid 4's bundle lacks the second too, sampled after the
		// exec (a symbol the recorder could not name in it).
		syms = append(syms, capture.Symbol{PID: pid, Begin: base, End: base + 0xff, Name: "compile_f"})
		if pid < 3 {
			syms = append(syms, capture.Symbol{PID: pid, Begin: base + 0x100, End: base + 0x1ff, Name: "compile_g"})
		}
	}
	bundle, err := capture.EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(capture.FrameHeader{PID: -1, Time: 20}, capture.SymbolsFile, bundle); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	// Each sample's frame: one of another process stands for the code
	// of both.
	for _, smp := range p.Samples {
		f := p.Frames[p.Stack(smp.Stack)[0]]
		name, pid, own := f.Loc.Function, smp.PID, f.PID == smp.PID
		switch {
		case pid == 3 && f.Addr == base+0x110:
			// Of go's image, which the bundle does not name: the
			// fallback names it in go's mapping.
			if name != "go+0x110" || own {
				t.Errorf("pid 3's sample of go's image named %q (frame of pid %d): want go+0x110, of the image before the exec", name, f.PID)
			}
		case f.Addr == base+0x10 && name != "compile_f", f.Addr == base+0x110 && name != "compile_g":
			t.Errorf("pid %d %#x named %q", pid, f.Addr, name)
		}
		if (pid > 1 && f.Addr == base+0x10 || pid == 4 && f.Addr == base+0x110) && own {
			t.Errorf("pid %d %#x is named on its own, not as pid 1's frame at the same code", pid, f.Addr)
		}
	}
	if len(p.Samples) != 8 {
		t.Errorf("%d samples, want 8", len(p.Samples))
	}
}

// TestMergeAlternates: frames at one code in two processes are one frame
// either way; the other process's address is kept, for symbolizers that
// know some processes only, unless the capture is nsprof's with its
// bundle complete (its recorder named the code the same in every process)
// and is named as it loads; a profile named later keeps it.
func TestMergeAlternates(t *testing.T) {
	capt := func(nsprofComplete bool) []byte {
		var buf bytes.Buffer
		w, err := capture.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		var syms []capture.Symbol
		for _, pid := range []int32{1, 2} {
			h := capture.FrameHeader{PID: pid, Time: 1, CPU: -1}
			w.WriteFrame(&capture.Process{FrameHeader: h, Cmdline: "p"})
			base := uint64(pid) << 20 // a PIE file at two places
			w.WriteFrame(&capture.Map{FrameHeader: h, Start: base, End: base + 0x1000, Filename: "/bin/a", BuildID: "aa"})
			w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pid, Time: 2, CPU: 0}, TID: pid, Addrs: []uint64{capture.ContextUser, base + 0x10}})
			syms = append(syms, capture.Symbol{PID: pid, Begin: base, End: base + 0xff, Name: "f"})
		}
		if nsprofComplete {
			if err := w.AddProcessInfo(capture.ProcessInfo{Kind: capture.KindProcess, Time: 1, PID: 1, Comm: "p"}); err != nil {
				t.Fatal(err)
			}
			if err := w.AddMetadata(3, capture.MetaSymbolsComplete, "1"); err != nil {
				t.Fatal(err)
			}
		}
		b, err := capture.EncodeSymbols(syms)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddFileGzip(capture.FrameHeader{PID: -1, Time: 3}, capture.SymbolsFile, b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, c := range []struct {
		name           string
		nsprofComplete bool
		opts           LoadOptions
		alts           int
	}{
		{"other recorder", false, LoadOptions{NoHostFiles: true}, 1},
		{"nsprof, complete", true, LoadOptions{NoHostFiles: true}, 0},
		{"nsprof, named later", true, LoadOptions{NoHostFiles: true, NoSymbolize: true}, 1},
	} {
		p, err := LoadBytes(capt(c.nsprofComplete), c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Frames) != 1 || len(p.Samples) != 2 {
			t.Fatalf("%s: %d frames for %d samples, want 1 for 2", c.name, len(p.Frames), len(p.Samples))
		}
		if pids, addrs := p.alts.of(0); len(pids) != c.alts {
			t.Errorf("%s: alternates %v at %#x, want %d", c.name, pids, addrs, c.alts)
		} else if c.alts > 0 && (pids[0] != 2 || addrs[0] != 2<<20+0x10) {
			t.Errorf("%s: alternate pid %d at %#x, want pid 2 at %#x", c.name, pids[0], addrs[0], 2<<20+0x10)
		}
	}
}
