package analyze

import (
	"bytes"
	"strings"
	"testing"

	"nsprof/capture"
)

// TestBlockingValues: the entry stack of a blocking call weighs its
// mark's duration in the blocking column, and nothing in the others;
// marks are matched by process, time and call, also two at the same
// time; a stack without its mark counts 0 with a warning; a CPU sample
// counts nothing there.
func TestBlockingValues(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	read, err := w.AddJITMap(capture.BlockingMarker("read"))
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := w.AddJITMap(capture.BlockingMarker("clock_nanosleep"))
	if err != nil {
		t.Fatal(err)
	}
	sample := func(pid, tid int32, time int64, addrs ...uint64) {
		if err := w.AddSample(time, 0, pid, tid, addrs); err != nil {
			t.Fatal(err)
		}
	}
	mark := func(pid int32, time, d int64, name string) {
		if err := w.AddMark(time, pid, d, capture.BlockingGroup, name, "fd 3"); err != nil {
			t.Fatal(err)
		}
	}
	sample(10, 10, 100, capture.ContextUser, read, 0x401000)
	sample(10, 11, 100, capture.ContextUser, read, 0x401100)  // same process and time
	sample(10, 10, 200, capture.ContextUser, sleep, 0x402000) // no mark
	sample(10, 10, 300, capture.ContextUser, 0x403000)        // a CPU sample
	mark(10, 100, 7e6, "read")
	mark(10, 100, 9e6, "read")
	mark(10, 300, 5e6, "clock_nanosleep") // another time: not this sample's
	if err := w.AddMetadata(1, capture.MetaBlockingUnpaired, "2"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	col, err := p.ValueIndex("blocking")
	if err != nil {
		t.Fatal(err)
	}
	var got [4]int64
	for i := range p.Samples {
		s := &p.Samples[i]
		for c := range p.SampleTypes {
			if v := p.Value(s, c); c != col && i < 3 && v != 0 {
				t.Errorf("sample %d: %d in %s, want 0", i, v, p.SampleTypes[c].Type)
			}
		}
		got[i] = p.Value(s, col)
	}
	if got != [4]int64{7e6, 9e6, 0, 0} {
		t.Errorf("blocking values %v, want [7e6 9e6 0 0]", got)
	}
	if p.Value(&p.Samples[3], 0) != 1 {
		t.Errorf("the CPU sample counts %d samples", p.Value(&p.Samples[3], 0))
	}
	if n, ok := p.BlockingLost(); n != 2 || ok {
		t.Errorf("BlockingLost() = %d, %v; want 2, false (no nsprof.blocking key)", n, ok)
	}
	if len(p.Warnings) != 2 {
		t.Errorf("warnings %q, want the stack without a mark and the lost halves", p.Warnings)
	}
	// The marks view (the timeline) warns of the lost halves too.
	tl, err := LoadTimeline(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Warnings) != 1 || !strings.Contains(tl.Warnings[0], "lost one side of 2 system calls") {
		t.Errorf("timeline warnings %q, want the lost halves", tl.Warnings)
	}
	if len(tl.Marks) != 3 {
		t.Errorf("timeline: %d marks, want 3", len(tl.Marks))
	}
}
