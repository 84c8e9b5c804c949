package record

import (
	"fmt"
	"slices"
	"testing"
)

// TestSpansPairing feeds probe hits of one thread to the pairing of
// spans and checks the calls it completes and what it counts: nested
// calls innermost first, a return read before its entry (another CPU's
// ring), a return without an entry, an entry whose return was lost under
// a later call of another site, and the depth bound.
func TestSpansPairing(t *testing.T) {
	type hit struct {
		site int
		ret  bool
		t    int64
	}
	in := func(site int, t int64) hit { return hit{site, false, t} }
	out := func(site int, t int64) hit { return hit{site, true, t} }
	for _, tc := range []struct {
		name               string
		hits               []hit
		want               []string // site@start+duration
		unpaired, open, dp int
	}{
		{"flat", []hit{in(0, 10), out(0, 15), in(0, 20), out(0, 30)}, []string{"0@10+5", "0@20+10"}, 0, 0, 0},
		{"nested", []hit{in(0, 10), in(0, 12), out(0, 13), out(0, 30)}, []string{"0@12+1", "0@10+20"}, 0, 0, 0},
		{"two sites", []hit{in(0, 10), in(1, 11), out(1, 14), out(0, 20)}, []string{"1@11+3", "0@10+10"}, 0, 0, 0},
		{"return read first", []hit{out(0, 15), in(0, 10), in(0, 20), out(0, 21)}, []string{"0@10+5", "0@20+1"}, 0, 0, 0},
		{"entered before", []hit{out(0, 5), in(0, 10), out(0, 12)}, []string{"0@10+2"}, 1, 0, 0},
		{"lost return above", []hit{in(0, 10), in(1, 11), out(0, 20)}, []string{"0@10+10"}, 1, 0, 0},
		{"still open", []hit{in(0, 10), in(0, 11), out(0, 12)}, []string{"0@11+1"}, 0, 1, 0},
		{"too deep", slices.Repeat([]hit{in(0, 1)}, maxSpanDepth+2), nil, 0, maxSpanDepth, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := newSpans(&probeSet{}, nil)
			var got []string
			for _, h := range tc.hits {
				sp.hit(7, openCall{site: h.site, time: h.t, pid: 7}, h.ret, func(c openCall, tid int32, d int64) {
					if tid != 7 || c.pid != 7 {
						t.Errorf("call of tid %d pid %d", tid, c.pid)
					}
					got = append(got, fmt.Sprintf("%d@%d+%d", c.site, c.time, d))
				})
			}
			for _, e := range sp.early {
				sp.unpaired += uint64(len(e))
			}
			if !slices.Equal(got, tc.want) || int(sp.unpaired) != tc.unpaired || len(sp.threads[7]) != tc.open || int(sp.deep) != tc.dp {
				t.Errorf("calls %v unpaired %d open %d deep %d; want %v, %d, %d, %d",
					got, sp.unpaired, len(sp.threads[7]), sp.deep, tc.want, tc.unpaired, tc.open, tc.dp)
			}
		})
	}
}
