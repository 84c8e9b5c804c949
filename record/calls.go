package record

import (
	"fmt"
	"strconv"

	"nsprof/capture"
)

// writeCall keeps a call record of the preload (--calls) for
// capture.CallsFile, and hands its two addresses to the symbolizer: the
// function's, then the call site's, a return address.
func (m *memprof) writeCall(r *recorder, g *memRing, time int64, c *ringCall) {
	if c.Count == 0 {
		return
	}
	rec := capture.Call{
		PID: g.pid, TID: g.tid, Time: time, Callee: c.Fn, Site: c.Site,
		Count: int64(c.Count), Total: int64(c.Ns), Self: int64(min(c.SelfNs, c.Ns)),
		Timed: c.Ns > 0,
	}
	if !rec.Timed {
		rec.Self = 0
	}
	m.arcs++
	m.nCalls += c.Count
	if r.sym != nil {
		r.sym.sampled(int(g.pid), []uint64{c.Fn, c.Site}, false, time)
		if r.opts.NoPerf {
			m.rescan[g.pid] = true
		}
	}
	m.callFile = capture.AppendCall(m.callFile, rec)
	if len(m.callFile) >= capture.CallsFileChunkData {
		m.flushCalls(r, false)
	}
}

// flushCalls writes the call records held as chunks of
// capture.CallsFile, the last one when last is set.
func (m *memprof) flushCalls(r *recorder, last bool) {
	if r.writeErr != nil || (len(m.callFile) == 0 && !last) {
		return
	}
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	for len(m.callFile) > capture.CallsFileChunkData {
		if err := r.w.AddFileChunk(h, capture.CallsFile, m.callFile[:capture.CallsFileChunkData], false); err != nil {
			r.writeErr = err
			return
		}
		m.callFile = m.callFile[capture.CallsFileChunkData:]
	}
	if err := r.w.AddFileChunk(h, capture.CallsFile, m.callFile, last); err != nil {
		r.writeErr = err
	}
	m.callFile = m.callFile[:0]
}

// finishCalls writes the last call records and the counts, and logs what
// the preload could not record.
func (m *memprof) finishCalls(r *recorder) {
	if !m.calls {
		return
	}
	m.flushCalls(r, true)
	if r.writeErr != nil {
		return
	}
	for _, kv := range [][2]string{
		{capture.MetaCallsArcs, strconv.FormatUint(m.arcs, 10)},
		{capture.MetaCallsLost, strconv.FormatUint(m.callsLost, 10)},
		{capture.MetaCallsUntimed, strconv.FormatUint(m.untimed, 10)},
	} {
		if err := r.w.AddMetadata(r.now(), kv[0], kv[1]); err != nil {
			r.writeErr = err
			return
		}
	}
	if m.callsLost > 0 || m.untimed > 0 {
		msg := fmt.Sprintf("calls: %d calls not recorded (threads still running at exit, rings full, signal handlers interrupting their thread's count), %d counted without their time (nested too deep)", m.callsLost, m.untimed)
		r.logf("%s", msg)
		if err := r.w.AddLog(r.now(), -1, capture.LogWarning, "nsprof", msg); err != nil {
			r.writeErr = err
		}
	}
	if m.arcs == 0 && m.registered > 0 {
		r.logf("calls: no instrumented call recorded (build with -pg or -finstrument-functions)")
	}
}
