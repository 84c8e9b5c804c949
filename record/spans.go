package record

import (
	"encoding/binary"
	"strconv"

	"nsprof/capture"
	"nsprof/perf"
)

// mainLoopSpec is what --speedtrack probes: GLib's dispatch of the
// sources that are ready, once per main-loop iteration that dispatches
// anything (g_main_loop_run reaches it through the static
// g_main_context_iterate; g_main_context_iteration is the public way in
// and is not called by g_main_loop_run).
var mainLoopSpec = ProbeSpec{Lib: "libglib-2.0", Func: "g_main_context_dispatch"}

// maxSpanDepth bounds the calls open at once on one thread: deeper calls
// (a recursion, or returns lost to a full ring) are counted, not marked.
const maxSpanDepth = 64

// spans turns the entries and returns of probed functions into marks: a
// MARK frame per call (the spec's group, the function's name, the call's
// duration; "tid N" as message when the thread is not the process's main
// thread), paired per thread, innermost first. The stack of what ran
// inside a call is that of the CPU (and off-CPU) samples of its thread
// within the mark, as report --marks shows for the slow ones.
type spans struct {
	probes  *probeSet
	groups  []string // the mark group of each spec
	threads map[int32][]openCall
	// early are, per thread, the returns read before their entries: the
	// rings are merged in time order per batch, and a thread that moved
	// to another CPU between its entry and its return may have its return
	// in one batch and its entry in the next. The last maxEarly are kept.
	early map[int32][]openCall
	// calls counts the marks written; unpaired the returns without an
	// entry (entered before the recording, or an entry lost to a full
	// ring) and the entries whose return was lost under a later call;
	// deep the entries past maxSpanDepth; open the calls still running
	// at the end (written up to it).
	calls, unpaired, deep, open uint64
	// hits counts the entries and returns read.
	hits uint64
	// agg sums the calls of the --probe functions (nil without).
	agg *probeCalls
}

// openCall is an entered call.
type openCall struct {
	site int
	time int64
	pid  int32
	// ip is the probed address in the process and caller the return
	// address at entry (0 unless its spec records callers); child sums
	// the durations of the probed calls it made (for self time).
	ip, caller uint64
	child      int64
}

func newSpans(ps *probeSet, groups []string) *spans {
	return &spans{probes: ps, groups: groups, threads: make(map[int32][]openCall), early: make(map[int32][]openCall)}
}

// handle takes a sample of the perf rings and reports whether it was a
// probe's.
func (sp *spans) handle(r *recorder, rec *perf.Record) bool {
	i, ok := r.rd.Uprobe(&rec.Sample)
	if !ok {
		return false
	}
	sp.hits++
	s := &rec.Sample
	site, ret := sp.probes.site(i)
	if sp.probes.mainThread[sp.probes.sites[site].spec] && s.PID != s.TID {
		return true // a thread created by the main thread inherited it
	}
	spec := sp.probes.sites[site].spec
	c := openCall{site: site, time: int64(s.Time), pid: int32(s.PID)}
	if !ret {
		c.ip = s.IP
		if sp.probes.stack[spec] {
			c.caller = callSite(s.Stack)
		}
	}
	sp.hit(int32(s.TID), c, ret, func(c openCall, tid int32, d int64) {
		if sp.agg != nil && sp.agg.probed[sp.probes.sites[c.site].spec] {
			sp.agg.add(c, tid, d)
		}
		if sp.groups[sp.probes.sites[c.site].spec] != "" {
			sp.write(r, c, tid, d, "")
		}
	})
	return true
}

// hit pairs an entry (ret false) or a return of call c's site on thread
// tid at c's time with what the thread hit before, and calls done with
// each call it completes: its entry, thread and duration. A completed
// call's duration is added to the child time of the call it ran in.
func (sp *spans) hit(tid int32, c openCall, ret bool, done func(c openCall, tid int32, d int64)) {
	stack := sp.threads[tid]
	if !ret {
		if e := sp.early[tid]; len(e) > 0 {
			for j := range e {
				if e[j].site == c.site && e[j].time >= c.time {
					d := e[j].time - c.time
					sp.early[tid] = append(e[:j], e[j+1:]...)
					if len(stack) > 0 {
						stack[len(stack)-1].child += d
					}
					done(c, tid, d)
					return
				}
			}
		}
		if len(stack) >= maxSpanDepth {
			sp.deep++
			return
		}
		c.child = 0
		sp.threads[tid] = append(stack, c)
		return
	}
	// The innermost open call of the same site; calls of other sites
	// above it lost their returns.
	for j := len(stack) - 1; j >= 0; j-- {
		if stack[j].site != c.site {
			continue
		}
		if c.time < stack[j].time {
			break
		}
		sp.unpaired += uint64(len(stack) - 1 - j)
		d := c.time - stack[j].time
		if j > 0 {
			stack[j-1].child += d
		}
		sp.threads[tid] = stack[:j]
		done(stack[j], tid, d)
		return
	}
	// No entry yet: kept for an entry read later, or counted unpaired
	// (at finish, or when pushed out).
	e := sp.early[tid]
	if len(e) == maxEarly {
		sp.unpaired++
		e = append(e[:0], e[1:]...)
	}
	sp.early[tid] = append(e, openCall{site: c.site, time: c.time, pid: c.pid})
}

// callSite returns the return address a probe's hit at a function's
// entry copied from the stack pointer, or 0 when the copy failed.
func callSite(stack []byte) uint64 {
	if len(stack) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(stack)
}

// maxEarly bounds the returns kept per thread for an entry read later.
const maxEarly = 4

// write writes the mark of one call.
func (sp *spans) write(r *recorder, c openCall, tid int32, d int64, note string) {
	if r.writeErr != nil {
		return
	}
	site := &sp.probes.sites[c.site]
	msg := ""
	if tid != c.pid {
		msg = "tid " + strconv.Itoa(int(tid))
	}
	if note != "" {
		if msg != "" {
			msg += " "
		}
		msg += note
	}
	if err := r.w.AddMark(c.time, c.pid, d, sp.groups[site.spec], site.name, msg); err != nil {
		r.writeErr = err
		return
	}
	sp.calls++
}

// finish writes the calls still running when the recording stopped, up
// to its end, and the counts as metadata, and logs them.
func (sp *spans) finish(r *recorder) {
	end := r.now()
	var gone, doubt uint64
	for tid, stack := range sp.threads {
		for _, c := range stack {
			spec := sp.probes.sites[c.site].spec
			if sp.agg != nil && sp.agg.probed[spec] {
				sp.agg.open++ // not among the --probe counts
			}
			if sp.groups[spec] == "" {
				continue
			}
			if !r.opts.FS.TaskExists(int(c.pid), int(tid)) {
				gone++ // ended inside the call: its end is unknown
				continue
			}
			if r.lost > 0 {
				doubt++ // its return may have been lost with the records
				continue
			}
			sp.write(r, c, tid, end-c.time, "(still running when the recording stopped)")
			sp.open++
		}
	}
	for _, e := range sp.early {
		sp.unpaired += uint64(len(e))
	}
	if sp.agg != nil {
		sp.agg.finish(r, sp.unpaired+sp.deep)
	}
	if r.writeErr != nil || !sp.marks() {
		return
	}
	md := [][2]string{
		{capture.MetaSpanCalls, strconv.FormatUint(sp.calls, 10)},
		{capture.MetaSpanUnpaired, strconv.FormatUint(sp.unpaired+sp.deep+gone+doubt, 10)},
		{capture.MetaSpanOpen, strconv.FormatUint(sp.open, 10)},
	}
	if err := writeMetadata(r.w, md); err != nil {
		r.writeErr = err
	}
	r.notef("spans: %d probe hits read on %d functions; %d calls marked, %d still running at the end (marked up to it)",
		sp.hits, len(sp.probes.sites), sp.calls, sp.open)
	if r.lost > 0 {
		r.logf("spans: the rings lost %d records: the calls whose entry and return were both among them are missing from the marks", r.lost)
	}
	if n := sp.unpaired + sp.deep + gone + doubt; n > 0 {
		r.logf("spans: %d probed calls not marked: %d returns without their entry (entered before the recording, or lost to a full ring), %d deeper than %d calls on a thread, %d of threads that ended inside them, %d unfinished at the end when records were lost (their returns may have been)",
			n, sp.unpaired, sp.deep, maxSpanDepth, gone, doubt)
	}
}

// marks reports whether some spec has its calls marked.
func (sp *spans) marks() bool {
	for _, g := range sp.groups {
		if g != "" {
			return true
		}
	}
	return false
}

// setupSpans finds the functions of Options.MainLoop and Options.Spans in
// the recorded command or processes and returns their probes; the caller
// closes them once the perf events are open.
func (r *recorder) setupSpans(mode string) (*probeSet, error) {
	o := r.opts
	ps := &probeSet{}
	var groups []string
	if o.MainLoop && !r.mainLoopPreloaded {
		ps.addSpec(mainLoopSpec, true, false, true)
		groups = append(groups, capture.MainLoopGroup)
	}
	for _, s := range o.Spans {
		ps.addSpec(s, false, false, true)
		groups = append(groups, capture.SpanGroup)
	}
	// probed[i] says spec i is one of Options.Probes: they come last.
	probed := make([]bool, len(ps.specs), len(ps.specs)+len(o.Probes))
	for _, s := range o.Probes {
		ps.addSpec(s, false, o.ProbeCallers, true)
		probed = append(probed, true)
		g := ""
		if o.ProbeMarks {
			g = capture.ProbeGroup
		}
		groups = append(groups, g)
	}
	var err error
	switch mode {
	case "command":
		err = ps.resolveExec(o.Command, o.Env)
	case "pids":
		// A process that lacks a function is left unprobed, unless
		// every one does.
		failed := 0
		for _, pid := range o.PIDs {
			if perr := ps.resolvePID(o.FS, pid); perr != nil {
				failed++
				if err == nil {
					err = perr
				}
				if len(o.PIDs) > 1 {
					r.logf("%v; pid %d is not probed for it", perr, pid)
				}
			}
		}
		if failed < len(o.PIDs) {
			err = nil
		}
	}
	if err != nil {
		ps.close()
		return nil, err
	}
	r.spans = newSpans(ps, groups)
	if len(o.Probes) > 0 {
		r.spans.agg = newProbeCalls(ps, probed)
	}
	return ps, nil
}
