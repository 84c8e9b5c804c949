package symbol

import (
	"bytes"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// TestKallsymsExcerpt checks that the excerpt of some addresses names
// each of them as the whole text does, through NewKallsyms and through a
// reader that ends each symbol at the next line (as Sysprof's does), on
// the fixture and on this machine's kallsyms.
func TestKallsymsExcerpt(t *testing.T) {
	texts := map[string][]byte{"fixture": []byte(kallsymsFixture)}
	host, err := os.ReadFile("/proc/kallsyms")
	if err != nil || bytes.HasPrefix(host, []byte("0000000000000000 ")) {
		testutils.RequireCI(t, "/proc/kallsyms unreadable or restricted (err %v)", err)
	} else {
		texts["host"] = host
	}
	for name, text := range texts {
		full, err := NewKallsyms(text)
		if err != nil {
			t.Fatal(err)
		}
		// Addresses in symbols, past their ends, in gaps and before the
		// first: a thousand picked at random around the kept symbols.
		r := rand.New(rand.NewPCG(1, 2))
		var addrs []uint64
		for range 1000 {
			s := full.sym(r.IntN(full.Len()))
			addrs = append(addrs, s.addr+uint64(r.IntN(256)), s.addr-1, s.addr)
		}
		addrs = append(addrs, 0, 1<<63, ^uint64(0))
		ex := full.Excerpt(addrs)
		part, err := NewKallsyms(ex)
		if err != nil {
			t.Fatalf("%s: excerpt: %v", name, err)
		}
		if len(texts) > 1 && name == "host" && len(ex)*10 > len(text) {
			t.Errorf("%s: the excerpt of %d addresses is %d bytes of %d", name, len(addrs), len(ex), len(text))
		}
		sysprof := nextLineReader(t, ex)
		named := 0
		for _, a := range addrs {
			want, wok := full.Lookup(a)
			got, gok := part.Lookup(a)
			if wok != gok || want != got {
				t.Fatalf("%s: %#x: excerpt names %+v (%v), the whole text %+v (%v)", name, a, got, gok, want, wok)
			}
			if !wok {
				continue
			}
			named++
			base, _ := SplitModule(want.Name)
			if s := sysprof(a); s != base {
				t.Fatalf("%s: %#x: the excerpt's next-line reading names %q, want %q", name, a, s, base)
			}
		}
		if named == 0 {
			t.Fatalf("%s: no address named", name)
		}
		t.Logf("%s: %d of %d addresses named from an excerpt of %d bytes (text %d)", name, named, len(addrs), len(ex), len(text))
	}
}

// nextLineReader reads a kallsyms text as Sysprof's reader does: every
// line, in address order (the first of equal ones kept), each symbol
// ending at the next line's address; it returns the lookup by address.
func nextLineReader(t *testing.T, text []byte) func(addr uint64) string {
	t.Helper()
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	for _, line := range bytes.Split(bytes.TrimSpace(text), []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) < 3 {
			t.Fatalf("bad excerpt line %q", line)
		}
		a, err := strconv.ParseUint(string(f[0]), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(syms); n > 0 && syms[n-1].addr >= a {
			if syms[n-1].addr > a {
				t.Fatalf("excerpt out of order at %q", line)
			}
			continue
		}
		syms = append(syms, sym{a, string(f[2])})
	}
	return func(addr uint64) string {
		i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > addr }) - 1
		if i < 0 {
			return ""
		}
		return syms[i].name
	}
}

// TestKallsymsIndex checks that an index taken back names every address
// as the text parsed again does, and that a damaged one is refused.
func TestKallsymsIndex(t *testing.T) {
	text := []byte(kallsymsFixture)
	if host, err := os.ReadFile("/proc/kallsyms"); err == nil && !bytes.HasPrefix(host, []byte("0000000000000000 ")) {
		text = host
	}
	k, err := NewKallsyms(text)
	if err != nil {
		t.Fatal(err)
	}
	index := k.AppendIndex(nil)
	back, err := KallsymsWithIndex(text, index)
	if err != nil {
		t.Fatal(err)
	}
	// Taken back, the index is used where it lies, not copied: it was
	// the index's size again in a warm recording's peak heap.
	if a := testing.AllocsPerRun(3, func() { KallsymsWithIndex(text, index) }); a > 1 {
		t.Errorf("KallsymsWithIndex of %d symbols: %.0f allocations, want 1", k.Len(), a)
	}
	for i := range k.Len() {
		s := k.sym(i)
		for _, a := range []uint64{s.addr, s.addr + 1, s.addr - 1} {
			want, wok := k.Lookup(a)
			if got, ok := back.Lookup(a); ok != wok || got != want {
				t.Fatalf("symbol %d: %#x named %+v (%v) from the index, %+v (%v) from the text", i, a, got, ok, want, wok)
			}
		}
	}
	// Checked dropping: the same index, drop called after every 1000
	// symbols.
	drops := 0
	dropped, err := KallsymsWithIndexDropping(text, index, 1000, func() { drops++ })
	if err != nil || dropped.Len() != k.Len() {
		t.Fatalf("KallsymsWithIndexDropping: %v symbols, %v; want %d", dropped.Len(), err, k.Len())
	}
	if drops != k.Len()/1000 {
		t.Errorf("drop called %d times for %d symbols; want %d", drops, k.Len(), k.Len()/1000)
	}
	for name, damage := range map[string]func([]byte) []byte{
		"truncated":    func(b []byte) []byte { return b[:len(b)-1] },
		"count":        func(b []byte) []byte { b[0]++; return b },
		"order":        func(b []byte) []byte { copy(b[4:12], b[4+13:12+13]); return b },
		"offset":       func(b []byte) []byte { b[4+8] ^= 0x5; return b },
		"rank":         func(b []byte) []byte { b[4+12] = 7; return b },
		"offset range": func(b []byte) []byte { b[4+11] = 0xff; return b },
	} {
		if _, err := KallsymsWithIndex(text, damage(bytes.Clone(index))); err == nil {
			t.Errorf("%s: a damaged index taken", name)
		}
	}
}

// FuzzKallsymsWithIndex takes arbitrary indexes of the fixture's text: no
// panic, and every lookup of one taken stays within the text's names.
func FuzzKallsymsWithIndex(f *testing.F) {
	text := []byte(kallsymsFixture)
	k, err := NewKallsyms(text)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(k.AppendIndex(nil))
	f.Fuzz(func(t *testing.T, index []byte) {
		x, err := KallsymsWithIndex(text, index)
		if err != nil {
			return
		}
		for i := range x.Len() {
			s := x.sym(i)
			if sym, ok := x.Lookup(s.addr); !ok || sym.Name == "" || !bytes.Contains(text, []byte(strings.SplitN(sym.Name, " ", 2)[0])) {
				t.Fatalf("%#x named %+v (%v)", s.addr, sym, ok)
			}
		}
	})
}
