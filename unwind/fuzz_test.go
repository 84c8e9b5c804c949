package unwind

import (
	"bytes"
	"testing"

	"nsprof/internal/pageread"
)

// FuzzCFI parses hostile .eh_frame or .debug_frame bytes (eh says which),
// interprets them into a table (and, for .eh_frame, as looked up) and
// looks addresses up in it, and parses
// the same bytes as an .eh_frame_hdr and as a Go .gopclntab. Nothing may panic, and a table's
// rows must be sorted.
func FuzzCFI(f *testing.F) {
	f.Add([]byte{}, true)
	f.Add(make([]byte, 16), false)
	f.Fuzz(func(t *testing.T, data []byte, eh bool) {
		name := ".debug_frame"
		if eh {
			name = ".eh_frame"
		}
		fdes, err := parseFDEs(section{name: name, data: data, vaddr: 0x1000, eh: eh})
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error %T is not a *FormatError: %v", err, err)
			}
		}
		tab := &Table{}
		tab.build(fdes)
		for i := 1; i < len(tab.rows); i++ {
			if tab.rows[i].addr < tab.rows[i-1].addr {
				t.Fatalf("rows unsorted at %d: %#x after %#x", i, tab.rows[i].addr, tab.rows[i-1].addr)
			}
		}
		for _, f := range fdes {
			tab.find(f.begin)
			tab.find(f.end - 1)
		}
		if eh {
			// The same FDEs interpreted as looked up.
			lazy := &Table{eh: newLazyFDEs(section{name: name, data: data, vaddr: 0x1000, eh: eh}, fdes)}
			if lazy.eh != nil {
				for _, f := range fdes {
					lazy.find(f.begin)
					lazy.find(f.end - 1)
				}
			}
		}
		parseHdr(data, 0x1000)
		if g := newGoFuncs(pageread.Held(data), 0x1000); g != nil {
			for i := range min(g.nfunc, 1000) {
				g.decode(i)
				g.find(g.text + g.entry(i))
			}
		}
		// Unwinding over the table, with the data as the stack.
		Unwind(nil, Regs{IP: 0x1000, SP: 0x8000, BP: 0x8010}, data, oneModule{tab}, 64)
	})
}

// FuzzLoad reads hostile ELF files.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Load(bytes.NewReader(data), nil)
		if tab == nil && err == nil {
			t.Fatal("nil table without error")
		}
	})
}
