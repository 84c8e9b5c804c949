package analyze

import (
	"os"
	"testing"
)

// BenchmarkKallsyms indexes this machine's /proc/kallsyms, as a capture
// without a symbol bundle needs for its kernel frames.
func BenchmarkKallsyms(b *testing.B) {
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil || len(data) == 0 {
		b.Skip("no /proc/kallsyms")
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewKallsymsSymbolizer(data); err != nil {
			b.Skip(err)
		}
	}
}
