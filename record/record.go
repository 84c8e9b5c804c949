package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/perf"
	"nsprof/proc"
)

// Record records into w until the spawned command exits, the duration
// passes or ctx is cancelled, then merges the trace-fd captures. It does
// not close w; it stops w's clock when recording stops
// ([capture.Writer.StopClock]), so the capture ends then, not after the
// symbolization that follows. A write error (such as a full disk) stops
// the recording and is returned; what was flushed before it stays
// readable.
func Record(ctx context.Context, w *capture.Writer, opts Options) (res Result, err error) {
	return record(ctx, w, opts, nil)
}

// record is [Record], split into captures with sp (see [RecordSplit]).
func record(ctx context.Context, w *capture.Writer, opts Options, sp *splitState) (res Result, err error) {
	if err := opts.setDefaults(); err != nil {
		return res, err
	}
	r := &recorder{w: w, opts: &opts, tr: newTracker(w, opts.FS), started: time.Now(), split: sp}
	r.tr.redact = &redactor{mode: opts.RedactCmdlines, users: opts.Users}
	r.flushed = r.started
	if opts.FS.Root == proc.DefaultFS.Root {
		// Container labels and files come from the live /proc only.
		r.tr.identify = r.identify
		// DWARF unwinding and the leaf step read CFI through the files
		// the symbolizer opens, so it tracks files even without the
		// bundle.
		cfi := (opts.DWARFStack > 0 || opts.LeafStack > 0) && !opts.NoPerf
		if (!opts.NoDecode && (!opts.NoPerf || opts.Memprof || opts.Calls)) || cfi {
			r.sym = newSymbolizer()
			r.sym.carry = sp != nil
			r.sym.peer = r.tr.peer
			r.tr.sym = r.sym
		}
	}
	defer func() {
		r.tr.mounts.close()
		r.fill.Close() // not handed to the caller: an error in setting up
		if r.sym != nil {
			r.sym.close()
		}
		if r.rd != nil {
			r.rd.Close()
		}
		if r.off != nil {
			r.off.close()
		}
		if r.mp != nil {
			r.mp.close()
		}
		if r.cfd != nil {
			r.cfd.release()
		}
		if r.child != nil {
			for _, t := range r.child.traces {
				t.file.Close()
			}
		}
	}()
	if err := r.setup(); err != nil {
		return res, err
	}
	afterSetup()
	r.setUp = time.Now()
	r.loop(ctx)
	r.finish()
	res = Result{Stats: r.stats(), Stopped: r.stopped, Started: true, Fill: r.fill}
	r.fill = nil
	if r.child != nil {
		res.ExitCode, res.Exit = r.child.exitStatus()
	}
	if r.writeErr != nil {
		return res, r.writeErr
	}
	return res, r.tr.err
}

// afterSetup runs between setting up and recording; tests make setting
// up slow with it.
var afterSetup = func() {}

type recorder struct {
	w      *capture.Writer
	opts   *Options
	tr     *tracker
	sym    *symbolizer
	dwarf  *dwarfUnwinder // with Options.DWARFStack
	leaf   *leafCallers   // with Options.LeafStack
	cfd    *controlFD     // SYSPROF_CONTROL_FD, with TraceFD, GTK or SysprofMemprof
	rd     *perf.Reader
	child  *child
	ns     nsLearner // without perf events, with trace fds
	mp     *memprof
	cs     counterSet
	status *statusLine
	// jitq holds the samples waiting for their JIT code's description,
	// with dwarf.
	jitq jitDeferred
	// live shows the status line while recording: not while a spawned
	// command shares the terminal.
	live    bool
	started time.Time
	// setUp is when setup ended: Options.Duration counts from it.
	setUp   time.Time
	flushed time.Time
	stopped string
	// stopAt is when recording stopped (capture clock; 0 before), the
	// time of the frames written after it and the capture's end;
	// stoppedAt the same on the wall clock.
	stopAt    int64
	stoppedAt time.Time

	samples   uint64
	lost      uint64
	lostID    uint32
	malformed uint64
	// symbolized counts the names in the symbol bundle.
	symbolized int
	writeErr   error
	// fill is what the capture's symbol bundle left to fill in the
	// symbol cache, started once the capture is closed.
	fill     *SymbolFill
	clonesTP []*perf.Tracepoint
	off      *offCPU // with Options.OffCPU
	// filter drops the samples of other processes when the sampling
	// event is opened per CPU (perf.Options.SampleCPUWide).
	filter *targetFilter
	// cgroupDir is the cgroup of the container recorded (record
	// --container), "" otherwise; cgroupChecked is when the loop last
	// looked whether it is still there.
	cgroupDir     string
	cgroupChecked time.Time
	// perTaskSampling says per-CPU sampling was refused (see openPerf).
	perTaskSampling bool
	// nst keeps the records of a container told by its PID namespace
	// (record --container without a cgroup of its own), and
	// nstChecked is when the recorder last looked whether any of its
	// processes runs.
	nst        *nsTarget
	nstChecked time.Time
	block      *blocking // with Options.Blocking
	spans      *spans    // with Options.MainLoop or Options.Spans
	// mainLoopPreloaded says Options.MainLoop is recorded by the
	// preload library (see mainLoopPreload), not by user probes.
	mainLoopPreloaded bool
	// stackFile holds the stacks of off and block.
	stackFile stackFile
	// userOnly is set when perf events sample user space only (see
	// openPerf).
	userOnly bool
	// split cuts the recording into captures (RecordSplit); nil for one.
	split *splitState
	// kern is /proc/kallsyms as the capture being ended reads it (see
	// kernelTable); nil when not read yet.
	kern *kernelSymbols
}

// beyondCommand says the events sample more than a command's processes
// (every process, -a, or a container's cgroup): their reader does not
// end when the command exits, and what it holds then is drained.
func (r *recorder) beyondCommand() bool {
	return r.opts.System || r.cgroupDir != "" || r.nst != nil
}

func (r *recorder) stats() Stats {
	elapsed := time.Since(r.started)
	if r.stopAt != 0 {
		elapsed = r.stoppedAt.Sub(r.started)
	}
	st := Stats{
		Elapsed:          elapsed,
		Samples:          r.samples,
		Lost:             r.lost,
		Processes:        r.tr.seen,
		SampledProcesses: len(r.tr.withSamples) + r.tr.sampledGone,
		Bytes:            r.w.BytesWritten(),
	}
	if r.filter != nil {
		st.OtherSamples = r.filter.dropped
	}
	if r.nst != nil {
		st.OtherSamples += r.nst.dropped
	}
	if r.mp != nil {
		st.Allocations, st.Frees, st.AllocLost, st.AllocSignalDropped = r.mp.nAllocs, r.mp.frees, r.mp.lost, r.mp.sigDropped
		st.CallArcs, st.Calls, st.CallsLost, st.CallsUntimed = r.mp.arcs, r.mp.nCalls, r.mp.callsLost, r.mp.untimed
	}
	if r.cfd != nil {
		st.CollectorFrames = r.cfd.frames
		r.cfd.mu.Lock()
		st.CollectorFull, st.CollectorLost = r.cfd.loss.Full, r.cfd.loss.Estimate
		r.cfd.mu.Unlock()
	}
	return st
}

// logf writes a warning line to the log, clearing the status line first.
func (r *recorder) logf(format string, args ...any) {
	r.status.println(r.opts.Log, fmt.Sprintf("nsprof: "+format, args...))
}

// notef writes a routine note to the log with Options.Verbose.
func (r *recorder) notef(format string, args ...any) {
	if r.opts.Verbose {
		r.logf(format, args...)
	}
}

// now returns the time of a frame: the current time while recording, the
// time recording stopped after, so that what the end of the recording
// writes (symbols, kallsyms, totals) does not stretch the capture.
func (r *recorder) now() int64 {
	if r.stopAt != 0 {
		return r.stopAt
	}
	return capture.Now()
}

// setup writes the capture's preamble, spawns the command, opens the perf
// events and snapshots the processes that already exist.
func (r *recorder) setup() error {
	o := r.opts
	mode := "system"
	var ctr container.Cgroup
	switch {
	case o.Container != "":
		c, err := container.FindCgroup(o.Container)
		if err != nil {
			return err
		}
		mode, ctr = "container", c
		if c.Dir == "" {
			if nst, ok := newNSTarget(o.FS, c.PIDs); ok {
				r.nst = nst
				if c.Kind == container.KindFlatpak {
					r.notef("Flatpak app %s: recording every CPU, keeping the processes of its sandboxes' PID namespaces (%d now)", c.ID, len(c.PIDs))
				} else {
					r.notef("container %s (%s) has no cgroup of its own (rootless, with cgroups v1): recording every CPU, keeping the processes of its PID namespace (%d now)", c.Name, c.ID, len(c.PIDs))
				}
			} else {
				r.logf("container %s (%s) has no cgroup nor PID namespace of its own: recording the %d processes found in it and their children, as -p does; what enters it later (podman exec, flatpak enter) is missed (record -a, then report --container %s, has it)", c.Name, c.ID, len(c.PIDs), c.Name)
			}
		} else {
			r.notef("container %s (%s): cgroup %s, %d processes", c.Name, c.ID, c.Dir, len(c.PIDs))
		}
	case o.System:
	case len(o.Command) > 0:
		mode = "command"
	case len(o.PIDs) > 0:
		mode = "pids"
	}
	var pass []passFile
	command := o.Command
	var preload *os.File // the library handed to a podman container
	if o.Memprof || o.Calls {
		mp, err := newMemprof(o)
		if err != nil {
			return err
		}
		r.mp = mp
		cmd, pp, ok, err := podmanPreload(o.Command, mp)
		if err != nil {
			return err
		}
		if ok {
			command, preload = cmd, pp[1].file
			pass = append(pass, pp...)
			r.notef("memprof: loading %s into the process podman starts in its container (LD_PRELOAD=/proc/self/fd/4, --preserve-fds=2), not into podman", mp.lib)
		} else {
			pass = append(pass, mp.pass())
		}
	}
	if len(o.Command) > 0 && (o.TraceFD || o.GTK || o.SysprofMemprof) {
		cfd, err := newControlFD()
		if err != nil {
			return err
		}
		r.cfd = cfd
		p := cfd.pass()
		if o.SysprofMemprof {
			lib := o.SysprofMemprofLib
			if lib == "" {
				if lib, err = FindSysprofMemprofLib(); err != nil {
					return err
				}
			}
			p.extra = append(p.extra, "NSPROF_MEMPROF_PRELOAD="+lib)
		}
		pass = append(pass, p)
	}
	traces := o.traceVars()
	if o.MainLoop {
		tv, ok, err := r.mainLoopPreload()
		if err != nil {
			return err
		}
		if ok {
			traces = append(traces, tv)
			r.mainLoopPreloaded = true
		}
	}
	if len(o.Command) > 0 {
		c, err := spawn(command, o.Env, traces, pass)
		if r.mp != nil {
			r.mp.send.Close()
		}
		if preload != nil {
			preload.Close()
		}
		if r.cfd != nil {
			r.cfd.theirs.Close() // the command holds it now
		}
		if err != nil {
			return err
		}
		r.child = c
		r.tr.pm.setRoot(c.pid())
	}
	ok := false
	defer func() {
		if !ok && r.child != nil {
			r.child.abort()
		}
	}()
	event := "none"
	if !o.NopPerf() {
		var target perf.Target
		switch mode {
		case "command":
			target = perf.Exec(r.child.pid())
		case "pids":
			target = perf.Processes(o.PIDs...)
		case "container":
			target = perf.Cgroup(ctr.Dir)
			r.cgroupDir = ctr.Dir
			if ctr.Dir == "" {
				target = perf.Processes(ctr.PIDs...)
				if r.nst != nil {
					// Every task, its processes kept by r.nst.
					target = perf.AllTasks()
				}
			}
		default:
			target = perf.AllTasks()
		}
		// Namespaces: what a process that exits before /proc is read ran
		// in (see tracker.labelByNS), and the PID namespace of a new
		// process for r.nst.
		popts := perf.Options{Event: o.Event, EventTracepoint: o.Tracepoint, Frequency: uint64(o.Frequency), NoBuildID: o.NoMmapBuildIDs, Namespaces: true}
		// Unwinding needs the symbolizer's files (only with the live /proc).
		if o.DWARFStack > 0 && r.sym != nil {
			popts.UserStack = uint32(o.DWARFStack)
			popts.ExcludeUserCallchain = true
			popts.RingPages = dwarfRingPages(o.Frequency, o.DWARFStack)
		} else if o.LeafStack > 0 && r.sym != nil {
			popts.UserStack = uint32(o.LeafStack)
			popts.FrameRegs = true // the leaf step's unwinding needs no more
			popts.RingPages = dwarfRingPages(o.Frequency, o.LeafStack)
		}
		var err error
		if tps, err := lookupCloneTracepoints(); err == nil {
			r.clonesTP = tps
			// Per CPU with --off-cpu (SampleCPUWide): clones are
			// rare, and each per-task event costs at every context
			// switch of every recorded thread.
			for _, tp := range tps {
				popts.CPUWideTracepoints = append(popts.CPUWideTracepoints, tp.Name)
			}
		} else {
			r.logf("threads created in PID namespaces may not be mapped to host ids: %v", err)
		}
		if o.OffCPU {
			if r.off, err = newOffCPU(o.OffCPUMarks); err != nil {
				return err
			}
			if err := r.setupOffCPU(&popts, mode); err != nil {
				return err
			}
			popts.SampleCPUWide = mode != "system"
		}
		if o.Blocking > 0 {
			if r.block, err = newBlocking(o.Blocking, o.FS); err != nil {
				return err
			}
			r.block.setup(&popts)
		}
		if (o.MainLoop && !r.mainLoopPreloaded) || len(o.Spans) > 0 || len(o.Probes) > 0 {
			ps, err := r.setupSpans(mode)
			if err != nil {
				return err
			}
			defer ps.close()
			popts.Uprobes = ps.uprobes()
			// Two records a call: a hot function fills the default
			// rings as system calls do (see tracingRingPages).
			if popts.RingPages == 0 {
				popts.RingPages = perf.DefaultRingPages
				if popts.UserStack > 0 {
					popts.RingPages = perf.DefaultStackRingPages
				}
			}
			popts.RingPages = max(popts.RingPages, tracingRingPages())
		}
		rd, err := r.openPerf(target, popts)
		if err != nil {
			return fmt.Errorf("open perf events: %w", err)
		}
		r.rd = rd
		if !rd.Namespaces() {
			r.notef("the kernel's namespace records need CAP_PERFMON: a process gone before /proc is read keeps no container label")
			if r.nst != nil {
				r.logf("without the kernel's namespace records, commands podman exec runs in the container are missed")
			}
		}
		if popts.SampleCPUWide && !r.perTaskSampling {
			pids := o.PIDs
			if mode == "command" {
				pids = nil // known from its exec
			}
			r.filter = newTargetFilter(o.FS, pids)
			r.filter.notSample = func(s *perf.Sample) bool { return r.cloneTP(s) != nil }
		}
		if r.nst != nil {
			r.nst.notSample = func(s *perf.Sample) bool { return r.cloneTP(s) != nil }
		}
		if rd.Event() != o.Event {
			r.logf("%s: this machine has no PMU that counts it; sampling %s instead, as perf does (software events: cpu-clock, task-clock, page-faults, context-switches)", o.Event, rd.Event())
		}
		event = rd.Event().String()
		if o.Tracepoint != "" {
			event = o.Tracepoint
		}
		if r.userOnly {
			event += ":u" // perf's name for a user-space-only event
		}
		if o.DWARFStack > 0 && r.sym != nil {
			r.dwarf = newDWARFUnwinder(r.sym, o.FS, rd.Format())
			// A stack cut short by the stack copy ends in a frame
			// named [stack truncated]: a JIT address, so Sysprof
			// names it too, rather than a partial stack that looks
			// complete.
			if a, err := r.w.AddJITMap(truncatedName); err == nil {
				r.dwarf.truncated = a
			}
			// A process's deferred samples are unwound for the last
			// time before its exec replaces its JIT's state.
			r.sym.jitClosing = func(pid int) { r.retryJIT(int32(pid), true) }
		} else if popts.UserStack > 0 {
			r.leaf = &leafCallers{u: newDWARFUnwinder(r.sym, o.FS, rd.Format())}
		}
		if o.SymbolCache != "" {
			for _, u := range []*dwarfUnwinder{r.dwarf, r.leafUnwinder()} {
				if u != nil {
					u.goTables = &goTables{dir: o.SymbolCache, maxBytes: o.SymbolCacheMaxBytes}
				}
			}
		}
	}
	if r.split != nil {
		r.split.mode, r.split.event = mode, event
		r.split.next = time.Now().Add(r.split.Every)
	}
	if err := writeMetadata(r.w, metadata(o, mode, event)); err != nil {
		return err
	}
	if r.mp != nil {
		if err := writeMetadata(r.w, r.mp.metadata()); err != nil {
			return err
		}
	}
	r.embedHostFiles()
	now := capture.Now()
	switch mode {
	case "pids":
		for _, pid := range o.PIDs {
			r.tr.scan(pid, now)
		}
	case "container":
		for _, pid := range ctr.PIDs {
			r.tr.scan(pid, now)
			if ps := r.tr.procs[pid]; ctr.Dir != "" && r.tr.cgroupLabel == nil && ps != nil && ps.info.Container != nil && ps.info.Container.ID == ctr.ID {
				r.tr.cgroupLabel = ps.info.Container
			}
		}
	case "system":
		pids, err := o.FS.PIDs()
		if err != nil {
			return fmt.Errorf("list processes: %w", err)
		}
		r.tr.glance(pids, now)
		for _, pid := range pids {
			r.tr.scan(pid, now)
		}
	}
	if err := r.setupCounters(); err != nil {
		return err
	}
	if o.Status != nil {
		r.status = &statusLine{w: o.Status, width: o.StatusWidth}
		r.live = len(o.Command) == 0
	}
	if r.child != nil {
		if err := r.child.start(); err != nil {
			return err
		}
	}
	ok = true
	return r.tr.err
}

// NopPerf reports whether CPU sampling is off.
func (o *Options) NopPerf() bool { return o.NoPerf }

func (r *recorder) setupCounters() error {
	o := r.opts
	var sources []counterSource
	note := func(notes []string) {
		for _, n := range notes {
			r.notef("%s", n)
		}
	}
	if !o.NoCPU {
		if s, notes, err := newCPUSource(o.FS, o.SysRoot); err == nil {
			sources = append(sources, s)
			note(notes)
		} else {
			r.notef("cpu counters unavailable: %v", err)
		}
	}
	if !o.NoMemory {
		sources = append(sources, memorySource{fs: o.FS})
	}
	if !o.NoDisk {
		if s, notes, err := newDiskSource(o.FS, o.SysRoot); err == nil {
			note(notes)
			if len(s.disks) > 0 {
				sources = append(sources, s)
			}
		} else {
			r.notef("disk counters unavailable: %v", err)
		}
	}
	if !o.NoNetwork {
		if s, err := newNetworkSource(o.FS); err == nil {
			sources = append(sources, s)
		} else {
			r.notef("network counters unavailable: %v", err)
		}
	}
	if o.RAPL {
		if s, err := newRAPLSource(o.SysRoot); err == nil {
			sources = append(sources, s)
		} else {
			r.logf("--rapl: %v; energy not recorded", err)
		}
	}
	r.cs.sources = sources
	return r.defineCounters()
}

// defineCounters writes the definitions of the counters, the lost samples
// one included.
func (r *recorder) defineCounters() error {
	if err := r.cs.define(r.w, capture.Now()); err != nil {
		return err
	}
	if r.rd != nil {
		id, err := r.w.RequestCounters(1)
		if err != nil {
			return err
		}
		r.lostID = id
		h := capture.FrameHeader{CPU: -1, PID: -1, Time: capture.Now()}
		if err := r.w.DefineCounters(h, []capture.Counter{{Category: capture.LostSamplesCategory, Name: capture.LostSamplesName, Description: "Samples the kernel dropped", ID: id}}); err != nil {
			return err
		}
	}
	return nil
}

// finish stops sampling, drains what the kernel still holds, ends the
// command if the recording stopped before it, and merges trace fds.
func (r *recorder) finish() {
	if r.child != nil {
		r.endChild()
	}
	if r.rd != nil {
		r.rd.Disable()
	}
	// The recording ends here; what follows only reads what was
	// recorded and writes it down, stamped at this time.
	r.stoppedAt, r.stopAt = time.Now(), capture.Now()
	r.w.StopClock(r.stopAt)
	if r.rd != nil && r.writeErr == nil && (r.stopped != "command exited" || r.beyondCommand()) {
		r.drain()
	}
	if r.writeErr == nil {
		r.settleHeld(true, true)
	}
	r.status.clear()
	if r.writeErr != nil {
		return
	}
	if r.mp != nil {
		r.finishMemprof()
	}
	if r.off != nil {
		r.off.feedSwitchIns(r, r.stopAt)
		r.off.finish(r)
	}
	if r.block != nil {
		r.block.finish(r)
	}
	if r.spans != nil {
		r.spans.finish(r)
	}
	if r.off != nil || r.block != nil {
		r.flushStacks(true)
	}
	if r.cfd != nil {
		r.cfd.finish(r)
	}
	if r.child != nil {
		r.mergeTraceFDs()
	}
	if r.leaf != nil {
		r.notef("%s", r.leaf.summary(r.opts.LeafStack))
	}
	if r.dwarf != nil {
		r.closeJIT()
		r.notef("%s", r.dwarf.summary(uint32(r.opts.DWARFStack)))
		if s := r.jitq.summary(); s != "" {
			r.notef("%s", s)
		}
		r.dwarf.release()
	}
	if r.leaf != nil {
		r.leaf.u.release()
	}
	r.endCapture()
	if n := r.tr.redact.cut; n > 0 {
		r.notef("command lines of %d processes cut to their program names (--redact-cmdlines=%s)", n, r.opts.RedactCmdlines)
	}
	if n := r.tr.nsLabelled; n > 0 {
		r.notef("%d processes gone before /proc was read labelled with the container of their parent or of a process in the same namespaces", n)
	}
	if n := r.tr.exitsInferred; n > 0 {
		r.logf("%d processes whose leader thread exited first ended when /proc showed their last thread gone: its EXIT record was not read (lost)", n)
	}
}

// releasePages calls Options.ReleasePages, when set.
func (r *recorder) releasePages() {
	if r.opts.ReleasePages != nil {
		r.opts.ReleasePages()
	}
}

// endCapture writes what ends a capture: the processes still undescribed,
// the counters' last values, the kernel's symbols and build-id, the
// symbol bundle of what the capture sampled and the process table.
func (r *recorder) endCapture() {
	r.tr.flushPending(true)
	r.cs.tick(r.w, time.Now().Add(time.Hour), r.stopAt)
	bundled := r.sym != nil && !r.opts.NoDecode
	if bundled {
		r.releasePages()
		r.writeSymbols()
	}
	if r.rd != nil {
		r.embedKallsyms(bundled)
		r.embedKernelNotes()
	}
	if r.kern != nil {
		r.kern.close()
		r.kern = nil // read again for the next capture of a split recording
	}
	if err := r.w.CloseProcessFile(); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
}

// drain reads the records still in the rings after the events were
// disabled.
func (r *recorder) drain() {
	r.rd.Flush()
	var rec perf.Record
	r.rd.SetDeadline(time.Now().Add(2 * time.Second))
	for {
		err := r.rd.ReadInto(&rec)
		if err != nil {
			var fe *perf.FormatError
			if errors.As(err, &fe) {
				continue
			}
			return
		}
		r.handle(&rec)
		if r.writeErr != nil {
			return
		}
	}
}

// endChild waits for a command still running when the recording stopped:
// it gets 2 seconds to react to the terminal's Ctrl-C by itself, then
// SIGTERM, then SIGKILL.
func (r *recorder) endChild() {
	c := r.child
	select {
	case <-c.done:
		return
	default:
	}
	wait := 2 * time.Second
	if r.stopped == "duration" || r.stopped == "write error" {
		wait = 0
	}
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			c.cmd.Process.Signal(sig)
			wait = 2 * time.Second
		}
		select {
		case <-c.done:
			return
		case <-time.After(wait):
		}
	}
	<-c.done
}

// mergeTraceFDs appends what the command wrote to its trace fds, with its
// namespace pids translated to host pids. Each memfd is mapped and merged
// in place (read through a buffer where it cannot be mapped).
func (r *recorder) mergeTraceFDs() {
	opts := capture.CatOptions{MapPID: r.tr.pm.translator()}
	for _, t := range r.child.traces {
		if err := mergeTraceFD(r.w, t.file, opts); err != nil {
			r.logf("merging %s capture: %v", t.name, err)
		}
	}
}

// mergeTraceFD appends the capture in f, if it holds one, to w.
func mergeTraceFD(w *capture.Writer, f *os.File, opts capture.CatOptions) error {
	data, unmap, st, err := capture.MapFile(f)
	if err != nil || st.Size() == 0 {
		return err
	}
	if data != nil {
		defer unmap()
		return capture.ReadMapped(data, func() error { return capture.CatBytes(w, data, opts) })
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return capture.Cat(w, f, opts)
}
