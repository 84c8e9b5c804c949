package record

import (
	"errors"
	"io"
	"os"
	"testing"

	"nsprof/symbol"
)

// The index names every address as symbol.ParseKallsyms' table does, on
// a text with aliases, ranks, modules, data symbols and unsorted lines,
// and on this machine's /proc/kallsyms.
func TestKallsymsIndexMatchesParseKallsyms(t *testing.T) {
	texts := map[string][]byte{"synthetic": []byte(
		"ffffffff81000000 T _stext\n" +
			"ffffffff81000100 t local_alias\n" +
			"ffffffff81000100 T sys_read\n" +
			"ffffffff81000180 W weak_one\n" +
			"ffffffff81000200 D some_data\n" +
			"ffffffff81000300 t helper\n" +
			"ffffffffc0000040 t modfn\t[ext4]\n" +
			"ffffffffc0000000 T modstart\t[ext4]\n")}
	if b, err := os.ReadFile("/proc/kallsyms"); err == nil && len(b) > 0 && b[0] != '0' {
		texts["/proc/kallsyms"] = b
	}
	for name, data := range texts {
		idx, err := newKallsymsIndex(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tab, err := symbol.ParseKallsyms(bytesReader(data))
		if err != nil {
			t.Fatalf("%s: ParseKallsyms: %v", name, err)
		}
		checked := 0
		for i, s := range tab.All() {
			if name != "synthetic" && i%97 != 0 {
				continue
			}
			for _, a := range []uint64{s.Addr, s.Addr + 1, s.Addr + s.Size - 1} {
				want, wok := tab.Lookup(a)
				got, gok := idx.Lookup(a)
				if wok != gok || want.Name != got.Name || want.Addr != got.Addr {
					t.Errorf("%s: %#x: index %+v %t, ParseKallsyms %+v %t", name, a, got, gok, want, wok)
				}
				checked++
			}
		}
		if _, ok := idx.Lookup(0x1000); ok {
			t.Errorf("%s: address below every symbol named", name)
		}
		t.Logf("%s: %d symbols, %d addresses compared", name, len(idx.syms), checked)
	}
	if _, err := newKallsymsIndex([]byte("0000000000000000 T _stext\n0000000000000000 t x\n")); !errors.Is(err, symbol.ErrRestrictedKernel) {
		t.Errorf("all-zero addresses: %v, want ErrRestrictedKernel", err)
	}
}

func BenchmarkKallsymsIndex(b *testing.B) {
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := newKallsymsIndex(data); err != nil {
			b.Fatal(err)
		}
	}
}

func bytesReader(b []byte) *bytesReaderT { return &bytesReaderT{b: b} }

type bytesReaderT struct{ b []byte }

func (r *bytesReaderT) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
