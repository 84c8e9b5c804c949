package record

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/container"
)

// spillSample is a symProc with every field a record holds set.
func spillSample(objs []*symObj) *symProc {
	p := &symProc{tried: true, mapsTried: true, nspid: 7, exitAt: 99999, exitMaps: 2}
	p.other = []span{{0x1000, 0x2000}, {0x7fff0000, 0x7fff8000}}
	p.kernelPacked = []uint64{0xffffffff81000010, 0xffffffff81000400, 0xffffffff8100ffff}
	p.prev = []symGen{{
		maps:   []symMap{{start: 0x400000, end: 0x500000, off: 0x1000, obj: objs[0], id: "abcdef"}},
		packed: []uint64{0x400010, 0x400020},
		flags:  []uint8{packLine, 0},
		until:  12345,
	}}
	p.symGen = symGen{
		maps: []symMap{
			{start: 0x7f0000000000, end: 0x7f0000100000, off: 0, obj: objs[1]},
			{start: 0x7f0000200000, end: 0x7f0000300000, off: 0x2000, obj: nil, id: "0123"},
		},
		packed: []uint64{0x7f0000000100, 0x7f0000000200, 0x7f00000fffff},
		flags:  []uint8{packLine | packCall, packLine, 0},
	}
	return p
}

// TestSpillRoundTrip: a record reads back as the process written, its
// objects the same; records cut short or grown are errors, not panics.
func TestSpillRoundTrip(t *testing.T) {
	objs := []*symObj{{path: "/a"}, {path: "/b"}}
	var sp procSpill
	defer sp.close()
	want := spillSample(objs)
	if !sp.put(42, want) {
		t.Fatal("not written")
	}
	if !sp.put(43, &symProc{}) {
		t.Fatal("empty process not written")
	}
	got := sp.get(42)
	if got == nil {
		t.Fatalf("not read back (%d failures)", sp.readFailed)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
	if got.maps[0].obj != objs[1] || got.prev[0].maps[0].obj != objs[0] {
		t.Error("objects not the ones written")
	}
	if p := sp.take(43); p == nil || !reflect.DeepEqual(p, &symProc{}) || sp.has(43) {
		t.Errorf("empty process: %+v, still held %v", p, sp.has(43))
	}
	b := sp.encode(nil, want)
	for _, bad := range [][]byte{b[:len(b)-1], b[:len(b)/2], append(b[:len(b):len(b)], 0), {0xff}} {
		if _, err := sp.decode(bad); !errors.Is(err, errSpillRecord) {
			t.Errorf("%d bytes of a %d-byte record: error %v, want errSpillRecord", len(bad), len(b), err)
		}
	}
}

// FuzzSpillDecode: no record makes decode panic or allocate beyond what
// its bytes can hold, and what decodes is written and read back the same
// (a record of no images reads as one image without mappings, which is
// what encode writes for it).
func FuzzSpillDecode(f *testing.F) {
	objs := []*symObj{{path: "/a"}, {path: "/b"}}
	var sp procSpill
	sp.objNo = map[*symObj]uint64{}
	f.Add(sp.encode(nil, spillSample(objs)))
	f.Add(sp.encode(nil, &symProc{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := sp.decode(b)
		if err != nil {
			return
		}
		again := sp.encode(nil, p)
		q, err := sp.decode(again)
		if err != nil {
			t.Fatalf("written again, does not read: %v", err)
		}
		if third := sp.encode(nil, q); !bytes.Equal(third, again) {
			t.Errorf("written, read and written again: %d bytes, then %d", len(again), len(third))
		}
		if !reflect.DeepEqual(p, q) && len(p.gensRef()) == len(q.gensRef()) {
			t.Errorf("read back differently:\n%+v\n%+v", p, q)
		}
	})
}

// TestBundleSpilled: processes written out when they exit bundle as they
// would have in memory: names, source lines, images replaced by exec,
// kernel addresses, calls; a pid used again after its process was
// written out gets both processes' addresses, as before.
func TestBundleSpilled(t *testing.T) {
	path, id, offs := cachedImage(t)
	const base = 0x400000
	const k0 = 0xffffffff81000000
	run := func(exit bool) ([]capture.Symbol, []capture.AddrLines, *symbolizer) {
		s := newSymbolizer()
		s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
		t.Cleanup(s.close)
		for pid := 100; pid < 130; pid++ {
			s.mapped(pid, container.Mapping{Path: path, Start: base, End: base + 1<<20, BuildID: id})
			for i := 0; i+2 < len(offs); i += 2 + pid%3 {
				s.sampled(pid, []uint64{capture.ContextKernel, k0 + uint64(pid)*0x100, capture.ContextUser, base + offs[i], base + offs[i+2]}, false, int64(10+i))
			}
			if pid%4 == 0 {
				s.execed(pid, 1000)
				s.mapped(pid, container.Mapping{Path: path, Start: base + 1<<24, End: base + 1<<24 + 1<<20, BuildID: id})
				s.sampled(pid, []uint64{capture.ContextUser, base + 1<<24 + offs[1]}, false, 2000)
			}
			if exit && pid%2 == 0 {
				s.exited(pid, 2500)
			}
		}
		if exit {
			s.packExited(time.Now().Add(packGrace))
		}
		// pid 104 again: a process of the same pid, after the first one
		// was written out.
		s.sampled(104, []uint64{capture.ContextUser, base + 1<<24 + offs[3]}, false, 3000)
		syms, lines := bundleAll(s, func() (kernelTable, error) { return fakeKernel{}, nil }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
		return syms, lines, s
	}
	wantSyms, wantLines, _ := run(false)
	syms, lines, s := run(true)
	if n := s.spill.at.len(); n != 14 { // 15 exited, 104 read back
		t.Errorf("%d processes written out, want 14", n)
	}
	if len(wantSyms) == 0 || len(wantLines) == 0 {
		t.Fatalf("%d symbols, %d lines", len(wantSyms), len(wantLines))
	}
	if !reflect.DeepEqual(syms, wantSyms) {
		t.Errorf("written out: %d symbols, want %d", len(syms), len(wantSyms))
	}
	if !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("written out: %d addresses with lines, want %d", len(lines), len(wantLines))
	}
}

// TestSpillIndex: the paged index gives back what was set, for pids
// across pages and the largest a record holds, counts its records, and
// lets go of a page whose records are all removed.
func TestSpillIndex(t *testing.T) {
	var x spillIndex
	pids := []uint32{0, 1, 1023, 1024, 5000, 1 << 22, 0xffffffff}
	for i, pid := range pids {
		x.set(pid, spillRef(i+1))
	}
	x.set(5000, 99) // replaced, not counted twice
	if x.len() != len(pids) {
		t.Errorf("len %d, want %d", x.len(), len(pids))
	}
	for i, pid := range pids {
		want := spillRef(i + 1)
		if pid == 5000 {
			want = 99
		}
		if got := x.get(pid); got != want {
			t.Errorf("pid %d: %d, want %d", pid, got, want)
		}
	}
	if x.get(2) != 0 || x.get(1<<22+1) != 0 || x.get(77777) != 0 {
		t.Error("a pid never set has a record")
	}
	sp := procSpill{at: x}
	got := sp.pids()
	slices.Sort(got)
	want := []int{0, 1, 1023, 1024, 5000, 1 << 22, 0xffffffff}
	if !slices.Equal(got, want) {
		t.Errorf("pids %v, want %v", got, want)
	}
	pages := len(x.pages)
	x.remove(1024)
	x.remove(1024)
	x.remove(5000)
	if len(x.pages) != pages-2 || x.len() != len(pids)-2 {
		t.Errorf("after removing the only records of two pages: %d pages (was %d), %d records", len(x.pages), pages, x.len())
	}
	x.remove(0)
	if x.get(1) != 2 || len(x.pages) != pages-2 {
		t.Error("removing one record of a page dropped the page")
	}
}
