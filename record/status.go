package record

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Stats are the running totals of a recording.
type Stats struct {
	// Elapsed is the recording time so far.
	Elapsed time.Duration
	// Samples is the number of SAMPLE frames written.
	Samples uint64
	// Lost is the number of samples the kernel dropped (PERF_RECORD_LOST).
	Lost uint64
	// OtherSamples counts the samples of processes not recorded that
	// the sampling event took, when it samples every task of each CPU
	// (--off-cpu with a command or -p); they are left out, not lost.
	OtherSamples uint64
	// Processes is the number of processes seen; SampledProcesses the
	// number of those with samples.
	Processes, SampledProcesses int
	// Bytes is the size of the capture so far.
	Bytes int64
	// Allocations and Frees count the ALLOCATION frames of --memprof;
	// AllocLost the events its rings dropped when full, and
	// AllocSignalDropped those of signal handlers that found no room.
	Allocations, Frees, AllocLost, AllocSignalDropped uint64
	// CallArcs and Calls count the arc records of --calls and the calls
	// they sum; CallsLost the calls the preload could not record,
	// CallsUntimed those it counted without their time.
	CallArcs, Calls, CallsLost, CallsUntimed uint64
	// CollectorFrames counts the frames copied from SYSPROF_CONTROL_FD
	// rings; CollectorFull the times a ring was found too full for its
	// thread's next frame, and CollectorLost the frames estimated lost
	// then (the collector does not count them).
	CollectorFrames, CollectorFull, CollectorLost uint64
}

// statusLine writes one refreshed line on a terminal. A nil statusLine
// shows nothing. It is safe for concurrent use.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	shown bool
}

func (s *statusLine) update(st Stats) {
	s.text(fmt.Sprintf("recording %5.1fs  samples %d  lost %d  processes %d  %.1f MB",
		st.Elapsed.Seconds(), st.Samples, st.Lost, st.Processes, float64(st.Bytes)/1e6))
}

// text shows line as the status.
func (s *statusLine) text(line string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.width > 1 && len(line) >= s.width {
		line = line[:s.width-1]
	}
	fmt.Fprintf(s.w, "\r%s\x1b[K", line)
	s.shown = true
}

// clear removes the line, so that the next line written to the terminal
// starts on a clean line.
func (s *statusLine) clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
}

func (s *statusLine) clearLocked() {
	if s.shown {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.shown = false
	}
}

// println writes line to w (the terminal, or another writer) with a
// newline, the status line cleared first, so that no refresh of the
// status line in between ends up in front of it.
func (s *statusLine) println(w io.Writer, line string) {
	if s == nil {
		fmt.Fprintln(w, line)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	fmt.Fprintln(w, line)
}

// Summary returns the one-paragraph summary printed when recording ends.
func (st Stats) Summary(path string) string {
	lost := ""
	if st.Lost > 0 {
		lost = fmt.Sprintf(" (%d lost)", st.Lost)
	}
	plural := func(n int) string {
		if n == 1 {
			return "1 process"
		}
		return fmt.Sprintf("%d processes", n)
	}
	of := ""
	if st.Samples > 0 {
		of = " of " + plural(st.SampledProcesses)
	}
	mem := ""
	if st.OtherSamples > 0 {
		mem = fmt.Sprintf(", %d samples of other processes left out (sampled per CPU)", st.OtherSamples)
	}
	if st.Allocations > 0 || st.Frees > 0 || st.AllocLost+st.AllocSignalDropped > 0 {
		mem += fmt.Sprintf(", %d allocations and %d frees", st.Allocations, st.Frees)
		switch {
		case st.AllocSignalDropped > 0:
			mem += fmt.Sprintf(" (%d lost: %d with rings full, %d in signal handlers)", st.AllocLost+st.AllocSignalDropped, st.AllocLost, st.AllocSignalDropped)
		case st.AllocLost > 0:
			mem += fmt.Sprintf(" (%d lost)", st.AllocLost)
		}
	}
	if st.CallArcs > 0 || st.CallsLost > 0 {
		mem += fmt.Sprintf(", %d calls in %d arc records", st.Calls, st.CallArcs)
		if st.CallsLost > 0 {
			mem += fmt.Sprintf(" (%d calls lost)", st.CallsLost)
		}
	}
	if st.CollectorFrames > 0 || st.CollectorFull > 0 {
		mem += fmt.Sprintf(", %d collector frames", st.CollectorFrames)
		if st.CollectorFull > 0 {
			mem += fmt.Sprintf(" (rings found full: %d, about %d frames lost)", st.CollectorFull, st.CollectorLost)
		}
	}
	return fmt.Sprintf("recorded %.1fs: %d samples%s%s%s, %s seen, %.1f MB written to %s",
		st.Elapsed.Seconds(), st.Samples, of, lost, mem, plural(st.Processes), float64(st.Bytes)/1e6, path)
}
