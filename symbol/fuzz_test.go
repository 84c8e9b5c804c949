package symbol

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"

	"nsprof/internal/procfmt"
)

// FuzzNewFile parses arbitrary bytes as ELF and reads everything a File
// offers. It must not panic, and an error must come with a nil File. The
// seeds in testdata/fuzz/FuzzNewFile are small real objects: the fixture
// library stripped, with a debuglink, with MiniDebugInfo, and its
// separate debug file (also with its sections compressed by objcopy
// --compress-debug-sections=zlib), and pltcalls.c stripped with an IBT PLT (.plt,
// .plt.sec and 16-byte .plt.got entries).
func FuzzNewFile(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := NewFile(bytes.NewReader(data))
		if err != nil {
			if ef != nil {
				t.Fatalf("error %v with a non-nil File", err)
			}
			return
		}
		// The symbol tables read as debug/elf reads them, where it does.
		checkSymtab(t, ef, elf.SHT_SYMTAB)
		checkSymtab(t, ef, elf.SHT_DYNSYM)
		tab, err := ef.Symbols()
		if err != nil && tab != nil {
			t.Fatalf("Symbols: error %v with a table", err)
		}
		for _, s := range tab.All() {
			if got, ok := tab.Lookup(s.Addr); !ok || got.Addr != s.Addr {
				t.Fatalf("Lookup(%#x) of a symbol of the table = %v, %v", s.Addr, got, ok)
			}
		}
		ef.BuildID()
		ef.DebugLink()
		ef.Vaddr(0x1000)
		// The Go line table, found through a moduledata the file may
		// fake: frames for the start of every function it lists.
		if gl, err := ef.goLines(); err == nil && gl != nil {
			for i := 0; i < gl.nfunc && i < 64; i++ {
				if e, ok := gl.u32(gl.pcln, uint64(i)*8); ok {
					gl.frames(gl.text + uint64(e))
				}
			}
		}
		// DWARF line tables and inline scopes: bounded and no panics,
		// whatever the ranges claim.
		if d, err := ef.dwarf(); err == nil {
			readLines(d)
			x := newInlineIndex(newFullUnits(d), nil, nil)
			r := d.Reader()
			for n := 0; n < 64; n++ {
				cu, err := r.Next()
				if err != nil || cu == nil {
					break
				}
				rs, _ := d.Ranges(cu)
				for _, rg := range rs {
					x.frames(rg[0])
					x.frames(rg[1] - 1)
				}
				r.SkipChildren()
			}
			if x.scopes > maxInlineScopes {
				t.Fatalf("%d inline scopes, limit %d", x.scopes, maxInlineScopes)
			}
		}
		// The same through .debug_aranges, reading only the units named.
		reopen := func() (*File, error) { return NewFile(bytes.NewReader(data)) }
		if u, err := ef.sparseUnits(reopen); err == nil && u != nil {
			x := newInlineIndex(u, nil, nil)
			for i, a := range u.aranges {
				if i == 64 {
					break
				}
				x.frames(a.lo)
				x.frames(a.hi - 1)
			}
			if x.scopes > maxInlineScopes {
				t.Fatalf("%d inline scopes, limit %d", x.scopes, maxInlineScopes)
			}
		}
	})
}

// FuzzKallsyms indexes arbitrary text as /proc/kallsyms and looks up the
// addresses of its lines: an error comes without an index, and a symbol
// found holds the address looked up.
func FuzzKallsyms(f *testing.F) {
	f.Add(kallsymsFixture)
	f.Add("0000000000000000 T _stext\n")
	f.Fuzz(func(t *testing.T, in string) {
		k, err := NewKallsyms([]byte(in))
		if err != nil {
			if k != nil {
				t.Fatalf("error %v with an index", err)
			}
			return
		}
		var addrs []uint64
		for _, line := range strings.Split(in, "\n") {
			a, ok := procfmt.ParseHex([]byte(strings.SplitN(line, " ", 2)[0]))
			if !ok {
				continue
			}
			if s, ok := k.Lookup(a); ok && (a < s.Addr || a-s.Addr >= s.Size || s.Name == "") {
				t.Fatalf("Lookup(%#x) = %+v", a, s)
			}
			addrs = append(addrs, a, a+1)
		}
		// The excerpt of the addresses names each of them as the text
		// does.
		ex := k.Excerpt(addrs)
		part, err := NewKallsyms(ex)
		if err != nil {
			t.Fatalf("excerpt %q of %q: %v", ex, in, err)
		}
		for _, a := range addrs {
			want, wok := k.Lookup(a)
			if got, gok := part.Lookup(a); gok != wok || got != want {
				t.Fatalf("%#x: the excerpt %q names %+v (%v), the text %+v (%v)", a, ex, got, gok, want, wok)
			}
		}
	})
}

// FuzzFindBuildIDNote walks arbitrary bytes as ELF notes of both
// alignments: it never panics, and a build-id found lies in the input.
func FuzzFindBuildIDNote(f *testing.F) {
	f.Add([]byte("\x04\x00\x00\x00\x04\x00\x00\x00\x03\x00\x00\x00GNU\x00\x01\x02\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, align := range []uint64{4, 8} {
			if id := FindBuildIDNote(data, binary.LittleEndian, align); id != nil && !bytes.Contains(data, id) {
				t.Fatalf("align %d: build-id %x not in the input", align, id)
			}
		}
	})
}

// FuzzParsePerfMap parses arbitrary text as a perf map.
func FuzzParsePerfMap(f *testing.F) {
	f.Add("7f0000001000 40 LazyCompile:~foo file:///a.js:1:10\n0x10 0x10 x\n")
	f.Add("ffffffffffffffff 1 top\n")
	f.Fuzz(func(t *testing.T, in string) {
		tab, err := ParsePerfMap(strings.NewReader(in))
		if err != nil && tab != nil {
			t.Fatalf("error %v with a table", err)
		}
		checkTable(t, tab)
	})
}

// FuzzDemangle demangles arbitrary names; it must not panic.
func FuzzDemangle(f *testing.F) {
	for _, s := range []string{"_ZN2ns5Klass6methodEi", "_RNvCs1234_7mycrate3foo", "_ZN4core3fmt5write17h0123456789abcdefE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { Demangle(in) })
}

// checkTable checks the invariants of a table: sorted, unique addresses,
// and every symbol found at its own address.
func checkTable(t *testing.T, tab *Table) {
	t.Helper()
	syms := tab.All()
	for i, s := range syms {
		if i > 0 && syms[i-1].Addr >= s.Addr {
			t.Fatalf("symbols %d and %d out of order: %#x, %#x", i-1, i, syms[i-1].Addr, s.Addr)
		}
		if s.Size == 0 {
			t.Fatalf("symbol %q has size 0", s.Name)
		}
		if got, ok := tab.Lookup(s.Addr); !ok || got != s {
			t.Fatalf("Lookup(%#x) = %v, %v; want %v", s.Addr, got, ok, s)
		}
	}
}
