package analyze

import (
	"fmt"
	"strconv"

	"nsprof/capture"
)

// The sample types of a capture with off-CPU time (nsprof record
// --off-cpu): they come after the stack samples' columns.
var (
	// OffCPUType is the time a thread spent off the CPU from the moment
	// it left with the sample's stack until it ran again; 0 for a CPU
	// sample. The stack's leaf frame names the task state it left in
	// ("[off-CPU: S sleeping]", "[off-CPU: D uninterruptible]",
	// "[off-CPU: R preempted]", ...).
	OffCPUType = ValueType{"off_cpu", "nanoseconds"}
	// WallType is on-CPU and off-CPU time together: a CPU sample's
	// period (as [CPUType]) or an off-CPU sample's time (as
	// [OffCPUType]), a wall-clock profile of the recorded threads. Only
	// when the sampling period is known.
	WallType = ValueType{"wall", "nanoseconds"}
)

// offCPUStats are what the recording says of its off-CPU time.
type offCPUStats struct {
	recorded                    bool
	intervals, unpaired, opened int64
	// bySample counts the intervals whose switch in was lost, ended at
	// the thread's next CPU sample (capture.MetaOffCPUBySample);
	// switchIns says where the switch-ins came from
	// (capture.MetaOffCPUSwitchIns).
	bySample  int64
	switchIns string
	// kernelReused counts the intervals whose kernel stack the
	// recorder's BPF program reused from an earlier switch out of the
	// thread at the same place, noKernel those it gave none; kernel
	// says the capture counts them (its kernel stacks came from the
	// program).
	kernelReused, noKernel int64
	kernel                 bool
	// noRecord counts the off-CPU samples without a record (a file
	// cut short).
	noRecord int
}

// offCPUMeta takes the METADATA frames of an off-CPU recording.
func (b *builder) offCPUMeta(id, value string) {
	s := &b.offStats
	switch id {
	case capture.MetaOffCPU:
		s.recorded = true
	case capture.MetaOffCPUIntervals:
		s.intervals, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaOffCPUUnpaired:
		s.unpaired, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaOffCPUOpen:
		s.opened, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaOffCPUBySample:
		s.bySample, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaOffCPUSwitchIns:
		s.switchIns = value
	case capture.MetaOffCPUKernelReused:
		s.kernel = true
		s.kernelReused, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaOffCPUNoKernel:
		s.noKernel, _ = strconv.ParseInt(value, 10, 64)
	default:
		b.blockingMeta(id, value)
	}
}

// offCPUDurations returns the off-CPU time of each sample that is an
// off-CPU interval, by index in p.Samples (nil when there is none): the
// samples whose leaf frame is an off-CPU marker, matched by thread and
// time with the records of [capture.OffCPUFile], which the recorder
// writes in the order of the samples.
func (b *builder) offCPUDurations() map[int32]int64 {
	p := b.p
	markers := make(map[uint64]bool)
	for a, name := range p.JIT {
		if capture.IsOffCPUMarker(name) {
			markers[a] = true
		}
	}
	if len(markers) == 0 {
		return nil
	}
	var recs []capture.OffCPU
	if b.files.has(capture.OffCPUFile) {
		data, err := b.files.lookup(capture.OffCPUFile)
		if err == nil {
			recs, err = capture.DecodeOffCPU(data)
		}
		if err != nil {
			p.Warnings = append(p.Warnings, fmt.Sprintf("off-CPU time: %v (using the %d intervals before)", err, len(recs)))
		}
	}
	isOff := make(map[StackID]bool)
	type key struct {
		tid  int32
		time int64
	}
	var byKey map[key]int64
	out := make(map[int32]int64)
	j := 0
	for i := range p.Samples {
		s := &p.Samples[i]
		off, ok := isOff[s.Stack]
		if !ok {
			st := p.Stack(s.Stack)
			off = len(st) > 0 && markers[b.frameKeys[st[0]].Addr] && !b.frameKeys[st[0]].Kernel
			isOff[s.Stack] = off
		}
		if !off {
			continue
		}
		if j < len(recs) && recs[j].TID == s.TID && recs[j].Time == s.Time {
			out[int32(i)] = recs[j].Duration
			j++
			continue
		}
		if byKey == nil { // out of order: merged captures
			byKey = make(map[key]int64, len(recs))
			for _, r := range recs {
				byKey[key{r.TID, r.Time}] = r.Duration
			}
		}
		if d, ok := byKey[key{s.TID, s.Time}]; ok {
			out[int32(i)] = d
		} else {
			b.offStats.noRecord++
			out[int32(i)] = 0
		}
	}
	if n := b.offStats.noRecord; n > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("off-CPU time: %d off-CPU samples have no duration in %s (not counted)", n, capture.OffCPUFile))
	}
	if n := b.offStats.unpaired; n > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("off-CPU time: the recording lost one side of %d context switches (their time is not counted)", n))
	}
	if n := b.offStats.bySample; n > 0 {
		w := fmt.Sprintf("off-CPU time: %d intervals lost their switch in and end at their thread's next CPU sample (within a sampling period)", n)
		if b.offStats.switchIns == capture.OffCPUSwitchInsBPF {
			w += "; " + capture.OffCPUUntracedHint
		}
		p.Warnings = append(p.Warnings, w)
	}
	if s := b.offStats; s.kernelReused > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("off-CPU time: %d of %d intervals have the kernel stack walked at an earlier switch out of their thread at the same place (walked afresh at least every %d)",
			s.kernelReused, s.intervals, capture.OffCPUKernelStackReuse))
	}
	if n := b.offStats.noKernel; n > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("off-CPU time: %d intervals have no kernel stack", n))
	}
	return out
}

// OffCPULost returns the context switches the recording could not pair
// into an off-CPU interval (their time is not counted), and whether the
// capture recorded off-CPU time at all.
func (p *Profile) OffCPULost() (int64, bool) {
	return p.offStats.unpaired, p.offStats.recorded
}

// OffCPUKernelReused returns the off-CPU intervals whose kernel stack
// was walked at an earlier switch out of their thread at the same place
// and reused (the recorder walks it afresh at least every
// [capture.OffCPUKernelStackReuse]), and whether the capture counts them
// (its kernel stacks came from the recorder's BPF program).
func (p *Profile) OffCPUKernelReused() (int64, bool) {
	return p.offStats.kernelReused, p.offStats.kernel
}

// onCPUKey is the key of the on-CPU samples' group in [GroupState].
const onCPUKey = "on-CPU"

// groupByState splits samples by [GroupState], largest weight first.
func (p *Profile) groupByState(samples []Sample) []Group {
	return p.groupByLeaf(samples, onCPUKey, func(fn *Function) string {
		if capture.IsOffCPUMarker(fn.Name) {
			return fn.Name
		}
		return onCPUKey
	})
}
