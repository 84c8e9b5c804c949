package analyze

import (
	"fmt"
	"strconv"

	"nsprof/capture"
)

// BlockingType is the time of the system calls a recording with
// --blocking wrote (each a mark of group capture.BlockingGroup, longer
// than its threshold), weighed on the stack of the calling thread at
// entry, whose leaf frame names the call ("[syscall: read]"); 0 for any
// other sample. It comes after the off-CPU columns.
var BlockingType = ValueType{"blocking", "nanoseconds"}

// blockingStats are what the recording says of its blocking calls, and
// the marks that give their durations.
type blockingStats struct {
	recorded        bool
	calls, unpaired int64
	// marks are the durations of the marks of blocking calls, by
	// process, time and marker name, in file order.
	marks map[blockingKey][]int64
	// noMark counts the blocking samples without a mark.
	noMark int
}

type blockingKey struct {
	pid  int32
	time int64
	name string
}

// blockingMeta takes the METADATA frames of a --blocking recording.
func (b *builder) blockingMeta(id, value string) {
	s := &b.blockStats
	switch id {
	case capture.MetaBlocking:
		s.recorded = true
	case capture.MetaBlockingCalls:
		s.calls, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaBlockingUnpaired:
		s.unpaired, _ = strconv.ParseInt(value, 10, 64)
	default:
		b.callsMeta(id, value)
	}
}

// blockingMark keeps the duration of a MARK frame of a blocking call.
func (b *builder) blockingMark(m *capture.Mark) {
	if m.Group != capture.BlockingGroup {
		return
	}
	s := &b.blockStats
	if s.marks == nil {
		s.marks = make(map[blockingKey][]int64)
	}
	k := blockingKey{m.PID, m.Time, capture.BlockingMarker(m.Name)}
	s.marks[k] = append(s.marks[k], m.Duration)
}

// blockingDurations returns the duration of each sample that is a
// blocking call, by index in p.Samples (nil when there is none): the
// samples whose leaf frame is a blocking marker, matched by process,
// time and name with the marks.
func (b *builder) blockingDurations() map[int32]int64 {
	p := b.p
	markers := make(map[uint64]string)
	for a, name := range p.JIT {
		if _, ok := capture.BlockingMarkerCall(name); ok {
			markers[a] = name
		}
	}
	if len(markers) == 0 {
		return nil
	}
	s := &b.blockStats
	out := make(map[int32]int64)
	for i := range p.Samples {
		smp := &p.Samples[i]
		st := p.Stack(smp.Stack)
		if len(st) == 0 || b.frameKeys[st[0]].Kernel {
			continue
		}
		name, ok := markers[b.frameKeys[st[0]].Addr]
		if !ok {
			continue
		}
		k := blockingKey{smp.PID, smp.Time, name}
		if d := s.marks[k]; len(d) > 0 {
			out[int32(i)] = d[0]
			s.marks[k] = d[1:]
		} else {
			s.noMark++
			out[int32(i)] = 0
		}
	}
	if s.noMark > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("blocking calls: %d stacks of blocking calls have no mark (not counted)", s.noMark))
	}
	if s.unpaired > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("blocking calls: the recording lost one side of %d system calls (those calls are not counted)", s.unpaired))
	}
	s.marks = nil
	return out
}

// BlockingLost returns the system calls the recording could not pair
// into a call (not counted), and whether the capture recorded blocking
// calls at all.
func (p *Profile) BlockingLost() (int64, bool) {
	return p.blockStats.unpaired, p.blockStats.recorded
}
