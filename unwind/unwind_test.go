package unwind

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// oneModule maps every address to one table with no bias.
type oneModule struct{ t *Table }

func (o oneModule) Find(uint64) (Module, bool) { return Module{Table: o.t}, true }

func words(ws ...uint64) []byte {
	b := make([]byte, 8*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return b
}

// A PLT entry's CFA is rsp+8 before its jump at offset 11 of the entry
// (the "pushq" has not run) and rsp+16 after.
func TestUnwindPLT(t *testing.T) {
	tab := &Table{rows: []row{
		{addr: 0x1000, cfa: cfaPLT, cfaOff: 8, arg: 11, ra: ruleCFA, raOff: -8},
		{addr: 0x2000, cfa: cfaSP, cfaOff: 8, ra: ruleUndef},
		{addr: 0x3000},
	}}
	const sp = 0x7000
	for _, c := range []struct {
		ip   uint64
		want uint64
	}{
		{0x1020, 0x2001}, // (ip&15) = 0 < 11: return address at rsp
		{0x102b, 0x2002}, // 11: pushed, return address at rsp+8
	} {
		chain, stop := Unwind(nil, Regs{IP: c.ip, SP: sp}, words(0x2001, 0x2002, 0), oneModule{tab}, 16)
		if stop != StopEnd || !slices.Equal(chain, []uint64{c.ip, c.want}) {
			t.Errorf("ip %#x: %x %v, want [%x %x] end", c.ip, chain, stop, c.ip, c.want)
		}
	}
}

// glibc's __restore_rt describes the interrupted frame through the
// ucontext at rsp: rsp at +160, rbp at +120, rip at +168. The unwind
// continues at the interrupted instruction itself.
//
// __restore_rt is a local symbol: libc.so.6 keeps only its .dynsym, so
// the name comes from libc's separate debug file (libc6-dbg), found by
// symbol.Loader through the build-id.
func TestUnwindSignalFrame(t *testing.T) {
	tab := loadFile(t, libcPath)
	f, err := symbol.Open(libcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var l symbol.Loader
	syms, err := l.Load(f, libcPath)
	if err != nil {
		t.Fatal(err)
	}
	var restore uint64
	for _, s := range syms.Table().All() {
		if s.Name == "__restore_rt" {
			restore = s.Addr
		}
	}
	if restore == 0 {
		testutils.RequireCI(t, "%s: no __restore_rt symbol in %s (apt-get install libc6-dbg)", libcPath, syms.Source())
	}
	r := tab.find(restore)
	if r == nil || r.cfa != cfaDerefSP || !r.signal || r.ra != ruleSP {
		t.Fatalf("__restore_rt row %+v", r)
	}
	const sp = 0x10000
	uc := make([]uint64, 64)
	uc[120/8] = 0xbb       // rbp
	uc[160/8] = sp + 0x100 // rsp of the interrupted code
	uc[168/8] = 0x4242     // rip
	// The interrupted code is outside libc: the mapper has no table for
	// it, so frame pointers (rbp 0xbb, misaligned) stop the walk.
	m := mapFunc(func(pc uint64) (Module, bool) {
		if pc == 0x4242 {
			return Module{}, true
		}
		return Module{Table: tab}, true
	})
	chain, stop := Unwind(nil, Regs{IP: restore, SP: sp}, words(uc...), m, 16)
	if !slices.Equal(chain, []uint64{restore, 0x4242}) || stop != StopBadFrame {
		t.Fatalf("chain %x stop %v", chain, stop)
	}
}

type mapFunc func(uint64) (Module, bool)

func (f mapFunc) Find(pc uint64) (Module, bool) { return f(pc) }

// Frame pointers are followed where no table covers the code, and a
// frame beyond the copied bytes is reported, not invented.
func TestUnwindFramePointersAndTruncation(t *testing.T) {
	const sp = 0x8000
	stack := words(0, 0, sp+0x20, 0x111, sp+0x100, 0x222, 0, 0, 0, 0, 0, 0)
	none := mapFunc(func(uint64) (Module, bool) { return Module{}, false })
	chain, stop := Unwind(nil, Regs{IP: 0x100, SP: sp, BP: sp + 0x10}, stack, none, 16)
	if !slices.Equal(chain, []uint64{0x100, 0x111, 0x222}) || stop != StopTruncated {
		t.Fatalf("chain %x stop %v, want [100 111 222] truncated", chain, stop)
	}
	chain, stop = Unwind(nil, Regs{IP: 0x100, SP: sp, BP: sp + 0x10}, stack[:0x18], none, 16)
	if !slices.Equal(chain, []uint64{0x100}) || stop != StopTruncated {
		t.Fatalf("short copy: chain %x stop %v", chain, stop)
	}
	chain, stop = Unwind(nil, Regs{IP: 0x100, SP: sp, BP: sp + 0x10}, stack, none, 2)
	if len(chain) != 2 || stop != StopDepth {
		t.Fatalf("depth: chain %x stop %v", chain, stop)
	}
}

// UnwindTo ends at the return address asked for, having looked up no
// frame past it, and otherwise unwinds as Unwind does.
func TestUnwindTo(t *testing.T) {
	const sp = 0x8000
	// Three frames by frame pointers: return addresses 0x111, 0x222,
	// 0x333, then the end.
	stack := words(0, 0, sp+0x20, 0x111, sp+0x30, 0x222, sp+0x40, 0x333, 0, 0)
	var looked []uint64
	m := mapFunc(func(pc uint64) (Module, bool) { looked = append(looked, pc); return Module{}, false })
	regs := Regs{IP: 0x100, SP: sp, BP: sp + 0x10}
	chain, stop := UnwindTo(nil, regs, stack, m, 16, 0x222)
	if !slices.Equal(chain, []uint64{0x100, 0x111, 0x222}) || stop != StopDepth {
		t.Fatalf("to 0x222: chain %x stop %v, want [100 111 222] depth", chain, stop)
	}
	if len(looked) != 2 {
		t.Errorf("to 0x222: %d lookups (%x), want 2: none for the frame stopped at", len(looked), looked)
	}
	for _, to := range []uint64{0, 0x999} {
		want, wantStop := Unwind(nil, regs, stack, m, 16)
		chain, stop = UnwindTo(nil, regs, stack, m, 16, to)
		if !slices.Equal(chain, want) || stop != wantStop {
			t.Errorf("to %#x: chain %x stop %v, want Unwind's %x %v", to, chain, stop, want, wantStop)
		}
	}
	// The bound on frames holds: the address is not appended past it.
	if chain, _ = UnwindTo(nil, regs, stack, m, 2, 0x222); !slices.Equal(chain, []uint64{0x100, 0x111}) {
		t.Errorf("max 2, to 0x222: chain %x, want [100 111]", chain)
	}
}

func TestCache(t *testing.T) {
	small := &Table{rows: make([]row, 10)}
	c := NewCache(2*small.Size() + 10)
	loads := 0
	load := func() (*Table, error) { loads++; return &Table{rows: make([]row, 10)}, nil }
	a, _ := c.Get("a", load)
	c.Get("b", load)
	if a2, _ := c.Get("a", load); a2 != a || loads != 2 {
		t.Fatalf("a reloaded: loads %d", loads)
	}
	c.Get("c", load) // evicts b, the least recently used
	c.Get("a", load)
	if loads != 3 {
		t.Fatalf("loads %d, want 3", loads)
	}
	c.Get("b", load)
	if used, n, ev := c.Stats(); loads != 4 || n != 4 || ev != 2 || used > 2*small.Size()+10 {
		t.Fatalf("loads %d, stats %d %d %d", loads, used, n, ev)
	}
}

// A table's lookups through its hints find what the binary search finds,
// for addresses looked up again (the hint taken), whose hints others
// overwrote, before the first row, on terminators, past the last row
// and on rows that share an address.
func TestTableHints(t *testing.T) {
	var rows []row
	for a := uint64(0x1000); a < 0x9000; a += 0x10 {
		r := row{addr: a, cfa: cfaSP, cfaOff: int32(a)}
		switch {
		case a%0x400 == 0:
			r.cfa = cfaNone // a terminator: an FDE ends
		case a%0x300 == 0:
			rows = append(rows, row{addr: a, cfa: cfaBP}) // shadowed by the next
		}
		rows = append(rows, r)
	}
	tab := &Table{rows: rows}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200_000 {
		a := uint64(0x800 + rng.IntN(0x9000))
		if i%3 == 0 {
			a = 0x1000 + uint64(rng.IntN(8))*0x10 + uint64(rng.IntN(0x10)) // a few hot ones
		}
		got, want := tab.find(a), findRow(rows, a)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Fatalf("lookup %d of %#x: row %+v, want %+v", i, a, got, want)
		}
	}
	if (&Table{}).find(0x1000) != nil {
		t.Error("a row found in an empty table")
	}
}
