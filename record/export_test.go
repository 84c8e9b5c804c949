package record

import (
	"bytes"
	"compress/gzip"

	"nsprof/capture"
)

// BundleKernel runs the recorder's end-of-recording symbolization over
// the kernel addresses addrs sampled in process pid, with kallsyms as the
// /proc/kallsyms the recording embedded, and returns the bundle records.
func BundleKernel(kallsyms []byte, pid int, addrs []uint64) []capture.Symbol {
	s := newSymbolizer()
	s.sampled(pid, append([]uint64{capture.ContextKernel}, addrs...), false, 0)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(kallsyms)
	zw.Close()
	r := &recorder{kallsymsGz: gz.Bytes(), kallsymsLen: len(kallsyms)}
	out, _ := bundleAll(s, r.kernelTable, func(int) int { return 0 }, nil, func(string, ...any) {})
	return out
}

// bundleAll runs s.bundle and returns the records it gave, in order.
func bundleAll(s *symbolizer, kallsyms func() (kernelTable, error), nsPID func(pid int) int, prog progress, logf func(string, ...any)) ([]capture.Symbol, []capture.AddrLines) {
	var out []capture.Symbol
	lines := s.bundle(func(sym capture.Symbol) { out = append(out, sym) }, kallsyms, nsPID, prog, logf)
	return out, lines
}
