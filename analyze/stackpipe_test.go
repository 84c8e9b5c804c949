package analyze

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"nsprof/capture"
)

// appCapture starts a capture of the processes 100 to 103 of one program
// at testStart, ending at testStart+span.
func appCapture(t *testing.T, span int64) (*bytes.Buffer, *capture.Writer) {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: testStart, EndTime: testStart + span})
	if err != nil {
		t.Fatal(err)
	}
	for pid := int32(100); pid < 104; pid++ {
		h := capture.FrameHeader{PID: pid, Time: testStart}
		must(t, w.WriteFrame(&capture.Process{FrameHeader: h, Cmdline: fmt.Sprint("app", pid)}))
		must(t, w.WriteFrame(&capture.Map{FrameHeader: h, Start: 0x400000, End: 0x500000, Filename: "/usr/bin/app", Inode: 7}))
	}
	return &buf, w
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pipeCapture writes a capture of n samples and allocations of a few
// processes over a few thousand stacks, repeating and interleaved.
func pipeCapture(t *testing.T, n int) []byte {
	t.Helper()
	buf, w := appCapture(t, int64(n))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		pid := 100 + int32(r.IntN(4))
		h := capture.FrameHeader{PID: pid, Time: testStart + int64(i)}
		addrs := []uint64{capture.ContextUser}
		for range 1 + r.IntN(6) {
			addrs = append(addrs, 0x400000+uint64(r.IntN(64))*16)
		}
		if i%5 == 4 {
			must(t, w.WriteFrame(&capture.Allocation{FrameHeader: h, TID: pid, Addr: uint64(i) << 4, Size: 16, Addrs: addrs[1:]}))
			continue
		}
		must(t, w.WriteFrame(&capture.Sample{FrameHeader: h, TID: pid, Addrs: addrs}))
	}
	must(t, w.Close())
	return buf.Bytes()
}

// TestStackPipe: stacks interned on a goroutine of their own while frames
// are read get the ids they get when interned as read, samples and
// allocations alike; a capture damaged part way keeps what came before.
func TestStackPipe(t *testing.T) {
	data := pipeCapture(t, 20000)
	load := func(data []byte, pipe bool) (*Profile, error) {
		defer func(n int) { minPipeSamples = n }(minPipeSamples)
		minPipeSamples = 1 << 30
		if pipe {
			minPipeSamples = 1
		}
		return LoadBytes(data, LoadOptions{NoHostFiles: true})
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"whole", data},
		{"damaged", append(slices.Clone(data[:len(data)*2/3]), make([]byte, 64)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := load(tc.data, false)
			got, gotErr := load(tc.data, true)
			if (wantErr != nil) != (tc.name == "damaged") {
				t.Fatalf("error %v reading the %s capture", wantErr, tc.name)
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if len(want.Samples) < 1000 {
				t.Fatalf("%d samples read: the test reads too few", len(want.Samples))
			}
			if !slices.Equal(got.Samples, want.Samples) {
				t.Errorf("samples differ: %d vs %d", len(got.Samples), len(want.Samples))
			}
			if !slices.Equal(got.stackStart, want.stackStart) || !slices.Equal(got.stackFrames, want.stackFrames) {
				t.Errorf("stacks differ: %d vs %d", got.NumStacks(), want.NumStacks())
			}
			if len(got.Frames) != len(want.Frames) {
				t.Fatalf("%d frames, want %d", len(got.Frames), len(want.Frames))
			}
			for i := range got.Frames {
				g, w := got.Frames[i], want.Frames[i]
				if g.PID != w.PID || g.Addr != w.Addr || g.Caller != w.Caller || g.Kernel != w.Kernel || fmt.Sprint(*g.Loc) != fmt.Sprint(*w.Loc) {
					t.Fatalf("frame %d: %+v, want %+v", i, g, w)
				}
			}
			if fmt.Sprint(got.Totals) != fmt.Sprint(want.Totals) {
				t.Errorf("totals %v, want %v", got.Totals, want.Totals)
			}
		})
	}
}
