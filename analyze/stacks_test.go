package analyze

import (
	"bytes"
	"testing"

	"nsprof/capture"
)

// TestStacksFile: the records of capture.StacksFile load as samples
// after the SAMPLE frames', weighed by their off-CPU records and their
// blocking marks, counting no stack sample; a record cut short is
// warned of, the records before it kept.
func TestStacksFile(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	off, err := w.AddJITMap(capture.OffCPUMarker('S'))
	if err != nil {
		t.Fatal(err)
	}
	read, err := w.AddJITMap(capture.BlockingMarker("read"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddSample(100, 0, 10, 10, []uint64{capture.ContextUser, 0x401000}); err != nil {
		t.Fatal(err)
	}
	var stacks []byte
	stacks = capture.AppendStack(stacks, capture.StackRecord{Time: 200, PID: 10, TID: 11, CPU: 1, Addrs: []uint64{capture.ContextUser, off, 0x402000}})
	stacks = capture.AppendStack(stacks, capture.StackRecord{Time: 300, PID: 10, TID: 10, Addrs: []uint64{capture.ContextUser, read, 0x403000}})
	whole := len(stacks)
	stacks = capture.AppendStack(stacks, capture.StackRecord{Time: 400, PID: 10, TID: 10, Addrs: []uint64{capture.ContextUser, off, 0x404000}})
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: 500}
	if err := w.AddFileChunk(h, capture.StacksFile, stacks[:len(stacks)-8], true); err != nil {
		t.Fatal(err)
	}
	offRecs := capture.AppendOffCPU(nil, capture.OffCPU{TID: 11, Time: 200, Duration: 7e6, State: 'S'})
	if err := w.AddFileChunk(h, capture.OffCPUFile, offRecs, true); err != nil {
		t.Fatal(err)
	}
	if err := w.AddMark(300, 10, 9e6, capture.BlockingGroup, "read", "fd 3"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 3 {
		t.Fatalf("%d samples, want 3 (a SAMPLE frame and %d bytes of whole records)", len(p.Samples), whole)
	}
	checkRows(t, p)
	cols := map[string]int{}
	for i, ty := range p.SampleTypes {
		cols[ty.Type] = i
	}
	want := []struct {
		tid                      int32
		samples, offCPU, blocked int64
	}{{10, 1, 0, 0}, {11, 0, 7e6, 0}, {10, 0, 0, 9e6}}
	for i, w := range want {
		s := &p.Samples[i]
		got := [3]int64{p.Value(s, cols["samples"]), p.Value(s, cols["off_cpu"]), p.Value(s, cols["blocking"])}
		if s.TID != w.tid || got != [3]int64{w.samples, w.offCPU, w.blocked} {
			t.Errorf("sample %d: thread %d, samples/off_cpu/blocking %v; want thread %d, %v", i, s.TID, got, w.tid, [3]int64{w.samples, w.offCPU, w.blocked})
		}
	}
	if p.Samples[1].CPU != 1 || p.Samples[1].Time != 200 {
		t.Errorf("off-CPU sample: cpu %d time %d, want 1 and 200", p.Samples[1].CPU, p.Samples[1].Time)
	}
	warned := false
	for _, m := range p.Warnings {
		warned = warned || bytes.Contains([]byte(m), []byte(capture.StacksFile))
	}
	if !warned {
		t.Errorf("no warning of the record cut short: %q", p.Warnings)
	}
}
