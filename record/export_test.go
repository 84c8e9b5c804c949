package record

import (
	"nsprof/capture"
	"nsprof/symbol"
)

// BundleKernel runs the recorder's end-of-recording symbolization over
// the kernel addresses addrs sampled in process pid, with kallsyms as the
// /proc/kallsyms read at its end, and returns the bundle records.
func BundleKernel(kallsyms []byte, pid int, addrs []uint64) []capture.Symbol {
	s := newSymbolizer()
	s.sampled(pid, append([]uint64{capture.ContextKernel}, addrs...), false, 0)
	k, err := symbol.NewKallsyms(kallsyms)
	tab := func() (kernelTable, error) {
		if err != nil {
			return nil, err
		}
		return &kernelSymbols{text: kallsyms, k: k}, nil
	}
	out, _ := bundleAll(s, tab, func(int) int { return 0 }, nil, func(string, ...any) {})
	return out
}

// bundleAll runs s.bundle and returns the records it gave, in order.
func bundleAll(s *symbolizer, kallsyms func() (kernelTable, error), nsPID func(pid int) int, prog progress, logf func(string, ...any)) ([]capture.Symbol, []capture.AddrLines) {
	var out []capture.Symbol
	lines := s.bundle(func(sym capture.Symbol) { out = append(out, sym) }, kallsyms, nsPID, prog, logf)
	return out, lines
}
