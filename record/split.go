package record

import (
	"context"
	"errors"
	"fmt"
	"time"

	"nsprof/capture"
	"nsprof/perf"
)

// Split cuts one recording into captures of a period each, as perf record
// --switch-output=TIME does: the perf events stay open across the cuts,
// so no sample falls between two captures, and each capture is complete
// on its own (the processes alive at its start with their names,
// mappings and containers; its symbol bundle, kernel symbols, process
// table and lost-sample count).
type Split struct {
	// Every is the length of each capture.
	Every time.Duration
	// Path names capture n (1, 2, …); the capture is created there
	// (capture.Create) and closed before Done gets it.
	Path func(n int) string
	// Done receives each capture once it is closed, in order, the last
	// one (cut short by the end of the recording) too. An error from Done
	// stops the recording and is returned by [RecordSplit].
	Done func(SplitFile) error
	// Captures stops the recording at the end of capture Captures, as a
	// Duration would; 0: when the Duration passes or the context ends.
	Captures int
	// Writer configures each capture's writer.
	Writer capture.WriterOptions
}

// SplitFile is one finished capture of a split recording.
type SplitFile struct {
	// N numbers the captures from 1; Path is where capture N is.
	N    int
	Path string
	// Samples were written to it; Lost were dropped by the kernel while
	// it was the current capture (its "Lost Samples" counter).
	Samples, Lost uint64
	// Start and End are its time range on the capture clock.
	Start, End int64
}

// splitState is what a split recording keeps across its cuts.
type splitState struct {
	Split
	n             int
	path          string
	w             *capture.Writer // the current capture's
	next          time.Time       // when the current capture ends
	mode          string
	event         string
	samples, lost uint64 // totals when the current capture began
	start         int64
	// after are the records a cut read stamped after it, for the next
	// capture.
	after heldRecords
}

// RecordSplit records as [Record] does, into one capture per s.Every,
// handing each finished one to s.Done. Only sampling with perf events
// of the whole system or of PIDs can be split, with off-CPU time or not:
// options that spawn a command or keep state that spans the whole
// recording (blocking calls, probes, memprof, calls, trace fds) are
// refused. An off-CPU interval that spans a cut is cut in two: the time
// up to the cut is in the capture that ends there, the rest in the next.
func RecordSplit(ctx context.Context, opts Options, s Split) (res Result, err error) {
	switch {
	case s.Every <= 0:
		return res, fmt.Errorf("split period %v: must be positive", s.Every)
	case s.Path == nil || s.Done == nil:
		return res, errors.New("split recording: Path and Done are required")
	case len(opts.Command) > 0:
		return res, errors.New("a split recording records the whole system or pids, not a command")
	case opts.NoPerf || opts.Blocking > 0 || opts.MainLoop || len(opts.Spans) > 0 || len(opts.Probes) > 0:
		return res, errors.New("a split recording samples with perf events (and off-CPU time) only: no blocking calls or probes")
	}
	sp := &splitState{Split: s, n: 1, path: s.Path(1)}
	w, err := capture.CreateWithOptions(sp.path, s.Writer)
	if err != nil {
		return res, fmt.Errorf("capture 1 of the split recording: %w", err)
	}
	sp.w, sp.start = w, w.StartTime()
	res, err = record(ctx, w, opts, sp)
	if cerr := sp.w.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing %s: %w", sp.path, cerr)
	}
	StartFill(res.Fill, func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "nsprof: "+format+"\n", args...)
		}
	})
	res.Fill = nil
	if err != nil || !res.Started {
		return res, err
	}
	return res, sp.Done(sp.file(sp.w, res.Samples, res.Lost))
}

// file describes the current capture, written by w, given the recording's
// totals so far.
func (sp *splitState) file(w *capture.Writer, samples, lost uint64) SplitFile {
	return SplitFile{N: sp.n, Path: sp.path, Samples: samples - sp.samples, Lost: lost - sp.lost, Start: sp.start, End: w.EndTime()}
}

// cut ends the current capture of a split recording and starts the next:
// the records the kernel holds now go to the ending one, which gets what
// the end of a recording writes; the next one starts with what the start
// of one writes and the processes alive now.
func (r *recorder) cut(now time.Time) {
	sp := r.split
	// The cut is now: records stamped up to it go to the capture that
	// ends, those after to the next. One stamped just before may still
	// be being written to its ring (by the kernel, on another CPU); once
	// cutSettle passed, the rings' next snapshot holds every one.
	r.stoppedAt, r.stopAt = time.Now(), capture.Now()
	r.w.StopClock(r.stopAt)
	time.Sleep(cutSettle)
	r.rd.SetDeadline(now)
	first := r.rd.Snapshot() + 1 // the first snapshot taken from now
	var rec perf.Record
	for {
		err := r.rd.ReadInto(&rec)
		if err != nil {
			var fe *perf.FormatError
			if errors.As(err, &fe) {
				r.malformed++
				continue
			}
			break // drained
		}
		if t := rec.Time(); t > uint64(r.stopAt) {
			sp.after.hold(&rec, 0)
		} else {
			r.handle(&rec)
			r.settleHeld(false, false)
		}
		if r.writeErr != nil {
			return
		}
		if r.rd.Snapshot() > first {
			break // snapshot first was read whole: all the rest is later
		}
	}
	// Every record stamped before the cut was read by snapshot first.
	r.settleHeldAt(first+1, true)
	if r.off != nil {
		r.off.feedSwitchIns(r, r.stopAt)
		r.off.cut(r)
		r.flushStacks(true)
	}
	if r.dwarf != nil {
		r.flushJIT() // into the capture that ends, as the samples' time says
	}
	r.endCapture()
	duringCut(sp.n)
	old := r.w
	done := sp.file(old, r.samples, r.lost)
	if err := old.Close(); err != nil && r.writeErr == nil {
		r.writeErr = fmt.Errorf("closing %s: %w", sp.path, err)
	}
	StartFill(r.fill, r.logf)
	r.fill = nil
	if r.writeErr != nil {
		return
	}
	if err := sp.Done(done); err != nil {
		r.writeErr = err
		return
	}
	sp.n++
	sp.path = sp.Path(sp.n)
	// It starts where the last one stopped: the records read from now
	// on, those sampled while the last one was finished included.
	wo := sp.Writer
	wo.StartTime, wo.CaptureTime = r.stopAt, r.stoppedAt
	w, err := capture.CreateWithOptions(sp.path, wo)
	if err != nil {
		r.writeErr = fmt.Errorf("capture %d of the split recording: %w", sp.n, err)
		return
	}
	r.w, r.tr.w, sp.w = w, w, w
	r.stopAt, r.stoppedAt = 0, time.Time{}
	sp.samples, sp.lost, sp.start = r.samples, r.lost, w.StartTime()
	sp.next = sp.next.Add(sp.Every)
	if next := time.Now(); sp.next.Before(next) {
		sp.next = next.Add(sp.Every) // a cut took longer than a period
	}
	r.tr.nextCapture()
	if r.sym != nil {
		r.sym.nextCapture(r.tr.live, r.opts.SymbolCache != "")
	}
	if r.off != nil {
		r.off.carry(r)
	}
	if err := r.beginCapture(); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	// The records read in the cut stamped after it, in the order read.
	sp.after.settle(^uint64(0), func(rec *perf.Record) {
		if r.writeErr == nil {
			r.handle(rec)
		}
	})
}

// cutSettle is how long a cut waits, once it stopped the capture's clock,
// before it reads the rest of what the capture holds: a record the kernel
// stamped just before is written to its ring within microseconds. Tests
// lengthen it, so that every cut reads records stamped after it.
var cutSettle = time.Millisecond

// duringCut runs in each cut of a split recording, once capture n is
// written, before the processes gone are forgotten; tests make the cut
// slow with it, as a large symbol bundle does.
var duringCut = func(n int) {}

// beginCapture writes what starts a capture of a split recording after
// the first: the metadata, the host's files, the processes alive and the
// counter definitions.
func (r *recorder) beginCapture() error {
	sp := r.split
	if err := writeMetadata(r.w, metadata(r.opts, sp.mode, sp.event)); err != nil {
		return err
	}
	r.embedHostFiles()
	// At the capture's start, not now: a cut takes a while (the ending
	// capture's bundle), and the processes described were alive at its
	// start; one that exited meanwhile (kept by goneAtCut) would be
	// described after its EXIT.
	r.tr.describeLive(r.w.StartTime())
	if r.tr.err != nil {
		return r.tr.err
	}
	r.cs.ids, r.cs.next = nil, nil
	if err := r.defineCounters(); err != nil {
		return err
	}
	if r.dwarf != nil {
		if a, err := r.w.AddJITMap(truncatedName); err == nil {
			r.dwarf.truncated = a
		}
	}
	return nil
}
