package export

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

// TestPprofWriterMatchesBuilder checks that the profile `nsprof export
// --format pprof` encodes itself is, parsed by google/pprof, the profile
// [Pprof] builds with google/pprof's model: for captures of CPU samples
// (with kernel frames and inlined calls), allocations, instrumented calls
// and Sysprof's own, under every sample type and view option that
// changes stacks.
func TestPprofWriterMatchesBuilder(t *testing.T) {
	views := []analyze.ViewOptions{{}, {HideKernel: true}, {Inline: true}, {Invert: true}}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"cpu", testcaptures.CPU(t)},
		{"web", testcaptures.Web(t)},
		{"memprof", testcaptures.Memory(t)},
		{"nsprof-memprof", testcaptures.Memprof(t)},
		{"sysprof-cli", testcaptures.Sysprof(t)},
		{"calls", testcaptures.Calls(t)},
		{"offcpu", testcaptures.OffCPU(t)},
		// The most sampled process's file is not the first mapping
		// used: pprof's main mapping is moved first.
		{"main-later", testcaptures.CPUOf(t, []testcaptures.Stack{
			{PID: 20, TID: 20, MS: 1, Frames: []string{"evil_f", "main"}, N: 1},
			{PID: 10, TID: 10, MS: 2, Frames: []string{"k_read", "hot", "main"}, N: 3},
			// Samples of no thread (tid -1) in two processes.
			{PID: 20, TID: -1, MS: 3, Frames: []string{"k_idle"}, N: 1},
			{PID: 10, TID: -1, MS: 4, Frames: []string{"k_read"}, N: 1},
			{PID: 20, TID: -1, MS: 5, Frames: []string{"k_idle"}, N: 1},
		})},
		// Thousands of stacks: samples are written while the locations
		// of later ones are still being found.
		{"many", testcaptures.CPUOf(t, manyStacks())},
	} {
		p, err := analyze.Load(bytes.NewReader(c.data), analyze.LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		types := max(1, len(p.SampleTypes))
		for value := range types {
			for _, vo := range views {
				vo.Value = value
				v, err := p.View(vo)
				if err != nil {
					t.Fatalf("%s %+v: %v", c.name, vo, err)
				}
				want, err := buildPprof(v, Options{Title: c.name})
				if err != nil {
					t.Fatalf("%s %+v: %v", c.name, vo, err)
				}
				var buf bytes.Buffer
				if err := Generate(&buf, v, FormatPprof, Options{Title: c.name}); err != nil {
					t.Fatalf("%s %+v: %v", c.name, vo, err)
				}
				got, err := profile.Parse(&buf)
				if err != nil {
					t.Fatalf("%s %+v: parsing the export: %v", c.name, vo, err)
				}
				if err := got.CheckValid(); err != nil {
					t.Fatalf("%s %+v: %v", c.name, vo, err)
				}
				if len(want.Sample) == 0 {
					continue
				}
				// The builder's model, through google/pprof's encoder
				// and parser, as ours went through its parser.
				var wb bytes.Buffer
				if err := want.Write(&wb); err != nil {
					t.Fatal(err)
				}
				if want, err = profile.Parse(&wb); err != nil {
					t.Fatal(err)
				}
				if g, w := got.String(), want.String(); g != w {
					t.Errorf("%s, value %d %+v: the export differs from the builder's profile:\n%s\nwant:\n%s", c.name, value, vo, g, w)
				}
			}
		}
	}
}

// manyStacks returns 3,000 stacks of about 9,000 samples in two
// processes, most of them distinct.
func manyStacks() []testcaptures.Stack {
	var st []testcaptures.Stack
	for i := range 3000 {
		pid := int32(10 + 10*(i%2))
		st = append(st, testcaptures.Stack{
			PID: pid, TID: pid + int32(i%3/2), MS: int64(i),
			Frames: []string{fmt.Sprintf("f%d", i%500), fmt.Sprintf("g%d", i%37), fmt.Sprintf("h%d", i%11), "main"},
			N:      1 + i%5,
		})
	}
	return st
}

// slowWriter is a writer that takes its time, so that writes queue up.
type slowWriter struct{ bytes.Buffer }

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return w.Buffer.Write(p)
}

// TestAsyncWriter writes more buffers than asyncWriter keeps, faster than
// they are written, and checks every byte arrives in order.
func TestAsyncWriter(t *testing.T) {
	var sw slowWriter
	a := newAsyncWriter(&sw)
	var want bytes.Buffer
	chunk := make([]byte, 1<<16)
	for i := range 50 {
		for j := range chunk {
			chunk[j] = byte(i + j)
		}
		want.Write(chunk)
		if _, err := a.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sw.Bytes(), want.Bytes()) {
		t.Fatalf("wrote %d bytes, differing from the %d written", sw.Len(), want.Len())
	}
}

// TestPprofPeriodTypes checks the period type and period of the pprof
// export of each sample type of a capture of CPU samples, off-CPU time
// and blocking calls: off-CPU, wall and blocking profiles are periods of
// one nanosecond of their own type (they were "space bytes", the
// allocations' period type).
func TestPprofPeriodTypes(t *testing.T) {
	p, err := analyze.Load(bytes.NewReader(testcaptures.OffCPU(t)), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"samples": "cpu nanoseconds 1000000", "cpu": "cpu nanoseconds 1000000",
		"off_cpu": "off_cpu nanoseconds 1", "wall": "wall nanoseconds 1", "blocking": "blocking nanoseconds 1",
	}
	for i, ty := range p.SampleTypes {
		v, err := p.View(analyze.ViewOptions{Value: i})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Generate(&buf, v, FormatPprof, Options{}); err != nil {
			t.Fatal(err)
		}
		pp, err := profile.Parse(&buf)
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("%s %s %d", pp.PeriodType.Type, pp.PeriodType.Unit, pp.Period)
		if got != want[ty.Type] {
			t.Errorf("%s: period %q, want %q", ty.Type, got, want[ty.Type])
		}
		if len(pp.Sample) == 0 {
			t.Errorf("%s: no sample", ty.Type)
		}
	}
	if len(p.SampleTypes) != len(want) {
		t.Errorf("sample types %v, want %d", p.SampleTypes, len(want))
	}
}

// TestPprofSharesLocations: frames of several processes at one address of
// one file mapped at the same place (same build-id) are one location, and
// the export is the same bytes from one run to the next though frames are
// named by several goroutines (18,000 frames: several blocks).
func TestPprofSharesLocations(t *testing.T) {
	const pids, addrs = 3, 6000
	data := testcaptures.SameProgram(t, pids, addrs, "abcd", true, func(int32, int) bool { return true })
	var first []byte
	for run := range 3 {
		p, err := analyze.LoadBytes(data, analyze.LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.View(analyze.ViewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Generate(&out, v, FormatPprof, Options{}); err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			first = out.Bytes()
			got, err := profile.Parse(bytes.NewReader(first))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Sample) != pids*addrs || len(got.Location) != addrs {
				t.Fatalf("%d samples in %d locations, want %d in %d", len(got.Sample), len(got.Location), pids*addrs, addrs)
			}
			continue
		}
		if !bytes.Equal(out.Bytes(), first) {
			t.Fatalf("run %d exported %d bytes differing from the first run's %d", run, out.Len(), len(first))
		}
	}
}
