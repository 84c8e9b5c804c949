package analyze

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ValueType describes one column of the per-sample values, as a pprof
// sample type does: what is counted and in which unit.
type ValueType struct {
	// Type names the value: "samples", "cpu", "off_cpu", "wall", "blocking",
	// "alloc_objects", "alloc_space", "inuse_objects", "inuse_space",
	// "temp_objects" or "temp_space" today.
	Type string `json:"type"`
	// Unit is "count", "bytes" or "nanoseconds".
	Unit string `json:"unit"`
}

// The sample types [Load] gives a profile. Every profile has
// [SamplesType] at index 0, then [CPUType] when the sampling period is
// known; a capture with off-CPU time then has [OffCPUType], and
// [WallType] when the period is known; a capture with blocking calls
// then has [BlockingType]; a capture with ALLOCATION frames
// also has the six allocation types: the four of a Go heap profile, in
// its order, then the two temporary ones.
var (
	// SamplesType counts the stack samples (SAMPLE frames).
	SamplesType = ValueType{"samples", "count"}
	// CPUType is the CPU time the stack samples stand for: the sampling
	// period of a recording of the cpu-clock or task-clock event at a
	// known frequency (1e9/Hz ns a sample), as a Go CPU profile's "cpu".
	CPUType = ValueType{"cpu", "nanoseconds"}
	// AllocObjectsType counts the blocks allocated (an estimate in a
	// sampled recording, rounded per allocation).
	AllocObjectsType = ValueType{"alloc_objects", "count"}
	// AllocSpaceType is the bytes allocated.
	AllocSpaceType = ValueType{"alloc_space", "bytes"}
	// InuseObjectsType counts the blocks allocated while recording and
	// still live at its end.
	InuseObjectsType = ValueType{"inuse_objects", "count"}
	// InuseSpaceType is the bytes of those blocks.
	InuseSpaceType = ValueType{"inuse_space", "bytes"}
	// TempObjectsType counts the temporary blocks: freed by the thread
	// that allocated them before it allocated anything else (heaptrack's
	// definition).
	TempObjectsType = ValueType{"temp_objects", "count"}
	// TempSpaceType is the bytes of those blocks.
	TempSpaceType = ValueType{"temp_space", "bytes"}
)

// allocTypes are the allocation columns, after the stack samples' ones;
// fillValues writes them in this order.
var allocTypes = []ValueType{AllocObjectsType, AllocSpaceType, InuseObjectsType, InuseSpaceType, TempObjectsType, TempSpaceType}

// AllocTypes returns the sample types of allocations, in the order a
// profile with allocations has them.
func AllocTypes() []ValueType { return slices.Clone(allocTypes) }

// IsAllocType reports whether name names a sample type of allocations.
func IsAllocType(name string) bool {
	return slices.ContainsFunc(allocTypes, func(t ValueType) bool { return t.Type == name })
}

// Value returns the value of column t (an index in p.SampleTypes) of
// sample s.
func (p *Profile) Value(s *Sample, t int) int64 {
	if p.values == nil {
		return p.stackValues[t] // stack samples only: the same values each
	}
	return p.values[int(s.Row)*len(p.SampleTypes)+t]
}

// Kind returns the sample types measured together with type t, as one
// pprof profile carries them: the stack samples' (samples, and cpu when
// known), the off-CPU time's, the wall-clock time's, or the
// allocations' (the four allocation types).
func (p *Profile) Kind(t int) []int {
	var out []int
	for i := range p.SampleTypes {
		if p.kindOf(i) == p.kindOf(t) {
			out = append(out, i)
		}
	}
	return out
}

// Kinds of measurement, by column ([Profile.Kind]).
const (
	kindStack = iota
	kindOffCPU
	kindWall
	kindAlloc
	kindBlocking
	kindCalls
)

// kindOf returns the kind of measurement of column t.
func (p *Profile) kindOf(t int) int {
	if t >= 0 && t < len(p.kinds) {
		return p.kinds[t]
	}
	if p.allocCol > 0 && t >= p.allocCol {
		return kindAlloc
	}
	return kindStack
}

// ValueIndex returns the index in p.SampleTypes of the sample type named
// name ("samples", "alloc_space", ...), or an error listing the profile's
// types. "" is the default, 0.
func (p *Profile) ValueIndex(name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	for i, t := range p.SampleTypes {
		if t.Type == name {
			return i, nil
		}
	}
	names := make([]string, len(p.SampleTypes))
	for i, t := range p.SampleTypes {
		names[i] = t.Type
	}
	return 0, fmt.Errorf("sample type %q: the capture has %s", name, strings.Join(names, ", "))
}

// Selected returns the index in p.SampleTypes of the value the views of
// p weigh stacks by: [ViewOptions.Value] for a view's profile, else 0.
func (p *Profile) Selected() int { return p.value }

// Weight returns the sum of the selected value ([Profile.Selected]) over
// samples.
func (p *Profile) Weight(samples []Sample) int64 {
	if p.counted() {
		return int64(len(samples))
	}
	var n int64
	for i := range samples {
		n += p.Value(&samples[i], p.value)
	}
	return n
}

// allocEvent is one ALLOCATION frame, kept for matching frees to
// allocations once every frame is read.
type allocEvent struct {
	time     int64
	addr     uint64
	size     int64
	pid, tid int32
	sample   int32 // index in Profile.Samples; -1 for a free
}

// fillValues builds the value table of p once its samples are complete:
// 1 in the samples column for a SAMPLE frame, and for an allocation the
// objects and bytes it allocated, those still live at the end (its
// block never freed) and those that were temporary. allocs are the ALLOCATION frames in file order,
// which fillValues sorts by time;
// sampleBytes is the recording's sampling interval (0: every allocation);
// periodNs the CPU time a stack sample stands for (0: unknown).
func (p *Profile) fillValues(allocs []allocEvent, sampleBytes, periodNs int64, offCPU, blocking map[int32]int64) {
	p.SampleTypes = []ValueType{SamplesType}
	p.stackValues = []int64{1}
	p.kinds = []int{kindStack}
	if periodNs > 0 {
		p.SampleTypes = append(p.SampleTypes, CPUType)
		p.stackValues = append(p.stackValues, periodNs)
		p.kinds = append(p.kinds, kindStack)
	}
	offCol, wallCol := -1, -1
	if len(offCPU) > 0 {
		offCol = len(p.SampleTypes)
		p.SampleTypes = append(p.SampleTypes, OffCPUType)
		p.stackValues = append(p.stackValues, 0)
		p.kinds = append(p.kinds, kindOffCPU)
		if periodNs > 0 {
			wallCol = len(p.SampleTypes)
			p.SampleTypes = append(p.SampleTypes, WallType)
			p.stackValues = append(p.stackValues, periodNs)
			p.kinds = append(p.kinds, kindWall)
		}
	}
	blockCol := -1
	if len(blocking) > 0 {
		blockCol = len(p.SampleTypes)
		p.SampleTypes = append(p.SampleTypes, BlockingType)
		p.stackValues = append(p.stackValues, 0)
		p.kinds = append(p.kinds, kindBlocking)
	}
	if len(allocs) > 0 {
		p.allocCol = len(p.SampleTypes)
		p.SampleTypes = append(p.SampleTypes, allocTypes...)
		p.stackValues = append(p.stackValues, make([]int64, len(allocTypes))...)
		for range allocTypes {
			p.kinds = append(p.kinds, kindAlloc)
		}
	}
	p.unitSamples = len(allocs) == 0 && len(offCPU) == 0 && len(blocking) == 0
	for i := range p.Samples {
		p.Samples[i].Row = int32(i)
	}
	if p.unitSamples {
		return // every sample has stackValues: no table (see Value)
	}
	n := len(p.SampleTypes)
	p.values = make([]int64, len(p.Samples)*n)
	isAlloc := make([]bool, len(p.Samples))
	for _, e := range allocs {
		if e.sample >= 0 {
			isAlloc[e.sample] = true
		}
	}
	for i := range p.Samples {
		if !isAlloc[i] {
			copy(p.values[i*n:], p.stackValues)
		}
	}
	// An off-CPU interval counts its time only: no sample, no CPU time.
	for i, d := range offCPU {
		row := p.values[int(i)*n : int(i+1)*n]
		clear(row)
		row[offCol] = d
		if wallCol >= 0 {
			row[wallCol] = d
		}
	}
	// So does a blocking call: its stack at entry weighs its duration.
	for i, d := range blocking {
		row := p.values[int(i)*n : int(i+1)*n]
		clear(row)
		row[blockCol] = d
	}
	a := p.allocCol
	sortByTime(allocs)
	objectsOf := make(map[int64]int64)
	objects := func(size int64) int64 {
		if sampleBytes <= 0 {
			return 1
		}
		o, ok := objectsOf[size]
		if !ok {
			o = int64(math.Round(sampledObjects(size, sampleBytes)))
			objectsOf[size] = o
		}
		return o
	}
	live := make(map[pidAddr]int32)      // block -> sample
	lastAlloc := make(map[int32]pidAddr) // thread -> its last block
	for _, e := range allocs {
		k := pidAddr{e.pid, e.addr}
		if e.sample < 0 {
			s, ok := live[k]
			if !ok {
				continue // allocated before the recording
			}
			delete(live, k)
			if last, ok := lastAlloc[e.tid]; ok && last == k {
				row := p.values[int(s)*n+a:]
				row[4], row[5] = row[0], row[1]
			}
			delete(lastAlloc, e.tid)
			continue
		}
		row := p.values[int(e.sample)*n+a:]
		row[0], row[1] = objects(e.size), e.size
		live[k] = e.sample // replaces a block whose free was not seen
		lastAlloc[e.tid] = k
	}
	for _, s := range live {
		row := p.values[int(s)*n+a:]
		row[2], row[3] = row[0], row[1]
	}
}

// fillCalls adds the columns of instrumented calls to the value table:
// calls, and call_time and call_self_time when timed, for the samples of
// calls (by index in p.Samples, from callSamples), zero elsewhere; the
// samples of calls get zero in every other column. Nothing when calls is
// empty.
func (p *Profile) fillCalls(calls map[int32][3]int64, timed bool) {
	if len(calls) == 0 {
		return
	}
	types := []ValueType{CallsType}
	if timed {
		types = append(types, CallTimeType, CallSelfTimeType)
	}
	old := len(p.SampleTypes)
	n := old + len(types)
	p.callCol = old
	p.SampleTypes = append(p.SampleTypes, types...)
	p.stackValues = append(p.stackValues, make([]int64, len(types))...)
	for range types {
		p.kinds = append(p.kinds, kindCalls)
	}
	p.unitSamples = false
	values := make([]int64, len(p.Samples)*n)
	for i := range p.Samples {
		if v, ok := calls[int32(i)]; ok {
			row := values[i*n+old : (i+1)*n]
			copy(row, v[:len(types)])
			continue
		}
		if p.values != nil {
			copy(values[i*n:], p.values[i*old:(i+1)*old])
		} else {
			copy(values[i*n:], p.stackValues[:old])
		}
	}
	p.values = values
}

// counted says the selected value is 1 for every sample: the number of
// samples of a profile without allocations.
func (p *Profile) counted() bool {
	return p.value == 0 && p.values == nil
}

// cpuPeriod returns the CPU time in ns one stack sample of a recording of
// event at freq Hz stands for, or 0 when the event does not count time
// or the frequency is unknown.
func cpuPeriod(event, freq string) int64 {
	if event != "cpu-clock" && event != "task-clock" {
		return 0
	}
	hz, err := strconv.ParseInt(freq, 10, 64)
	if err != nil || hz <= 0 || hz > 1e9 {
		return 0
	}
	return 1e9 / hz
}

// sortByTime sorts the allocation events by time, file order kept for
// equal times: rings are drained in turns, so frames are ordered per
// thread only.
func sortByTime(allocs []allocEvent) {
	slices.SortStableFunc(allocs, func(x, y allocEvent) int {
		switch {
		case x.time < y.time:
			return -1
		case x.time > y.time:
			return 1
		}
		return 0
	})
}
