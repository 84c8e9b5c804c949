package analyze

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"nsprof/capture"
)

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

const benchSamples = 1_000_000

// benchCapture writes (once per test binary) a capture of 1M samples:
// 4 processes, 2000 distinct stacks 8–24 frames deep over 400 functions,
// kernel and user parts, and a __symbols__ bundle naming every function.
func benchCapture(b *testing.B) string {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nsprof-analyze-bench")
		if err != nil {
			benchErr = err
			return
		}
		benchPath = filepath.Join(dir, "bench.syscap")
		w, err := capture.CreateWithOptions(benchPath, capture.WriterOptions{StartTime: 1, Clock: func() int64 { return math.MinInt64 }})
		if err != nil {
			benchErr = err
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		const funcs = 400
		addr := func(pid int32, fn int) uint64 { return 0x400000 + uint64(fn)*0x100 + uint64(pid%3) }
		var syms []capture.Symbol
		for pid := int32(1); pid <= 4; pid++ {
			w.WriteFrame(&capture.Process{FrameHeader: capture.FrameHeader{PID: pid, Time: 1}, Cmdline: fmt.Sprintf("/bin/p%d", pid)})
			w.WriteFrame(&capture.Map{FrameHeader: capture.FrameHeader{PID: pid, Time: 1}, Start: 0x400000, End: 0x400000 + funcs*0x100, Filename: "/bin/p"})
			for fn := range funcs {
				a := addr(pid, fn) &^ 0xff
				syms = append(syms, capture.Symbol{PID: pid, Begin: a, End: a + 0xff, Name: fmt.Sprintf("function_%d", fn)})
			}
		}
		stacks := make([][]uint64, 2000)
		for i := range stacks {
			depth := 8 + rng.IntN(17)
			s := []uint64{capture.ContextKernel, 0xffffffff81000000 + uint64(rng.IntN(50))*64, capture.ContextUser}
			for range depth {
				s = append(s, addr(int32(i%4)+1, rng.IntN(funcs)))
			}
			stacks[i] = s
		}
		for i := range benchSamples {
			st := rng.IntN(len(stacks))
			pid := int32(st%4) + 1
			if err := w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{CPU: int16(i % 2), PID: pid, Time: int64(i) * 1000}, TID: pid, Addrs: stacks[st]}); err != nil {
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

func BenchmarkLoad(b *testing.B) {
	path := benchCapture(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		p, err := LoadFile(path, LoadOptions{})
		if err != nil || len(p.Samples) != benchSamples {
			b.Fatal(err)
		}
	}
}

func BenchmarkTop(b *testing.B) {
	p, err := LoadFile(benchCapture(b), LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if top := p.Top(p.Samples); len(top) == 0 {
			b.Fatal("no functions")
		}
	}
}

func BenchmarkTree(b *testing.B) {
	p, err := LoadFile(benchCapture(b), LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Tree(p.Samples, TreeOptions{MaxDepth: 8, MinPercent: 0.5})
	}
}

// FuzzLoad loads arbitrary bytes: Load must not panic, must return a
// profile whenever it returns no error, and every operation must work on
// what it returns. Seeds are in testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Load(bytes.NewReader(data), LoadOptions{})
		if p == nil {
			if err == nil {
				t.Fatal("nil profile without an error")
			}
			return
		}
		for _, s := range p.Samples {
			for _, fr := range p.Stack(s.Stack) {
				if int(p.Frames[fr].Func) >= len(p.Funcs) || p.Frames[fr].Func < 0 {
					t.Fatalf("frame %d has function %d of %d", fr, p.Frames[fr].Func, len(p.Funcs))
				}
			}
		}
		// Every sample with a stack is the Self of one function, and no
		// function is in more samples than there are.
		withStack, self := 0, 0
		for _, s := range p.Samples {
			if len(p.Stack(s.Stack)) > 0 {
				withStack++
			}
		}
		for _, f := range p.Top(p.Samples) {
			if f.Self > f.Total || f.Total > len(p.Samples) {
				t.Fatalf("%s: self %d, total %d of %d samples", f.Name, f.Self, f.Total, len(p.Samples))
			}
			self += f.Self
		}
		if self != withStack {
			t.Fatalf("Top: self adds up to %d, %d samples have a stack", self, withStack)
		}
		// So does each source line's, for the lines.
		lines, _ := p.TopLines(p.Samples, 0)
		self = 0
		for _, l := range lines {
			self += l.Self
		}
		if self != withStack {
			t.Fatalf("TopLines: self adds up to %d, %d samples have a stack", self, withStack)
		}
		// Unpruned, each node's samples end at it or go on to one child.
		for _, up := range []bool{false, true} {
			root := p.Tree(p.Samples, TreeOptions{BottomUp: up})
			if root.Total != len(p.Samples) {
				t.Fatalf("tree (bottom-up %t): root total %d of %d samples", up, root.Total, len(p.Samples))
			}
			checkNodeTotals(t, root)
		}
		p.Tree(p.Samples, TreeOptions{BottomUp: len(data)%2 == 0, MaxDepth: 4, MinPercent: 1})
		for g := GroupNone; g <= GroupDSO; g++ {
			n := 0
			for _, grp := range p.Group(p.Samples, g) {
				n += len(grp.Samples)
			}
			if n > len(p.Samples) {
				t.Fatalf("%v: %d samples in the groups of %d", g, n, len(p.Samples))
			}
		}
		if _, err := p.Select(Filter{DSO: "a", Comm: "a", Container: "host", Until: 1}); err != nil {
			t.Fatal(err)
		}
	})
}

// checkNodeTotals checks that the Total of n and of each node below it is
// its Self plus its children's Totals.
func checkNodeTotals(t *testing.T, n *Node) {
	sum := n.Self
	for _, c := range n.Children {
		sum += c.Total
		checkNodeTotals(t, c)
	}
	if sum != n.Total {
		t.Fatalf("node %q: total %d, self plus children %d", n.Name, n.Total, sum)
	}
}

var writeSeeds = flag.Bool("write-fuzz-seeds", false, "rewrite testdata/fuzz/FuzzLoad from the synthetic capture")

// TestWriteFuzzSeeds regenerates the FuzzLoad seeds with -write-fuzz-seeds:
// the synthetic capture whole and cut inside its frames.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*writeSeeds {
		t.Skip("use -write-fuzz-seeds to regenerate")
	}
	data := writeTestCapture(t)
	dir := filepath.Join("testdata", "fuzz", "FuzzLoad")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{len(data), len(data) / 2, 300, 1000} {
		seed := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data[:n])
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(seed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
