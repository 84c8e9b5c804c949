package record

import (
	"fmt"
	"slices"
	"strconv"

	"nsprof/capture"
)

// probeCalls sums the calls of the functions named with --probe, per
// thread and arc (the probed function's address in its process, and the
// call site when callers are recorded): count, total and self time (the
// total less that of the probed calls made inside), shortest and longest.
// It writes them at the end as the records of capture.CallsFile that
// --calls writes, so that report --calls and the calls columns show them,
// and each probed function's duration range as metadata.
type probeCalls struct {
	probes *probeSet
	// probed[i] says spec i is a --probe spec.
	probed []bool
	arcs   map[probeArc]*probeStat
	// open counts the calls still running at the end; paired the calls
	// summed.
	open, paired uint64
}

// probeArc is what the calls are summed by.
type probeArc struct {
	pid, tid   int32
	site       int // index in probeSet.sites
	ip, caller uint64
}

// probeStat sums the calls of one arc; last is the end of its last call.
type probeStat struct {
	count, total, self, min, max, last int64
}

func newProbeCalls(ps *probeSet, probed []bool) *probeCalls {
	return &probeCalls{probes: ps, probed: probed, arcs: make(map[probeArc]*probeStat)}
}

// add sums call c of thread tid that took d nanoseconds.
func (pc *probeCalls) add(c openCall, tid int32, d int64) {
	k := probeArc{pid: c.pid, tid: tid, site: c.site, ip: c.ip, caller: c.caller}
	st := pc.arcs[k]
	if st == nil {
		st = &probeStat{min: d, max: d}
		pc.arcs[k] = st
	}
	self := max(d-c.child, 0)
	st.count++
	st.total += d
	st.self += self
	st.min = min(st.min, d)
	st.max = max(st.max, d)
	st.last = c.time + d
	pc.paired++
}

// funcRange is a probed function's calls over every thread and caller.
type funcRange struct {
	count, total, min, max int64
}

// finish writes the arcs as records of capture.CallsFile, the counts and
// each function's range as metadata, and logs what was not summed:
// unpaired entries and returns, the calls open at the end, and the
// records the rings lost.
func (pc *probeCalls) finish(r *recorder, unpaired uint64) {
	var buf []byte
	ranges := make(map[string]*funcRange)
	var names []string
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	for k, st := range pc.arcs {
		rec := capture.Call{
			PID: k.pid, TID: k.tid, Time: st.last, Callee: k.ip, Site: k.caller,
			Count: st.count, Total: st.total, Self: min(st.self, st.total), Timed: true,
		}
		if r.sym != nil {
			addrs := []uint64{k.ip, k.caller}
			if k.caller == 0 {
				addrs = addrs[:1]
			}
			r.sym.sampled(int(k.pid), addrs, false, st.last)
		}
		buf = capture.AppendCall(buf, rec)
		if len(buf) >= capture.CallsFileChunkData && r.writeErr == nil {
			if err := r.w.AddFileChunk(h, capture.CallsFile, buf[:capture.CallsFileChunkData], false); err != nil {
				r.writeErr = err
			}
			buf = append(buf[:0], buf[capture.CallsFileChunkData:]...)
		}
		s := &pc.probes.sites[k.site]
		name := pc.probes.specs[s.spec].Lib + ":" + s.name
		fr := ranges[name]
		if fr == nil {
			fr = &funcRange{min: st.min, max: st.max}
			ranges[name] = fr
			names = append(names, name)
		}
		fr.count += st.count
		fr.total += st.total
		fr.min, fr.max = min(fr.min, st.min), max(fr.max, st.max)
	}
	if r.writeErr != nil {
		return
	}
	if err := r.w.AddFileChunk(h, capture.CallsFile, buf, true); err != nil {
		r.writeErr = err
		return
	}
	lost := unpaired + pc.open
	md := [][2]string{
		{capture.MetaCalls, "1"},
		{capture.MetaCallsArcs, strconv.Itoa(len(pc.arcs))},
		{capture.MetaCallsLost, strconv.FormatUint(lost, 10)},
		{capture.MetaCallsUntimed, "0"},
		{capture.MetaProbeLostRecords, strconv.FormatUint(r.lost, 10)},
	}
	slices.Sort(names)
	for _, n := range names {
		fr := ranges[n]
		md = append(md, [2]string{capture.MetaProbeRange, capture.FormatProbeRange(capture.ProbeRange{
			Func: n, Calls: fr.count, Total: fr.total, Min: fr.min, Max: fr.max,
		})})
	}
	if err := writeMetadata(r.w, md); err != nil {
		r.writeErr = err
		return
	}
	r.notef("probes: %d calls of %d functions summed in %d arcs", pc.paired, len(names), len(pc.arcs))
	if lost > 0 || r.lost > 0 {
		msg := fmt.Sprintf("probes: %d probed calls not counted (%d entries or returns without their other half: entered before the recording, nested over %d deep, or lost to a full ring; %d still running at the end)", lost, unpaired, maxSpanDepth, pc.open)
		if r.lost > 0 {
			msg += fmt.Sprintf("; the rings lost %d records, whose calls are missing", r.lost)
		}
		r.logf("%s", msg)
		if err := r.w.AddLog(r.now(), -1, capture.LogWarning, "nsprof", msg); err != nil {
			r.writeErr = err
		}
	}
}
