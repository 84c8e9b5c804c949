package record

import (
	"debug/elf"
	"errors"
	"go/build"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/internal/gcpace"
	"nsprof/symbol"
)

// BenchmarkBundleToolchain bundles what a recording over a loop of Go
// compiles samples, without the symbol cache: 900 processes that exited,
// a third each of the toolchain's compile, go and vet (this Go's), all
// with libc, each sampled in 60 stacks of 20 frames drawn from a few
// thousand functions of its binary. It reports the peak of the heap's
// objects while bundling (peak-heap-MB), at the GC percent of the bundle.
//
//	go test ./record -run '^$' -bench BundleToolchain -benchtime 1x
func BenchmarkBundleToolchain(b *testing.B) {
	tools := filepath.Join(build.Default.GOROOT, "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH)
	bins := []string{filepath.Join(tools, "compile"), filepath.Join(build.Default.GOROOT, "bin", "go"), filepath.Join(tools, "vet")}
	const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	for _, p := range append(bins, libc) {
		if _, err := os.Stat(p); err != nil {
			b.Skipf("%v", err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	var progs []benchBinary
	for _, p := range bins {
		progs = append(progs, newBenchBinary(b, p, 4000, r))
	}
	lc := newBenchBinary(b, libc, 400, r)
	defer gcpace.Floor(bundleHeapFloor, bundleGCPercent)()
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		s := newSymbolizer()
		s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
		const base, libcBase = 0x400000, 0x7f0000000000
		for i := range 900 {
			pid := 1000 + i
			pr := progs[i%len(progs)]
			s.mapped(pid, container.Mapping{Path: pr.path, Start: base, End: base + pr.size, BuildID: pr.id})
			s.mapped(pid, container.Mapping{Path: lc.path, Start: libcBase, End: libcBase + lc.size, BuildID: lc.id})
			for range 60 {
				stack := []uint64{capture.ContextUser}
				if r.IntN(4) == 0 {
					stack = append(stack, libcBase+lc.offs[r.IntN(len(lc.offs))])
				}
				for range 20 {
					k := r.IntN(len(pr.offs))
					if r.IntN(2) == 0 {
						k = r.IntN(min(300, len(pr.offs))) // hot functions
					}
					stack = append(stack, base+pr.offs[k])
				}
				s.sampled(pid, stack, false, int64(i))
			}
			s.exited(pid, 1<<40)
			s.packExited(time.Now().Add(2 * packGrace))
		}
		runtime.GC()
		done := watchHeapPeak()
		b.StartTimer()
		s.bundle(func(capture.Symbol) {}, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(string, ...any) {})
		b.StopTimer()
		peak = max(peak, done())
		s.close()
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
}

// benchBinary is a file of BenchmarkBundleToolchain and file offsets in
// its functions.
type benchBinary struct {
	path string
	id   []byte
	size uint64
	offs []uint64
}

// newBenchBinary reads path's build-id and n file offsets, each in a
// function of its text drawn at random.
func newBenchBinary(b *testing.B, path string, n int, r *rand.Rand) benchBinary {
	f, err := symbol.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	id := f.BuildID()
	f.Close()
	ef, err := elf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil || len(syms) == 0 {
		syms, _ = ef.DynamicSymbols()
	}
	var offs []uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size < 8 {
			continue
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				offs = append(offs, s.Value-p.Vaddr+p.Off+uint64(r.IntN(int(s.Size))))
			}
		}
	}
	r.Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
	if len(offs) > n {
		offs = offs[:n]
	}
	if len(offs) == 0 {
		b.Fatalf("%s: no functions", path)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return benchBinary{path: path, id: id, size: uint64(st.Size()+4095) &^ 4095, offs: offs}
}

// watchHeapPeak samples the heap's objects every half millisecond until
// the function it returns is called, which returns their peak.
func watchHeapPeak() func() uint64 {
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var most uint64
		for {
			metrics.Read(s)
			most = max(most, s[0].Value.Uint64())
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(500 * time.Microsecond):
			}
		}
	}()
	return func() uint64 { close(stop); return <-peak }
}
