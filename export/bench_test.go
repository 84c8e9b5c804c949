package export

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/capture"
)

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

const benchSamples = 1_000_000

// keepEnv names a file to write the benchmark capture to, and keep, for
// timing the nsprof binary on it.
const keepEnv = "NSPROF_BENCH_CAPTURE"

// benchCapture writes (once per test binary) a capture of 1M samples: 4
// processes of 4 threads, 4000 distinct stacks 8–32 frames deep over 600
// functions with kernel and user parts, and a __symbols__ bundle naming
// every function.
func benchCapture(b *testing.B) string {
	benchOnce.Do(func() {
		path := os.Getenv(keepEnv)
		if path == "" {
			dir, err := os.MkdirTemp("", "nsprof-export-bench")
			if err != nil {
				benchErr = err
				return
			}
			benchPath = filepath.Join(dir, "bench.syscap")
			path = benchPath
		}
		w, err := capture.CreateWithOptions(path, capture.WriterOptions{StartTime: 1, Clock: func() int64 { return math.MinInt64 }})
		if err != nil {
			benchErr = err
			return
		}
		rng := rand.New(rand.NewPCG(3, 4))
		const funcs = 600
		addr := func(pid int32, fn int) uint64 { return 0x400000 + uint64(fn)*0x100 + uint64(pid%3) }
		var syms []capture.Symbol
		for pid := int32(1); pid <= 4; pid++ {
			w.WriteFrame(&capture.Process{FrameHeader: capture.FrameHeader{PID: pid, Time: 1}, Cmdline: fmt.Sprintf("/bin/p%d", pid)})
			w.WriteFrame(&capture.Map{FrameHeader: capture.FrameHeader{PID: pid, Time: 1}, Start: 0x400000, End: 0x400000 + funcs*0x100, Filename: "/bin/p", BuildID: "00112233"})
			for fn := range funcs {
				a := addr(pid, fn) &^ 0xff
				syms = append(syms, capture.Symbol{PID: pid, Begin: a, End: a + 0xff, Name: fmt.Sprintf("namespace::function_%d(int, char const*)", fn)})
			}
		}
		stacks := make([][]uint64, 4000)
		for i := range stacks {
			depth := 8 + rng.IntN(25)
			s := []uint64{capture.ContextKernel, 0xffffffff81000000 + uint64(rng.IntN(50))*64, capture.ContextUser}
			for range depth {
				s = append(s, addr(int32(i%4)+1, rng.IntN(funcs)))
			}
			stacks[i] = s
		}
		for i := range benchSamples {
			st := rng.IntN(len(stacks))
			pid := int32(st%4) + 1
			tid := pid*100 + int32(rng.IntN(4))
			if err := w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{CPU: int16(i % 2), PID: pid, Time: int64(i) * 1000}, TID: tid, Addrs: stacks[st]}); err != nil {
				benchErr = err
				return
			}
		}
		bundle, err := capture.EncodeSymbols(syms)
		if err == nil {
			err = w.AddFileGzip(capture.FrameHeader{PID: -1, Time: 2}, capture.SymbolsFile, bundle)
		}
		if err == nil {
			err = w.Close()
		}
		benchErr = err
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	if p := os.Getenv(keepEnv); p != "" {
		return p
	}
	return benchPath
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if benchPath != "" {
		os.RemoveAll(filepath.Dir(benchPath))
	}
	os.Exit(code)
}

// peakHeap samples the live heap every millisecond until stop is called,
// which returns the highest value seen in bytes.
func peakHeap() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkPprof exports a loaded 1M-sample capture to pprof (build and
// gzipped write). peak-heap-MB includes the loaded profile.
func BenchmarkPprof(b *testing.B) {
	p, err := analyze.LoadFile(benchCapture(b), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		b.Fatal(err)
	}
	v, err := p.View(analyze.ViewOptions{})
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	stop := peakHeap()
	b.ReportAllocs()
	for b.Loop() {
		if err := Generate(io.Discard, v, FormatPprof, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MB")
}

// BenchmarkExportPprofFile is `nsprof export --format pprof` on a
// 1M-sample capture: load, symbolize from the bundle, export.
func BenchmarkExportPprofFile(b *testing.B) {
	path := benchCapture(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	runtime.GC()
	stop := peakHeap()
	b.ReportAllocs()
	for b.Loop() {
		p, err := analyze.LoadFile(path, analyze.LoadOptions{NoHostFiles: true})
		if err != nil || len(p.Samples) != benchSamples {
			b.Fatal(err)
		}
		v, _ := p.View(analyze.ViewOptions{})
		if err := Generate(io.Discard, v, FormatPprof, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MB")
}

// BenchmarkFormats exports the loaded capture in the other formats.
func BenchmarkFormats(b *testing.B) {
	p, err := analyze.LoadFile(benchCapture(b), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		b.Fatal(err)
	}
	v, _ := p.View(analyze.ViewOptions{})
	for _, f := range []Format{FormatSpeedscope, FormatFolded, FormatSVG} {
		b.Run(f.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Generate(io.Discard, v, f, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
