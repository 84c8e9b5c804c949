package capture

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// CatOptions configures [Cat]. The zero value is the default.
type CatOptions struct {
	// MapPID translates the process and thread ids found in the source
	// (frame PIDs, sample and allocation TIDs, FORK children) into the ids
	// to write. Within one PID namespace pids and tids share one number
	// space, so one function serves both. It is called only for ids > 0,
	// and once per id: the merge reuses its answer. Default: ids are
	// kept.
	MapPID func(id int32) int32
	// NewFrameTypes makes [CatFiles] write TRACE and DBUS_MESSAGE frames
	// as such (see [WriterOptions.NewFrameTypes]). [Cat] follows the
	// destination Writer's setting instead.
	NewFrameTypes bool
}

// Cat appends every frame of the capture in src to dst, as libsysprof-
// capture's sysprof_capture_writer_cat does: JIT addresses are renumbered
// into dst's JIT map (in samples, traces and allocations), counters get new
// ids from dst and their values follow, and Sysprof 51 frame-index frames
// are dropped, as are frames of unknown types and, when dst does not allow
// new frame types, DBUS_MESSAGE frames (TRACE frames become SAMPLEs). Unlike Sysprof, dst's header
// keeps the earliest start and the latest end time of all inputs.
//
// Cat reads src twice (JIT names first), so it needs an io.ReadSeeker
// positioned at the capture's start. If src is damaged, the frames before
// the damage are merged and the [*FormatError] is returned.
func Cat(dst *Writer, src io.ReadSeeker, opts CatOptions) error {
	return cat(dst, src, opts, nil)
}

// CatBytes is [Cat] of the capture held whole in data, which it reads in
// place (see [NewBytesReader]) and, unless the capture has JIT addresses,
// once: a recorder maps the file an application wrote its marks into and
// merges it without reading it through a buffer. data must not change
// while CatBytes runs.
func CatBytes(dst *Writer, data []byte, opts CatOptions) error {
	open := func() (*Reader, error) { return NewBytesReader(data, ReaderOptions{AllowUnknown: true}) }
	return catFrom(dst, open, true, opts, nil)
}

// cat is [Cat]; when files is set, the chunks of the embedded files
// [CatFiles] merges go there instead of to dst (see divert).
func cat(dst *Writer, src io.ReadSeeker, opts CatOptions, files *Files) error {
	base, err := src.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("cat: %w", err)
	}
	open := func() (*Reader, error) {
		if _, err := src.Seek(base, io.SeekStart); err != nil {
			return nil, err
		}
		return NewReaderWithOptions(src, ReaderOptions{AllowUnknown: true})
	}
	return catFrom(dst, open, false, opts, files)
}

// catFrom is cat of the capture open reads from its start. A frame's JIT
// addresses may be named by a JIT_MAP frame after it, so the names are
// read first: in a pass of their own, or, when lazy (open's Readers are
// independent of each other), only once a frame with a JIT address comes,
// by a second Reader that reads the JIT_MAP frames after it.
func catFrom(dst *Writer, open func() (*Reader, error), lazy bool, opts CatOptions, files *Files) error {
	r, err := open()
	if err != nil {
		return fmt.Errorf("cat: %w", err)
	}
	hdr := r.Header()
	m := catMapper{jit: make(map[uint64]uint64), counters: make(map[uint32]uint32), mapPID: opts.MapPID}
	var firstErr error
	// named says m.jit holds every JIT name of the capture, or all up to
	// a damaged JIT_MAP frame.
	named := false
	if !lazy {
		readErr, err := m.readJITNames(dst, r, -1)
		if err != nil {
			return err
		}
		firstErr = readErr
		if r, err = open(); err != nil {
			return fmt.Errorf("cat: %w", err)
		}
		named = true
	}

	// Copy frames, as stored where only their ids change (see
	// rawCopyable), else through the typed writer.
	raw := r.o == dst.o
	// Frames copied as stored go to dst in runs (see rawRun).
	run := newRawRun(&m, r)
	maxEnd := int64(math.MinInt64)
	for {
		rf, err := r.NextRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			firstErr = err
			break
		}
		if raw && m.rawCopyable(&rf, files != nil) {
			if err := run.add(dst, &rf); err != nil {
				return fmt.Errorf("cat: %w", err)
			}
			maxEnd = max(maxEnd, noteRaw(dst, &rf))
			continue
		}
		if err := run.flush(dst); err != nil {
			return fmt.Errorf("cat: %w", err)
		}
		if rf.Type == TypeJITMap {
			if !named {
				readErr, err := m.addJITNames(dst, &rf)
				if err != nil {
					return err
				}
				if readErr != nil {
					// As a pass of its own would: names stop here.
					firstErr, named = readErr, true
				}
			}
			continue
		}
		if !named && rf.hasJITAddrs() {
			ahead, err := open()
			if err != nil {
				return fmt.Errorf("cat: %w", err)
			}
			readErr, err := m.readJITNames(dst, ahead, rf.Off)
			if err != nil {
				return err
			}
			if readErr != nil {
				firstErr = readErr
			}
			named = true
		}
		f, err := rf.Decode()
		if err != nil {
			firstErr = err
			break
		}
		if _, ok := f.(*Unknown); ok {
			continue
		}
		if files != nil && divert(f, files) {
			continue
		}
		if err := m.translate(dst, f); err != nil {
			return fmt.Errorf("cat: frame at offset %d: %w", r.Offset(), err)
		}
		end := f.Head().Time
		if mk, ok := f.(*Mark); ok {
			end = mk.End()
		}
		maxEnd = max(maxEnd, end)
		if err := dst.WriteFrame(f); err != nil {
			if errors.Is(err, ErrNewFrameType) {
				continue
			}
			return fmt.Errorf("cat: %w", err)
		}
	}
	if err := run.flush(dst); err != nil {
		return fmt.Errorf("cat: %w", err)
	}
	end := max(hdr.EndTime, maxEnd)
	dst.ExtendTimeRange(hdr.StartTime, end)
	if firstErr != nil {
		return fmt.Errorf("cat: %w", firstErr)
	}
	return nil
}

type catMapper struct {
	jit      map[uint64]uint64
	counters map[uint32]uint32
	mapPID   func(int32) int32
	// ids memoizes mapPID; lastID and lastHost are its latest answer.
	ids              map[int32]int32
	lastID, lastHost int32
}

func (m *catMapper) addrs(a []uint64) {
	for i, v := range a {
		if v&JITMapMark == 0 {
			continue
		}
		if n, ok := m.jit[v]; ok {
			a[i] = n
		}
	}
}

// MapIDs rewrites the process and thread ids of f in place with mapID:
// the frame's PID, the TID of samples, traces and allocations, and the
// child of a FORK. mapID is called only for ids > 0.
func MapIDs(f Frame, mapID func(int32) int32) {
	id := func(v int32) int32 {
		if v <= 0 {
			return v
		}
		return mapID(v)
	}
	h := f.Head()
	h.PID = id(h.PID)
	switch f := f.(type) {
	case *Sample:
		f.TID = id(f.TID)
	case *Trace:
		f.TID = id(f.TID)
	case *Allocation:
		f.TID = id(f.TID)
	case *Fork:
		f.ChildPID = id(f.ChildPID)
	}
}

// translate rewrites f in place for the destination.
func (m *catMapper) translate(dst *Writer, f Frame) error {
	if m.mapPID != nil {
		MapIDs(f, m.id)
	}
	switch f := f.(type) {
	case *Sample:
		m.addrs(f.Addrs)
	case *Trace:
		m.addrs(f.Addrs)
	case *Allocation:
		m.addrs(f.Addrs)
	case *CounterDefine:
		for i := range f.Counters {
			id, err := dst.RequestCounters(1)
			if err != nil {
				return err
			}
			m.counters[f.Counters[i].ID] = id
			f.Counters[i].ID = id
		}
	case *CounterSet:
		for i := range f.Updates {
			if n, ok := m.counters[f.Updates[i].ID]; ok {
				f.Updates[i].ID = n
			}
		}
	}
	return nil
}

// CatFiles merges the captures in srcs into one capture written to w, with
// a header spanning from the earliest start to the latest end of the inputs.
// The symbol bundles, nsprof's source lines, process files and off-CPU
// records of the inputs are merged into one of each, written after the
// frames (the bundle last, through [Writer.AddSymbolsFile]); other
// embedded files are copied, so of a path two inputs have (the kernel's
// symbols of two boots) readers use the first input's.
// Every input is merged, a damaged one up to its damage (nothing of one
// whose header cannot be read); the error then names each damaged input
// and where its damage is, and the merged capture is complete otherwise.
// Any other error (writing w, reading an input) stops the merge.
func CatFiles(w io.Writer, srcs []io.ReadSeeker, names []string, opts CatOptions) error {
	start, end := int64(math.MaxInt64), int64(math.MinInt64)
	damaged := make([]error, len(srcs))
	for i, s := range srcs {
		st, en, err := timeRange(s)
		if err != nil {
			if !isDamage(err) {
				return fmt.Errorf("%s: %w", names[i], err)
			}
			damaged[i] = fmt.Errorf("%s: %w (not merged)", names[i], err)
			continue
		}
		if st != 0 {
			start = min(start, st)
		}
		end = max(end, en)
	}
	if start == math.MaxInt64 {
		start = 0
	}
	if end < start {
		end = start
	}
	dst, err := NewWriterWithOptions(w, WriterOptions{
		StartTime:     start,
		EndTime:       end,
		NewFrameTypes: opts.NewFrameTypes,
		Clock:         func() int64 { return math.MinInt64 },
	})
	if err != nil {
		return err
	}
	var errs catErrors
	merge := catMerge{mapPID: opts.MapPID}
	for i, s := range srcs {
		if damaged[i] != nil {
			errs = append(errs, damaged[i])
			continue
		}
		files := &Files{}
		if err := cat(dst, s, opts, files); err != nil {
			if !isDamage(err) {
				dst.Close()
				return fmt.Errorf("%s: %w", names[i], err)
			}
			errs = append(errs, fmt.Errorf("%s: %w (merged up to the damage)", names[i], err))
		}
		if err := merge.add(files); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (merged up to the damage)", names[i], err))
		}
	}
	if err := merge.write(dst, FrameHeader{CPU: -1, PID: -1, Time: end}); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	if errs != nil {
		return errs
	}
	return nil
}

// isDamage reports whether err, from reading a capture, says the capture
// is damaged (malformed or cut short) rather than unreadable.
func isDamage(err error) bool {
	_, ok := errors.AsType[*FormatError](err)
	return ok || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// catErrors are the damaged inputs of a merge, in order, on one line.
type catErrors []error

func (e catErrors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return fmt.Sprintf("%d damaged input(s): %s", len(e), strings.Join(s, "; "))
}

func (e catErrors) Unwrap() []error { return e }

// timeRange returns the start and end of the capture in s, the end being
// the latest of the header's end and the frames' times (frames up to any
// damage), and seeks s back.
func timeRange(s io.ReadSeeker) (start, end int64, err error) {
	pos, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, 0, err
	}
	r, err := NewReaderWithOptions(s, ReaderOptions{AllowUnknown: true})
	if err != nil {
		return 0, 0, err
	}
	h := r.Header()
	start, end = h.StartTime, h.EndTime
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		t := f.Head().Time
		if m, ok := f.(*Mark); ok {
			t = m.End()
		}
		end = max(end, t)
	}
	_, err = s.Seek(pos, io.SeekStart)
	return start, end, err
}
