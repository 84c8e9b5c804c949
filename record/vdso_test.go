package record

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/symbol"
	"nsprof/unwind"
)

// The vdso is in no file: its image is read from the process (or, for a
// process already gone, taken to be nsprof's own), and its functions are
// named in the bundle.
func TestSymbolizerVDSO(t *testing.T) {
	own, err := unwind.ReadVDSO(0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := symbol.NewFile(bytes.NewReader(own))
	if err != nil {
		t.Fatal(err)
	}
	table, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var clock symbol.Symbol
	for _, s := range table.All() {
		if strings.HasSuffix(s.Name, "clock_gettime") {
			clock = s
		}
	}
	if clock.Name == "" {
		t.Fatalf("no clock_gettime in the vdso: %v", table.All())
	}
	other := bytes.Clone(own)
	other[len(other)-1] ^= 0xff // another image, of the same size
	gone := errors.New("no such process")
	const base = 0x7fff0000
	end := uint64(base + len(own))
	for _, tc := range []struct {
		name      string
		read      func(pid int, start, end uint64) ([]byte, error)
		end       uint64
		self      bool
		fallbacks int
		named     bool
	}{
		{"read from the process", func(int, uint64, uint64) ([]byte, error) { return bytes.Clone(own), nil }, end, true, 0, true},
		{"another image", func(int, uint64, uint64) ([]byte, error) { return bytes.Clone(other), nil }, end, false, 0, true},
		{"process gone", func(int, uint64, uint64) ([]byte, error) { return nil, gone }, end, true, 1, true},
		{"process gone, another size", func(int, uint64, uint64) ([]byte, error) { return nil, gone }, end + 4096, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSymbolizer()
			s.readVDSO = tc.read
			defer s.close()
			s.mapped(42, container.Mapping{Path: vdsoPath, Start: base, End: tc.end})
			s.mapped(43, container.Mapping{Path: vdsoPath, Start: base, End: tc.end})
			p := s.procs[42]
			if len(p.maps) != 1 {
				t.Fatalf("%d mappings", len(p.maps))
			}
			o := p.maps[0].obj
			if o != s.procs[43].maps[0].obj {
				t.Errorf("two processes mapping one vdso have two objects")
			}
			if got := o == s.self; got != tc.self {
				t.Errorf("shares nsprof's own vdso object: %v, want %v", got, tc.self)
			}
			if s.vdsoFallbacks != 2*tc.fallbacks {
				t.Errorf("%d fallbacks, want %d", s.vdsoFallbacks, 2*tc.fallbacks)
			}
			addr := base + clock.Addr + 3
			s.sampled(42, []uint64{capture.ContextUser, addr}, false, 0)
			var logs []string
			logf := func(format string, args ...any) { logs = append(logs, format) }
			syms, _ := bundleAll(s, nil, func(int) int { return 0 }, nil, logf)
			var got string
			for _, sym := range syms {
				if sym.PID == 42 && sym.Begin <= addr && addr <= sym.End {
					got = sym.Name + " " + sym.Tag
				}
			}
			want := ""
			if tc.named {
				want = clock.Name + " [vdso]"
			}
			if got != want {
				t.Errorf("address %#x named %q, want %q (log %q)", addr, got, want, logs)
			}
		})
	}
}
