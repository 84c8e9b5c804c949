package record

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"nsprof/capture"
)

// TestTaskState: sched_switch's prev_state bits name the state a task
// left the CPU in.
func TestTaskState(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want byte
	}{
		{0, 'R'}, {0x100, 'R'}, {0x1, 'S'}, {0x2, 'D'}, {0x4, 'T'}, {0x8, 't'},
		{0x10, 'X'}, {0x20, 'Z'}, {0x40, 'P'}, {0x80, 'I'}, {0x101, 'S'},
	} {
		if got := taskState(tc.v); got != tc.want {
			t.Errorf("taskState(%#x) = %c, want %c", tc.v, got, tc.want)
		}
	}
}

// TestOffCPUPairing: switch outs and ins, read in any order within the
// horizon, pair into intervals; an out whose in was lost, an in whose
// out was lost and an event older than the thread's last interval are
// counted as unpaired, never paired with the wrong partner; a thread
// still off the CPU at the end is counted up to it, unless it exited.
func TestOffCPUPairing(t *testing.T) {
	const ms = 1_000_000
	r, w, buf := newTestRecorder(t)
	o := &offCPU{threads: make(map[int32]*switches), markNs: 2 * ms}
	out := func(tid int32, at int64, state byte) {
		o.latest = max(o.latest, at)
		o.add(r, tid, switchEvent{time: at, out: true, state: state, pid: 1, addrs: []uint64{0, 0, capture.ContextUser, 0x1000}})
	}
	in := func(tid int32, at int64) { o.switchIn(r, tid, at) }

	var b int64 = 1000 * ms // the current phase's start
	type iv struct {
		tid        int32
		start, dur int64
		state      byte
	}
	want := make(map[iv]bool)
	// next lets the horizon pass: what waited for a late partner is
	// settled, and the next phase starts after it.
	next := func() {
		o.latest = b + 2*offCPUHorizon
		o.sweep(r, false)
		b = o.latest + ms
	}

	in(10, b+1*ms) // off the CPU since before the recording: not a loss
	out(10, b+2*ms, 'S')
	in(10, b+5*ms)
	want[iv{10, b + 2*ms, 3 * ms, 'S'}] = true
	next()

	in(11, b+7*ms) // read before its out (another CPU's ring)
	out(11, b+6*ms, 'D')
	want[iv{11, b + 6*ms, 1 * ms, 'D'}] = true
	next()

	c := b
	out(10, b+8*ms, 'R') // its in was lost: unpaired 1
	out(10, b+9*ms, 'S')
	in(10, b+10*ms)
	want[iv{10, b + 9*ms, 1 * ms, 'S'}] = true
	next()
	out(10, c+9500*1000, 'S') // older than the thread's last interval: unpaired 2
	next()

	out(12, b+1*ms, 'S')
	in(12, b+2*ms)
	want[iv{12, b + 1*ms, 1 * ms, 'S'}] = true
	in(12, b+4*ms) // its out was lost: unpaired 3
	out(12, b+5*ms, 'S')
	in(12, b+6*ms)
	want[iv{12, b + 5*ms, 1 * ms, 'S'}] = true
	next()

	out(15, b+1*ms, 'S')
	o.ran(15, b+3*ms) // a CPU sample of it: back on a CPU, its in lost
	out(15, b+4*ms, 'R')
	in(15, b+5*ms)
	want[iv{15, b + 1*ms, 2 * ms, 'S'}] = true
	want[iv{15, b + 4*ms, 1 * ms, 'R'}] = true
	out(17, b+1*ms, 'S')
	out(17, b+3*ms, 'R')
	o.ran(17, b+4*ms) // after its next out: ends that one, at the end, not the first (unpaired 4)
	want[iv{17, b + 3*ms, 1 * ms, 'R'}] = true
	next()

	out(13, b+1*ms, 'X') // exited: never comes back
	out(14, b+2*ms, 'S') // still asleep at the end
	out(16, b+3*ms, 'S')
	o.ran(16, b+5*ms) // back on a CPU before the end, its in lost
	want[iv{16, b + 3*ms, 2 * ms, 'S'}] = true
	openAt := b + 2*ms
	o.sweep(r, true)
	o.flush(r, true)
	r.flushStacks(true)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}

	if o.unpaired != 4 || o.opened != 1 || o.bySample != 3 {
		t.Errorf("unpaired %d, open %d, ended at a sample %d; want 4, 1 and 3", o.unpaired, o.opened, o.bySample)
	}
	recs, err := capture.DecodeOffCPU(o.fileWritten(t, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	open := 0
	for _, rc := range recs {
		if rc.TID == 14 && rc.Time == openAt {
			open++
			continue
		}
		k := iv{rc.TID, rc.Time, rc.Duration, rc.State}
		if !want[k] {
			t.Errorf("unexpected interval %+v", k)
		}
		delete(want, k)
	}
	for k := range want {
		t.Errorf("missing interval %+v", k)
	}
	if open != 1 || int(o.intervals) != len(recs) {
		t.Errorf("%d records (%d open), %d intervals counted", len(recs), open, o.intervals)
	}
	checkOffCPUFrames(t, buf.Bytes(), recs, 2*ms, o.unmarked)
}

// checkOffCPUFrames checks the frames of a capture with the off-CPU
// intervals recs: no SAMPLE frame (Sysprof would count it as CPU time);
// a capture.StacksFile record per interval, of its thread and time, under
// its state's marker frame; a MARK frame of group capture.OffCPUGroup per
// interval at least markNs long, and unmarked the others.
func checkOffCPUFrames(t *testing.T, data []byte, recs []capture.OffCPU, markNs int64, unmarked uint64) {
	t.Helper()
	rd, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		tid  int32
		time int64
	}
	marks := make(map[key]*capture.Mark)
	var fs capture.Files
	jit := make(map[uint64]string)
	for {
		f, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch f := f.(type) {
		case *capture.Sample:
			t.Errorf("a SAMPLE frame of thread %d at %d: Sysprof counts it as a CPU sample", f.TID, f.Time)
		case *capture.Mark:
			var tid int32
			if _, err := fmt.Sscanf(f.Message, "tid %d", &tid); err != nil || f.Group != capture.OffCPUGroup {
				t.Errorf("mark %+v: want group %s and message \"tid N\"", f, capture.OffCPUGroup)
			}
			marks[key{tid, f.Time}] = f
		case *capture.FileChunk:
			fs.Add(f)
		case *capture.JITMap:
			for _, e := range f.Entries {
				jit[e.Addr] = e.Name
			}
		}
	}
	b, err := fs.Lookup(capture.StacksFile)
	if err != nil {
		t.Fatal(err)
	}
	var stacks []capture.StackRecord
	err = capture.DecodeStacks(b, func(r *capture.StackRecord) {
		c := *r
		c.Addrs = slices.Clone(r.Addrs)
		stacks = append(stacks, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stacks) != len(recs) {
		t.Fatalf("%d stacks, %d intervals", len(stacks), len(recs))
	}
	var short uint64
	for i, rc := range recs {
		st := stacks[i]
		if st.TID != rc.TID || st.Time != rc.Time || len(st.Addrs) < 2 || jit[st.Addrs[1]] != capture.OffCPUMarker(rc.State) {
			t.Errorf("stack %d: %+v (%q), want thread %d at %d under %s", i, st, jit[st.Addrs[min(1, len(st.Addrs)-1)]], rc.TID, rc.Time, capture.OffCPUMarker(rc.State))
		}
		m := marks[key{rc.TID, rc.Time}]
		switch {
		case rc.Duration < markNs:
			short++
			if m != nil {
				t.Errorf("interval %+v shorter than %d ns has a mark", rc, markNs)
			}
		case m == nil:
			t.Errorf("interval %+v has no mark", rc)
		case m.Duration != rc.Duration || m.Name != capture.OffCPUMarkName(rc.State) || m.PID != 1:
			t.Errorf("interval %+v: mark %+v", rc, m)
		}
		delete(marks, key{rc.TID, rc.Time})
	}
	for _, m := range marks {
		t.Errorf("mark %+v of no interval", m)
	}
	if short != unmarked {
		t.Errorf("%d intervals shorter than %d ns, %d counted unmarked", short, markNs, unmarked)
	}
}

// fileWritten returns the contents of the capture's off-CPU file.
func (o *offCPU) fileWritten(t *testing.T, data []byte) []byte {
	t.Helper()
	rd, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := capture.ReadFiles(rd)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fs.Lookup(capture.OffCPUFile)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOffCPUCut: at a cut of a split recording, a thread off the CPU has
// its interval cut in two, the part before the cut in the capture that
// ends there (counted as open in it), the rest in the next, from its
// start, under the same stack: its time is counted once, none lost. A
// thread that exited off the CPU is not carried, nor one sampled on a
// CPU since its switch out (its switch in lost: it ends there); intervals on either side
// of the cut stay whole, each in its own capture, with its own marker
// frames and marks.
func TestOffCPUCut(t *testing.T) {
	const ms = 1_000_000
	var buf1, buf2 bytes.Buffer
	w1, err := capture.NewWriter(&buf1)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{w: w1, opts: &Options{Log: io.Discard}, split: &splitState{n: 1}}
	o := &offCPU{threads: make(map[int32]*switches), markNs: 2 * ms}
	out := func(tid int32, at int64, state byte) {
		o.latest = max(o.latest, at)
		o.add(r, tid, switchEvent{time: at, out: true, state: state, pid: 1, addrs: []uint64{0, 0, capture.ContextUser, 0x1000 + uint64(tid)}})
	}
	in := func(tid int32, at int64) { o.switchIn(r, tid, at) }

	const b = 1000 * ms
	const cut = b + 10*ms
	out(20, b+1*ms, 'S') // asleep across the cut
	out(21, b+2*ms, 'S') // before it
	in(21, b+4*ms)
	out(22, b+3*ms, 'X') // exited
	out(24, b+5*ms, 'S')
	o.ran(24, b+7*ms) // back on a CPU before the cut, its in lost: not carried
	r.stopAt = cut
	o.cut(r)
	r.flushStacks(true)
	if err := w1.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(o.threads); n != 1 || o.threads[20] == nil {
		t.Errorf("threads carried across the cut: %d, want thread 20 only", n)
	}

	w2, err := capture.NewWriter(&buf2)
	if err != nil {
		t.Fatal(err)
	}
	r.w, r.stopAt = w2, 0
	in(20, cut-ms/2) // read late, from before the cut: not paired with the part carried
	in(20, cut+5*ms)
	out(23, cut+1*ms, 'S') // after it
	in(23, cut+2*ms)
	r.stopAt = cut + 20*ms
	o.sweep(r, true)
	o.endCapture(r)
	r.flushStacks(true)
	if err := w2.Flush(); err != nil {
		t.Fatal(err)
	}

	type iv struct {
		tid        int32
		start, dur int64
	}
	for i, c := range []struct {
		data     []byte
		want     []iv
		unmarked uint64
		meta     map[string]string
	}{
		{buf1.Bytes(), []iv{{21, b + 2*ms, 2 * ms}, {20, b + 1*ms, 9 * ms}, {24, b + 5*ms, 2 * ms}}, 0,
			map[string]string{capture.MetaOffCPUIntervals: "3", capture.MetaOffCPUOpen: "1", capture.MetaOffCPUUnpaired: "0", capture.MetaOffCPUBySample: "1"}},
		{buf2.Bytes(), []iv{{23, cut + 1*ms, 1 * ms}, {20, cut, 5 * ms}}, 1,
			map[string]string{capture.MetaOffCPUIntervals: "2", capture.MetaOffCPUOpen: "0", capture.MetaOffCPUUnpaired: "0", capture.MetaOffCPUBySample: "0"}},
	} {
		recs, err := capture.DecodeOffCPU(o.fileWritten(t, c.data))
		if err != nil {
			t.Fatal(err)
		}
		var got []iv
		for _, rc := range recs {
			got = append(got, iv{rc.TID, rc.Time, rc.Duration})
		}
		slices.SortFunc(got, func(x, y iv) int { return int(x.tid - y.tid) })
		slices.SortFunc(c.want, func(x, y iv) int { return int(x.tid - y.tid) })
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("capture %d: intervals %v, want %v", i+1, got, c.want)
		}
		checkOffCPUFrames(t, c.data, recs, 2*ms, c.unmarked)
		md := metadataOf(t, c.data)
		for k, v := range c.meta {
			if md[k] != v {
				t.Errorf("capture %d: metadata %s = %q, want %q", i+1, k, md[k], v)
			}
		}
	}
}

// metadataOf returns the METADATA frames of a capture, the last value of
// each id.
func metadataOf(t *testing.T, data []byte) map[string]string {
	t.Helper()
	rd, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	md := make(map[string]string)
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return md
		}
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := f.(*capture.Metadata); ok {
			md[m.ID] = m.Value
		}
	}
}

// newTestRecorder returns a recorder writing a capture to the returned
// buffer, with its writer, and logging nowhere.
func newTestRecorder(t *testing.T) (*recorder, *capture.Writer, *bytes.Buffer) {
	t.Helper()
	buf := new(bytes.Buffer)
	w, err := capture.NewWriter(buf)
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{w: w, opts: &Options{Log: io.Discard}}, w, buf
}

// TestOffCPUFinishSplit: the last capture of a split recording says its
// own count of context switches that lost their other half, as every
// capture before it did at its cut, before the sum over all of them.
func TestOffCPUFinishSplit(t *testing.T) {
	const ms = 1_000_000
	var buf, log bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{w: w, opts: &Options{Log: &log}, split: &splitState{n: 3}}
	o := &offCPU{threads: make(map[int32]*switches), markNs: 2 * ms, done: offCPUCounts{unpaired: 5}}
	const b = 1000 * ms
	o.add(r, 30, switchEvent{time: b + 1*ms, out: true, state: 'S', pid: 1, addrs: []uint64{0, 0, capture.ContextUser, 0x1000}})
	o.switchIn(r, 30, b+2*ms)
	o.switchIn(r, 30, b+4*ms) // its out was lost
	o.add(r, 30, switchEvent{time: b + 5*ms, out: true, state: 'S', pid: 1, addrs: []uint64{0, 0, capture.ContextUser, 0x1000}})
	o.switchIn(r, 30, b+6*ms)
	o.latest = b + 6*ms
	r.stopAt = b + 20*ms
	o.finish(r)
	got := log.String()
	for _, want := range []string{
		"nsprof: off-CPU: capture 3: 1 context switches lost their other half",
		"nsprof: off-CPU: 6 context switches lost their other half",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}
