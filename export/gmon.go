package export

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"

	"nsprof/analyze"
	"nsprof/symbol"
)

// GmonOptions configure [Gmon].
type GmonOptions struct {
	// File is the shared library or executable to profile, opened from
	// Path: its program headers turn the file offsets of sampled
	// addresses into its link-time addresses, which gprof expects.
	// Required.
	File *symbol.File
	// Path names File in messages; its base name selects the capture's
	// mappings of it.
	Path string
	// Names are more base names of the file's mappings, such as the
	// target of the symbolic link Path is. A mapping with File's
	// build-id is its mapping whatever its name.
	Names []string
	// BinBytes is the bytes of code a histogram bin counts, rounded up
	// to a power of two. Default 4,
	// glibc's (HISTFRACTION 2 with 2-byte bins), so that no bin spans
	// two functions aligned to 4 bytes. It doubles until the bins of
	// the file's code are at most MaxBins.
	BinBytes uint64
	// MaxBins bounds the histogram. Default 1<<22 (8 MiB of bins).
	MaxBins int
}

func (o *GmonOptions) setDefaults() {
	if o.BinBytes == 0 {
		o.BinBytes = 4
	}
	// A power of two of at least 2: gprof counts code in 2-byte units,
	// and bins start at a multiple of their size.
	b := uint64(2)
	for b < o.BinBytes && b < 1<<32 {
		b *= 2
	}
	o.BinBytes = b
	if o.MaxBins <= 0 {
		o.MaxBins = 1 << 22
	}
}

// GmonStats say what [Gmon] wrote and what it could not.
type GmonStats struct {
	// Low and High bound the histogram; BinBytes is the code a bin
	// counts; Rate is its prof_rate, the samples per second.
	Low, High, BinBytes uint64
	Bins                int
	Rate                int64
	// Samples counts the CPU samples in the histogram: those whose
	// innermost user frame is in the file. Outside counts those in a
	// mapping of the file at an offset no executable segment of it
	// loads: lost.
	Samples, Outside int64
	// Arcs and Calls count the call arcs written and their calls.
	Arcs, Calls int64
	// ForeignArcs and ForeignCalls count the calls into the file from
	// call sites outside it, not written: gprof keeps no arc whose call
	// site is not a function of the file (as glibc's mcount records
	// none), and shows such callees as <spontaneous>.
	ForeignArcs, ForeignCalls int64
	// Processes counts the processes whose samples or calls are
	// written.
	Processes int
	// Mismatched lists the mappings named as the file whose build-id is
	// another ("pid 12: /usr/lib/libx.so build-id ab12..."), and
	// MismatchedSamples and MismatchedCalls what they hold: left out.
	Mismatched                         []string
	MismatchedSamples, MismatchedCalls int64
}

// ErrGmonBuildID is wrapped by the error of [Gmon] when the capture maps
// the file only with other build-ids.
var ErrGmonBuildID = errors.New("build-id mismatch")

// Gmon writes a gmon.out for one file of the view's processes, shared
// library or executable, in that file's link-time addresses, so that
// an unpatched `gprof FILE gmon.out` names its functions wherever the
// file was loaded: a histogram of the CPU samples whose innermost user
// frame is in the file (a kernel frame counts for the user frame below
// it, as a profiling timer's tick does), at the recording's sampling
// frequency as prof_rate, and the call arcs of record --calls whose
// callee and call site are both in the file. Every process mapping the
// file adds to the same gmon.out, as `gprof -s` sums runs.
//
// It fails when the capture does not state its sampling frequency, and
// when it maps the file only with another build-id than o.File's
// (wrapping [ErrGmonBuildID]).
func Gmon(w io.Writer, v *analyze.View, o GmonOptions) (*GmonStats, error) {
	o.setDefaults()
	if o.File == nil {
		return nil, errors.New("gmon.out: no file to profile")
	}
	low, high, ok := o.File.ExecRange()
	if !ok {
		return nil, fmt.Errorf("%s: no executable segment", o.Path)
	}
	st := &GmonStats{Rate: v.Frequency, BinBytes: o.BinBytes}
	if st.Rate <= 0 || st.Rate > math.MaxUint32 {
		return nil, errors.New("the capture does not state its sampling frequency (nsprof.frequency), which gmon.out needs as the histogram's rate")
	}
	low &^= st.BinBytes - 1
	for (high-low+st.BinBytes-1)/st.BinBytes > uint64(o.MaxBins) {
		st.BinBytes *= 2
		low &^= st.BinBytes - 1
	}
	nbins := (high - low + st.BinBytes - 1) / st.BinBytes
	order, ok := o.File.ByteOrder().(binary.AppendByteOrder)
	if !ok {
		return nil, fmt.Errorf("%s: byte order %v", o.Path, o.File.ByteOrder())
	}
	g := &gmonFile{
		AddrSize: o.File.AddrSize(), Order: order,
		Low: low, BinBytes: st.BinBytes, Bins: make([]uint64, nbins), Rate: uint32(st.Rate),
	}
	st.Low, st.High, st.Bins = g.Low, g.High(), len(g.Bins)

	m := newGmonMapper(v, o)
	callCol, err := v.ValueIndex(analyze.CallsType.Type)
	if err != nil {
		callCol = -1 // a capture without --calls: the histogram only
	}
	arcs := make(map[[2]uint64]uint64)
	pids := make(map[int32]bool)
	for i := range v.Samples {
		s := &v.Samples[i]
		stack := v.Stack(s.Stack)
		if len(stack) == 0 {
			continue
		}
		if callCol > 0 {
			if n := v.Value(s, callCol); n > 0 {
				if m.arc(stack, n, arcs, st) {
					pids[s.PID] = true
				}
				continue
			}
		}
		if v.Value(s, 0) <= 0 {
			continue // not a CPU sample (off-CPU time, an allocation)
		}
		fr := innermostUser(v, stack)
		if fr == nil {
			continue
		}
		addr, in := m.vaddr(fr, st, 1)
		if !in {
			continue
		}
		pids[s.PID] = true // a frame stands for its code in every process
		if addr < g.Low || addr >= g.High() {
			st.Outside++
			continue
		}
		g.Bins[(addr-g.Low)/g.BinBytes]++
		st.Samples++
	}
	if len(m.mismatched) > 0 && !m.matched {
		return nil, fmt.Errorf("%s: %w: the capture maps it only as another file: %s", o.Path, ErrGmonBuildID, strings.Join(m.mismatched, "; "))
	}
	st.Mismatched, st.Processes = m.mismatched, len(pids)
	for k, n := range arcs {
		g.Arcs = append(g.Arcs, gmonArc{From: k[0], Self: k[1], Count: n})
	}
	slices.SortFunc(g.Arcs, func(a, b gmonArc) int {
		return cmp.Or(cmp.Compare(a.Self, b.Self), cmp.Compare(a.From, b.From))
	})
	st.Arcs = int64(len(g.Arcs))
	if err := g.write(w); err != nil {
		return nil, fmt.Errorf("writing gmon.out: %w", err)
	}
	return st, nil
}

// innermostUser returns the first user frame of stack (leaf first), or
// nil.
func innermostUser(v *analyze.View, stack []analyze.FrameID) *analyze.Frame {
	for _, id := range stack {
		if fr := &v.Frames[id]; !fr.Kernel {
			return fr
		}
	}
	return nil
}

// gmonMapper turns the addresses of frames into link-time addresses of
// the profiled file.
type gmonMapper struct {
	v       *analyze.View
	o       GmonOptions
	buildID string
	// verdicts are by mapping (process and start): whether it maps the
	// file, or another of its name.
	verdicts map[gmonMapKey]gmonVerdict
	// matched says some mapping is the file; mismatched names those of
	// another build-id.
	matched    bool
	mismatched []string
}

type gmonMapKey struct {
	pid   int32
	start uint64
}

type gmonVerdict int8

const (
	gmonOther gmonVerdict = iota
	gmonMatch
	gmonMismatch
)

func newGmonMapper(v *analyze.View, o GmonOptions) *gmonMapper {
	return &gmonMapper{v: v, o: o, buildID: hex.EncodeToString(o.File.BuildID()), verdicts: make(map[gmonMapKey]gmonVerdict)}
}

// verdict says whether mapping mp of process pid maps the file.
func (m *gmonMapper) verdict(pid int32, mp *analyze.Mapping) gmonVerdict {
	k := gmonMapKey{pid, mp.Start}
	if vd, ok := m.verdicts[k]; ok {
		return vd
	}
	vd := gmonOther
	named := false
	if mp.IsFile() {
		base := path.Base(strings.TrimSuffix(mp.File, " (deleted)"))
		named = base == path.Base(m.o.Path) || slices.Contains(m.o.Names, base)
	}
	switch {
	case mp.BuildID != "" && m.buildID != "" && strings.EqualFold(mp.BuildID, m.buildID):
		vd = gmonMatch
	case named && mp.BuildID != "" && !strings.EqualFold(mp.BuildID, m.buildID):
		vd = gmonMismatch
		id := m.buildID
		if id == "" {
			id = "none"
		}
		m.mismatched = append(m.mismatched, fmt.Sprintf("pid %d: %s build-id %s, not %s", pid, mp.File, mp.BuildID, id))
	case named:
		vd = gmonMatch // the capture has no build-id to check
	}
	if vd == gmonMatch {
		m.matched = true
	}
	m.verdicts[k] = vd
	return vd
}

// vaddr returns the link-time address of fr in the file, and whether fr
// is in a mapping of it. A return address (a caller's frame) stands for
// its call, the byte before. samples is what fr stands for, counted in
// st when its mapping is of another build-id.
func (m *gmonMapper) vaddr(fr *analyze.Frame, st *GmonStats, samples int64) (uint64, bool) {
	mp := m.v.Mapping(fr.PID, fr.Addr)
	if mp == nil {
		return 0, false
	}
	switch m.verdict(fr.PID, mp) {
	case gmonOther:
		return 0, false
	case gmonMismatch:
		st.MismatchedSamples += samples
		return 0, false
	}
	addr := fr.Addr
	if fr.Caller && addr > mp.Start {
		addr--
	}
	off := addr - mp.Start + mp.Offset
	va, ok := m.o.File.Vaddr(off)
	if !ok {
		return math.MaxUint64, true // in the mapping, but loaded from no segment: outside the code
	}
	if fr.Caller {
		va++ // gprof reads call sites as return addresses, as mcount records them
	}
	return va, true
}

// arc adds the n calls of a calls sample's stack ([callee, call site])
// to arcs when both are in the file, and says whether it did.
func (m *gmonMapper) arc(stack []analyze.FrameID, n int64, arcs map[[2]uint64]uint64, st *GmonStats) bool {
	callee := &m.v.Frames[stack[0]]
	mp := m.v.Mapping(callee.PID, callee.Addr)
	if mp == nil {
		return false
	}
	switch m.verdict(callee.PID, mp) {
	case gmonOther:
		return false
	case gmonMismatch:
		st.MismatchedCalls += n
		return false
	}
	self, _ := m.vaddr(callee, st, 0)
	from, in := uint64(0), false
	if len(stack) > 1 {
		from, in = m.vaddr(&m.v.Frames[stack[1]], st, 0)
	}
	if !in || self == math.MaxUint64 || from == math.MaxUint64 {
		st.ForeignArcs++
		st.ForeignCalls += n
		return false
	}
	k := [2]uint64{from, self}
	arcs[k] += uint64(n)
	st.Calls += n
	return true
}
