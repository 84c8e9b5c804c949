package unwind

import (
	"os"
	"slices"
	"sync"
	"testing"

	"nsprof/internal/testutils"
)

// cc1Path is GCC's compiler proper, whose .eh_frame (45 k FDEs) is the
// large C++ one the tests read.
const cc1Path = "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"

// loadBoth loads path with .eh_frame interpreted as looked up and all at
// once.
func loadBoth(t *testing.T, path string) (lazy, eager *Table) {
	t.Helper()
	lazy = loadFile(t, path)
	lazyEHFrame = false
	defer func() { lazyEHFrame = true }()
	eager = loadFile(t, path)
	if lazy.eh == nil || eager.eh != nil {
		t.Fatalf("%s: lazy table has lazy FDEs %v, eager one %v", path, lazy.eh != nil, eager.eh != nil)
	}
	return lazy, eager
}

// sameRows checks that lazy finds at every address where eager's rows
// start, and at the last address each covers, the row eager finds.
func sameRows(t *testing.T, name string, lazy, eager *Table) {
	t.Helper()
	bad := 0
	check := func(a uint64) {
		w, wok := eager.lookup(a)
		g, gok := lazy.lookup(a)
		if wok != gok || w != g {
			if bad++; bad <= 5 {
				t.Errorf("%s %#x: looked up as needed %+v %v, all at once %+v %v", name, a, g, gok, w, wok)
			}
		}
	}
	for i, r := range eager.rows {
		check(r.addr)
		if i+1 < len(eager.rows) && eager.rows[i+1].addr > r.addr {
			check(eager.rows[i+1].addr - 1)
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d rows differ", name, bad, len(eager.rows))
	}
}

// TestLazyEHFrameMatchesEager checks that interpreting .eh_frame as it is
// looked up gives every row interpreting it whole gives, on libc, GCC's
// cc1, libstdc++ and a fixture with .eh_frame and .debug_frame both, and
// that cc1's table holds less than half the memory until looked up.
func TestLazyEHFrameMatchesEager(t *testing.T) {
	for _, p := range []string{libcPath, cc1Path, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"} {
		if _, err := os.Stat(p); err != nil {
			testutils.RequireCI(t, "%s: %v", p, err)
			continue
		}
		lazy, eager := loadBoth(t, p)
		if lazy.Len() != 0 {
			t.Errorf("%s: %d rows made before any lookup", p, lazy.Len())
		}
		sameRows(t, p, lazy, eager)
		t.Logf("%s: %d FDEs; as looked up %d bytes (all looked up), all at once %d", p, lazy.fdes, lazy.Size(), eager.Size())
		if p == cc1Path {
			fresh := loadFile(t, p)
			if 2*fresh.Size() > eager.Size() {
				t.Errorf("cc1's table before lookups holds %d bytes, interpreted whole %d: want less than half", fresh.Size(), eager.Size())
			}
		}
	}
	bin := testutils.BuildFixture(t, "omitfp", "-O2", "-fomit-frame-pointer", "-g")
	lazy, eager := loadBoth(t, bin)
	sameRows(t, bin, lazy, eager)
}

// TestLazyEHFrameBadFDE checks that an FDE whose instructions cannot be
// interpreted covers nothing when looked up, as it covers nothing when
// .eh_frame is interpreted whole.
func TestLazyEHFrameBadFDE(t *testing.T) {
	s, ok, err := ehFrame(openLibc(t), maxSection)
	if err != nil || !ok {
		t.Fatalf("libc .eh_frame: %v %v", ok, err)
	}
	s.data = slices.Clone(s.data)
	fdes, err := parseFDEs(s)
	if err != nil {
		t.Fatal(err)
	}
	// DW_CFA_restore_state with no state remembered, first in the
	// instructions of an FDE in the middle.
	var bad *fde
	for i := len(fdes) / 2; i < len(fdes); i++ {
		if len(fdes[i].insns) > 0 {
			bad = &fdes[i]
			break
		}
	}
	s.data[bad.ins] = 0x0b
	lazy := &Table{eh: newLazyFDEs(s, slices.Clone(fdes))}
	eager := &Table{}
	if err := eager.build(slices.Clone(fdes)); err == nil {
		t.Fatal("building the damaged FDE whole gave no error")
	}
	if r := lazy.find(bad.begin); r != nil {
		t.Errorf("damaged FDE %#x..%#x gives a row at its start: %+v", bad.begin, bad.end, *r)
	}
	sameRows(t, "damaged libc", lazy, eager)
}

// TestLazyEHFrameConcurrent looks up every row of libc from four
// goroutines at once on a fresh table (the race detector watches the rows
// being made), each finding what the table made whole finds.
func TestLazyEHFrameConcurrent(t *testing.T) {
	if _, err := os.Stat(libcPath); err != nil {
		testutils.RequireCI(t, "%s: %v", libcPath, err)
	}
	lazy, eager := loadBoth(t, libcPath)
	var wg sync.WaitGroup
	errs := make([]int, 4)
	for g := range errs {
		wg.Go(func() {
			for i := range eager.rows {
				r := eager.rows[(i*(g+1)*7919)%len(eager.rows)]
				w, wok := eager.lookup(r.addr)
				if got, ok := lazy.lookup(r.addr); ok != wok || got != w {
					errs[g]++
				}
			}
		})
	}
	wg.Wait()
	for g, n := range errs {
		if n > 0 {
			t.Errorf("goroutine %d: %d lookups differ", g, n)
		}
	}
}
