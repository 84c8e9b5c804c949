package analyze

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"nsprof/capture"
)

// handoffCapture writes a capture of n samples of a few processes over a
// few thousand stacks, each sample's stack written twice in a row now and
// then, and an off-CPU stacks file of the records recs.
func handoffCapture(t *testing.T, n int, recs []capture.StackRecord) []byte {
	t.Helper()
	buf, w := appCapture(t, int64(n)+1)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < n; {
		pid := 100 + int32(r.IntN(4))
		addrs := []uint64{capture.ContextUser}
		for range 1 + r.IntN(6) {
			addrs = append(addrs, 0x400000+uint64(r.IntN(64))*16)
		}
		for range 1 + b2i(i%3 == 0) {
			must(t, w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pid, Time: testStart + int64(i)}, TID: pid, Addrs: addrs}))
			i++
		}
	}
	var stacks []byte
	for _, rec := range recs {
		stacks = capture.AppendStack(stacks, rec)
	}
	must(t, w.AddFileChunk(capture.FrameHeader{CPU: -1, PID: -1, Time: testStart + int64(n)}, capture.StacksFile, stacks, true))
	must(t, w.Close())
	return buf.Bytes()
}

// TestStackPipeHandoff: when the scout's sizes come part way through the
// reading, the frames of the stacks read before are added by the reader
// and those after by the pipe, and the stacks file's after the pipe
// stopped; every stack gets the id it gets without a pipe. The records of
// the stacks file repeat the stack interned last before the hand-off and
// the last sample's stack.
func TestStackPipeHandoff(t *testing.T) {
	const n = 20000
	// The stacks of the last sample before frame 4096, and of the last.
	var before, last capture.Sample
	cr, err := capture.NewBytesReader(handoffCapture(t, n, nil), capture.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for frames := 0; ; frames++ {
		f, err := cr.NextRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.Type != capture.TypeSample {
			continue
		}
		var s capture.Sample
		if err := f.DecodeSample(&s); err != nil {
			t.Fatal(err)
		}
		s.Addrs = slices.Clone(s.Addrs)
		if frames < 4096 {
			before = s
		}
		last = s
	}
	rec := func(s capture.Sample, i int64) capture.StackRecord {
		return capture.StackRecord{Time: testStart + n + i, PID: s.PID, TID: s.TID, Addrs: s.Addrs}
	}
	data := handoffCapture(t, n, []capture.StackRecord{rec(before, 1), rec(last, 2), rec(before, 3), rec(before, 4)})

	load := func(pipe bool, at int) *Profile {
		defer func(n, at int) { minPipeSamples, scoutAt = n, at }(minPipeSamples, scoutAt)
		minPipeSamples, scoutAt = 1<<30, at
		if pipe {
			minPipeSamples = 1
		}
		p, err := LoadBytes(data, LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := load(false, -1)
	if len(want.Samples) != n+4 {
		t.Fatalf("%d samples, want %d", len(want.Samples), n+4)
	}
	for _, at := range []int{0, 4096} {
		t.Run(fmt.Sprint("at", at), func(t *testing.T) {
			got := load(true, at)
			for i := range want.Samples {
				if g, w := got.Samples[i].Stack, want.Samples[i].Stack; g != w {
					t.Fatalf("sample %d of %d: stack %d, want %d", i, len(want.Samples), g, w)
				}
			}
			if !slices.Equal(got.stackStart, want.stackStart) || !slices.Equal(got.stackFrames, want.stackFrames) {
				t.Errorf("stacks differ: %d vs %d", got.NumStacks(), want.NumStacks())
			}
		})
	}
}

// TestScoutCountsStacksFile: the addresses of the off-CPU stacks file
// count towards the bound on the lines file's records, as the SAMPLE
// frames' do: an off-CPU capture of few CPU samples had its lines past
// the bound dropped (and DecodeLinesGzip, sizing below the records read,
// panicked).
func TestScoutCountsStacksFile(t *testing.T) {
	var recs []capture.StackRecord
	addrs := 0
	for i := range 300 {
		recs = append(recs, capture.StackRecord{Time: testStart + int64(i), PID: 100, TID: 100,
			Addrs: []uint64{capture.ContextUser, 0x500000 + uint64(i)*16, 0x600000 + uint64(i)*16}})
		addrs += 3
	}
	n, _ := countSamples(handoffCapture(t, 2, recs), false)
	if n.slots < addrs {
		t.Fatalf("the scout counts %d slots for a stacks file of %d addresses (and %d in samples)", n.slots, addrs, n.addrs)
	}
}

// TestScoutCountsAllocations: the allocations of a --memprof capture are
// samples of the profile, which the scout counts (unless they are not
// kept) so that the table of samples is made at once.
func TestScoutCountsAllocations(t *testing.T) {
	buf, w := appCapture(t, 1000)
	for i := range 3 {
		must(t, w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: 100, Time: testStart + int64(i)}, TID: 100, Addrs: []uint64{capture.ContextUser, 0x400000}}))
	}
	const allocs, frees = 500, 400
	for i := range allocs + frees {
		a := &capture.Allocation{FrameHeader: capture.FrameHeader{PID: 100, Time: testStart + 10 + int64(i)}, TID: 100, Addr: 0x7f0000 + uint64(16*(i%allocs))}
		if i < allocs {
			a.Size, a.Addrs = 32, []uint64{0x400000, 0x400100}
		}
		must(t, w.WriteFrame(a))
	}
	must(t, w.Close())
	counted, _ := countSamples(buf.Bytes(), false)
	if n := counted.kept(true); n.samples != 3+allocs {
		t.Fatalf("scout: %d samples, want %d", n.samples, 3+allocs)
	}
	// Without the allocations (LoadOptions.NoAllocations), no room for
	// them.
	if n := counted.kept(false); n.samples != 3 {
		t.Errorf("sizes without allocations: %d samples", n.samples)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 3+allocs || p.Allocations != allocs+frees {
		t.Errorf("loaded %d samples and %d allocation frames", len(p.Samples), p.Allocations)
	}
}

// TestAllocEventsChunks: the events are kept in chunks made at their
// full size after the first, never copied as they grow, and each is
// found by its index.
func TestAllocEventsChunks(t *testing.T) {
	var a allocEvents
	const n = 2*allocChunk + 5
	for i := range n {
		a.add(allocEvent{time: int64(i)})
	}
	if a.len() != n || len(a.chunks) != 3 {
		t.Fatalf("%d events in %d chunks, want %d in 3", a.len(), len(a.chunks), n)
	}
	for i, c := range a.chunks[1:] {
		if cap(c) != allocChunk {
			t.Errorf("chunk %d: room for %d events, want %d", i+1, cap(c), allocChunk)
		}
	}
	for i := range n {
		if e := a.at(i); e.time != int64(i) {
			t.Fatalf("event %d: time %d", i, e.time)
		}
	}
}
