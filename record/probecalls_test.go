package record

import "testing"

// TestProbeCallsSums feeds the probe hits of one thread to the pairing of
// spans with --probe sums: per arc (callee address, call site) the count,
// total, self (less the probed calls made inside), shortest and longest
// call; a return read before its entry still gives its time to the call
// it ran in.
func TestProbeCallsSums(t *testing.T) {
	ps := &probeSet{specs: []ProbeSpec{{Lib: "lib", Func: "*"}}, sites: []probeSite{{name: "outer"}, {name: "inner"}}}
	sp := newSpans(ps, []string{""})
	sp.agg = newProbeCalls(ps, []bool{true})
	hit := func(site int, ret bool, at int64, caller uint64) {
		c := openCall{site: site, time: at, pid: 7}
		if !ret {
			c.ip, c.caller = 0x1000+uint64(site), caller
		}
		sp.hit(7, c, ret, func(c openCall, tid int32, d int64) { sp.agg.add(c, tid, d) })
	}
	// outer [0, 100) calls inner twice: [10, 30) and [40, 45); the
	// second inner return is read before its entry.
	hit(0, false, 0, 0xa)
	hit(1, false, 10, 0xb)
	hit(1, true, 30, 0)
	hit(1, true, 45, 0)
	hit(1, false, 40, 0xc)
	hit(0, true, 100, 0)
	// outer again, [200, 201), from another call site.
	hit(0, false, 200, 0xd)
	hit(0, true, 201, 0)
	want := map[probeArc]probeStat{
		{pid: 7, tid: 7, site: 0, ip: 0x1000, caller: 0xa}: {count: 1, total: 100, self: 75, min: 100, max: 100, last: 100},
		{pid: 7, tid: 7, site: 0, ip: 0x1000, caller: 0xd}: {count: 1, total: 1, self: 1, min: 1, max: 1, last: 201},
		{pid: 7, tid: 7, site: 1, ip: 0x1001, caller: 0xb}: {count: 1, total: 20, self: 20, min: 20, max: 20, last: 30},
		{pid: 7, tid: 7, site: 1, ip: 0x1001, caller: 0xc}: {count: 1, total: 5, self: 5, min: 5, max: 5, last: 45},
	}
	if len(sp.agg.arcs) != len(want) {
		t.Errorf("%d arcs, want %d", len(sp.agg.arcs), len(want))
	}
	for k, w := range want {
		got := sp.agg.arcs[k]
		if got == nil || *got != w {
			t.Errorf("arc %+v: %+v, want %+v", k, got, w)
		}
	}
	if sp.agg.paired != 4 || sp.unpaired != 0 {
		t.Errorf("%d calls paired, %d unpaired; want 4, 0", sp.agg.paired, sp.unpaired)
	}
}
