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
	if p.rows == nil {
		return p.stackValues[t] // stack samples only: the same values each
	}
	return p.rows.value(p, int(s.Row), t)
}

// addValues adds the values of sample s to sums, one per column: what
// calling [Profile.Value] for each column adds, in one pass.
func (p *Profile) addValues(s *Sample, sums []int64) {
	if p.rows == nil {
		for t, v := range p.stackValues {
			sums[t] += v
		}
		return
	}
	p.rows.addRow(p, int(s.Row), sums)
}

// valueTable holds the samples' values by row ([Sample.Row]). A sample
// measures one thing, and has values in the columns of that measurement
// only: a stack sample those of [Profile.stackValues], an off-CPU
// interval its time (off_cpu and wall), a blocking call its duration,
// an allocation its bytes and objects (again as inuse or temp when it
// is), a call its count and times. So a row keeps its kind and at most
// three values: a table of every column for every row took 64 bytes a
// row of a --memprof capture, 128 MB for 2 M allocations.
type valueTable struct {
	// kind is each row's kind of measurement (rowStack...), with
	// rowLive and rowTemp for an allocation.
	kind []uint8
	// first, second and third are each row's values, nil when no row
	// has one: an off-CPU interval's or a blocking call's duration; an
	// allocation's bytes, then its objects in a sampled recording (one
	// otherwise); a call's count, total and self time.
	first, second, third []int64
}

// The kinds of rows of a [valueTable], and the flags of an allocation.
const (
	rowStack uint8 = iota
	rowOffCPU
	rowBlocking
	rowAlloc
	rowCall

	rowKind = 0x0f
	rowLive = 0x10 // an allocation live at the end: inuse
	rowTemp = 0x20 // a temporary allocation
)

// addRow adds the values of row r of p to sums, one per column.
func (vt *valueTable) addRow(p *Profile, r int, sums []int64) {
	k := vt.kind[r]
	switch k & rowKind {
	case rowStack:
		for t, v := range p.stackValues {
			sums[t] += v
		}
	case rowOffCPU:
		sums[p.offCol] += vt.first[r]
		if p.wallCol >= 0 {
			sums[p.wallCol] += vt.first[r]
		}
	case rowBlocking:
		sums[p.blockCol] += vt.first[r]
	case rowAlloc:
		a, bytes, objects := p.allocCol, vt.first[r], int64(1)
		if vt.second != nil {
			objects = vt.second[r]
		}
		sums[a] += objects
		sums[a+1] += bytes
		if k&rowLive != 0 {
			sums[a+2] += objects
			sums[a+3] += bytes
		}
		if k&rowTemp != 0 {
			sums[a+4] += objects
			sums[a+5] += bytes
		}
	case rowCall:
		c := p.callCol
		sums[c] += vt.first[r]
		if c+2 < len(sums) && vt.third != nil {
			sums[c+1] += vt.second[r]
			sums[c+2] += vt.third[r]
		}
	}
}

// value returns the value of column t of row r of p.
func (vt *valueTable) value(p *Profile, r, t int) int64 {
	k := vt.kind[r]
	switch k & rowKind {
	case rowStack:
		return p.stackValues[t]
	case rowOffCPU:
		if t == p.offCol || t == p.wallCol {
			return vt.first[r]
		}
	case rowBlocking:
		if t == p.blockCol {
			return vt.first[r]
		}
	case rowAlloc:
		j := t - p.allocCol
		switch {
		case j < 0 || j >= len(allocTypes):
			return 0
		case j >= 4 && k&rowTemp == 0, j >= 2 && j < 4 && k&rowLive == 0:
			return 0
		case j%2 == 1:
			return vt.first[r]
		case vt.second == nil:
			return 1
		}
		return vt.second[r]
	case rowCall:
		switch t - p.callCol {
		case 0:
			return vt.first[r]
		case 1:
			if vt.second != nil {
				return vt.second[r]
			}
		case 2:
			if vt.third != nil {
				return vt.third[r]
			}
		}
	}
	return 0
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
// block never freed) and those that were temporary, and the heap
// events the views replay. allocs are the ALLOCATION frames in file
// order, matched in time order (see [timeOrder]); sampleBytes is the
// recording's sampling interval (0: every allocation); periodNs the CPU
// time a stack sample stands for (0: unknown).
func (p *Profile) fillValues(allocs *allocEvents, sampleBytes, periodNs int64, offCPU, blocking map[int32]int64) {
	p.SampleTypes = []ValueType{SamplesType}
	p.stackValues = []int64{1}
	p.kinds = []int{kindStack}
	if periodNs > 0 {
		p.SampleTypes = append(p.SampleTypes, CPUType)
		p.stackValues = append(p.stackValues, periodNs)
		p.kinds = append(p.kinds, kindStack)
	}
	p.offCol, p.wallCol, p.blockCol = -1, -1, -1
	if len(offCPU) > 0 {
		p.offCol = len(p.SampleTypes)
		p.SampleTypes = append(p.SampleTypes, OffCPUType)
		p.stackValues = append(p.stackValues, 0)
		p.kinds = append(p.kinds, kindOffCPU)
		if periodNs > 0 {
			p.wallCol = len(p.SampleTypes)
			p.SampleTypes = append(p.SampleTypes, WallType)
			p.stackValues = append(p.stackValues, periodNs)
			p.kinds = append(p.kinds, kindWall)
		}
	}
	if len(blocking) > 0 {
		p.blockCol = len(p.SampleTypes)
		p.SampleTypes = append(p.SampleTypes, BlockingType)
		p.stackValues = append(p.stackValues, 0)
		p.kinds = append(p.kinds, kindBlocking)
	}
	if allocs.len() > 0 {
		p.allocCol = len(p.SampleTypes)
		p.SampleTypes = append(p.SampleTypes, allocTypes...)
		p.stackValues = append(p.stackValues, make([]int64, len(allocTypes))...)
		for range allocTypes {
			p.kinds = append(p.kinds, kindAlloc)
		}
	}
	p.unitSamples = allocs.len() == 0 && len(offCPU) == 0 && len(blocking) == 0
	for i := range p.Samples {
		p.Samples[i].Row = int32(i)
	}
	if p.unitSamples {
		return // every sample has stackValues: no table (see Value)
	}
	vt := &valueTable{kind: make([]uint8, len(p.Samples)), first: make([]int64, len(p.Samples))}
	p.rows = vt
	// An off-CPU interval counts its time only: no sample, no CPU time.
	for i, d := range offCPU {
		vt.kind[i], vt.first[i] = rowOffCPU, d
	}
	// So does a blocking call: its stack at entry weighs its duration.
	for i, d := range blocking {
		vt.kind[i], vt.first[i] = rowBlocking, d
	}
	if sampleBytes > 0 && allocs.len() > 0 {
		vt.second = make([]int64, len(p.Samples))
	}
	order := timeOrder(allocs)
	objectsOf := make(map[int64]int64)
	objects := func(size int64) int64 {
		o, ok := objectsOf[size]
		if !ok {
			o = int64(math.Round(sampledObjects(size, sampleBytes)))
			objectsOf[size] = o
		}
		return o
	}
	p.heap = newHeapEvents(allocs, p.Samples)
	// The live blocks, by process and address (maps of 64-bit keys, by
	// process: one map keyed by process and address hashed its 16 bytes
	// three times an event, an eighth of a 4 M-event report).
	live := make(map[int32]map[uint64]int32) // process -> block -> sample
	lastPID, lastLive := int32(-1), map[uint64]int32(nil)
	liveOf := func(pid int32) map[uint64]int32 {
		if pid != lastPID {
			lastPID, lastLive = pid, live[pid]
			if lastLive == nil {
				lastLive = make(map[uint64]int32)
				live[pid] = lastLive
			}
		}
		return lastLive
	}
	lastAlloc := make(map[int32]pidAddr) // thread -> its last block
	for j := range allocs.len() {
		i := j
		if order != nil {
			i = int(order[j])
		}
		e := allocs.at(i)
		blocks := liveOf(e.pid)
		if e.sample < 0 {
			s, ok := blocks[e.addr]
			if !ok {
				s = -1 // allocated before the recording
			} else {
				delete(blocks, e.addr)
				if last, ok := lastAlloc[e.tid]; ok && last == (pidAddr{e.pid, e.addr}) {
					vt.kind[s] |= rowTemp
				}
				delete(lastAlloc, e.tid)
			}
			p.heap.free(e, s, false)
			continue
		}
		vt.kind[e.sample], vt.first[e.sample] = rowAlloc, e.size
		if vt.second != nil {
			vt.second[e.sample] = objects(e.size)
		}
		if s, ok := blocks[e.addr]; ok {
			// The block's free was not seen, but it was freed
			// before its address was given again.
			p.heap.free(e, s, true)
		}
		p.heap.order = append(p.heap.order, e.sample)
		blocks[e.addr] = e.sample
		lastAlloc[e.tid] = pidAddr{e.pid, e.addr}
	}
	for _, blocks := range live {
		for _, s := range blocks {
			vt.kind[s] |= rowLive
		}
	}
}

// fillCalls adds the columns of instrumented calls: calls, and call_time
// and call_self_time when timed, for the samples of calls (by index in
// p.Samples, from callSamples), zero elsewhere; the samples of calls get
// zero in every other column. Nothing when calls is empty.
func (p *Profile) fillCalls(calls map[int32][3]int64, timed bool) {
	if len(calls) == 0 {
		return
	}
	types := []ValueType{CallsType}
	if timed {
		types = append(types, CallTimeType, CallSelfTimeType)
	}
	p.callCol = len(p.SampleTypes)
	p.SampleTypes = append(p.SampleTypes, types...)
	p.stackValues = append(p.stackValues, make([]int64, len(types))...)
	for range types {
		p.kinds = append(p.kinds, kindCalls)
	}
	p.unitSamples = false
	vt := p.rows
	if vt == nil {
		vt = &valueTable{kind: make([]uint8, len(p.Samples))}
		p.rows = vt
	}
	if vt.first == nil {
		vt.first = make([]int64, len(p.Samples))
	}
	if timed {
		if vt.second == nil {
			vt.second = make([]int64, len(p.Samples))
		}
		vt.third = make([]int64, len(p.Samples))
	}
	for i, v := range calls {
		vt.kind[i], vt.first[i] = rowCall, v[0]
		if timed {
			vt.second[i], vt.third[i] = v[1], v[2]
		}
	}
}

// counted says the selected value is 1 for every sample: the number of
// samples of a profile without allocations.
func (p *Profile) counted() bool {
	return p.value == 0 && p.rows == nil
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
