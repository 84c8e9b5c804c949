package record

import (
	"os"
	"testing"
)

func TestDWARFRingPages(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skip("page size is not 4 KiB")
	}
	for _, c := range []struct{ freq, stack, want int }{
		{1000, 8192, 2048}, // 8 MiB: 0.96 s of samples
		{100, 8192, 512},
		{4000, 65528, 4096},
		{999, 16384, 4096},
	} {
		if got := dwarfRingPages(c.freq, c.stack); got != c.want {
			t.Errorf("%d Hz, %d bytes: %d pages, want %d", c.freq, c.stack, got, c.want)
		}
	}
}
