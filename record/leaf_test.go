package record

import (
	"testing"

	"nsprof/perf"
)

func TestLeafRingPages(t *testing.T) {
	for _, c := range []struct{ stack, pages int }{
		{8, 2 * perf.DefaultRingPages},
		{512, 2 * perf.DefaultRingPages},
		{1024, 4 * perf.DefaultRingPages},
		{4096, 16 * perf.DefaultRingPages},
		{perf.MaxUserStack, 4096},
	} {
		if got := leafRingPages(c.stack); got != c.pages {
			t.Errorf("leafRingPages(%d) = %d, want %d", c.stack, got, c.pages)
		}
	}
}
