package analyze

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"nsprof/capture"
)

// loadAllWays loads data with Load, LoadBytes and LoadFile (mapped).
func loadAllWays(t *testing.T, data []byte) (ps [3]*Profile, errs [3]error) {
	t.Helper()
	ps[0], errs[0] = Load(bytes.NewReader(data), LoadOptions{NoHostFiles: true})
	ps[1], errs[1] = LoadBytes(bytes.Clone(data), LoadOptions{NoHostFiles: true})
	path := filepath.Join(t.TempDir(), "c.syscap")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ps[2], errs[2] = LoadFile(path, LoadOptions{NoHostFiles: true})
	return ps, errs
}

// profileView returns what must agree between profiles of the same data.
func profileView(p *Profile) any {
	if p == nil {
		return nil
	}
	type view struct {
		Samples   []Sample
		Frames    []Frame
		Funcs     []Function
		Stats     map[string]int
		Warnings  []string
		Start     int64
		End       int64
		Lost      int64
		Processes []Process
		Threads   []Thread
		Bundle    int
	}
	v := view{Samples: p.Samples, Frames: p.Frames, Funcs: p.Funcs, Stats: p.SymbolStats, Warnings: p.Warnings, Start: p.Start, End: p.End, Lost: p.Lost}
	for _, pr := range p.Processes {
		v.Processes = append(v.Processes, *pr)
	}
	for _, th := range p.Threads {
		v.Threads = append(v.Threads, *th)
	}
	if p.Bundle != nil {
		v.Bundle = p.Bundle.Len()
	}
	return v
}

// TestLoadWays checks that the three ways of loading give the same
// profile, whole and cut anywhere, and that a mapped file's profile keeps
// nothing of the mapping (its kallsyms is read after the file is gone).
func TestLoadWays(t *testing.T) {
	data := writeTestCapture(t)
	for _, cut := range []int{len(data), len(data) - 3, len(data) / 2, 1000, 300, 100} {
		ps, errs := loadAllWays(t, data[:cut])
		for i := 1; i < 3; i++ {
			if (errs[i] == nil) != (errs[0] == nil) {
				t.Fatalf("cut %d, way %d: error %v, Load's %v", cut, i, errs[i], errs[0])
			}
			if !reflect.DeepEqual(profileView(ps[i]), profileView(ps[0])) {
				t.Fatalf("cut %d, way %d: profile differs from Load's", cut, i)
			}
		}
	}
	ps, _ := loadAllWays(t, data)
	for i, p := range ps {
		if p.Kallsyms == nil || p.Kallsyms.Len() == 0 {
			t.Fatalf("way %d: no kallsyms", i)
		}
		if _, ok := p.Kallsyms.Symbolize(0, kBase+0x10, true); !ok {
			t.Errorf("way %d: kallsyms names nothing", i)
		}
	}
}

// TestKallsymsLazy checks that the embedded kallsyms is not inflated when
// the bundle names every kernel frame, and is when one is left.
func TestKallsymsLazy(t *testing.T) {
	for _, named := range []bool{true, false} {
		var buf bytes.Buffer
		w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: 1})
		if err != nil {
			t.Fatal(err)
		}
		h := capture.FrameHeader{PID: 7, Time: 2}
		w.WriteFrame(&capture.Sample{FrameHeader: h, TID: 7, Addrs: []uint64{capture.ContextKernel, kBase + 0x10}})
		syms := []capture.Symbol{{PID: 7, Begin: 0x1, End: 0x2, Name: "other"}}
		if named {
			syms = append(syms, capture.Symbol{PID: 7, Begin: kBase, End: kBase + 0x100, Name: "from_bundle", Tag: "Kernel"})
		}
		bundle, err := capture.EncodeSymbols(syms)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddFileGzip(h, capture.SymbolsFile, bundle); err != nil {
			t.Fatal(err)
		}
		if err := w.AddFileGzip(h, kallsymsPath, []byte(testKallsyms)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		if p.Kallsyms == nil {
			t.Fatal("no kallsyms")
		}
		if got := p.Kallsyms.done.Load(); got == named {
			t.Errorf("bundle names the kernel frame: %v; kallsyms read: %v", named, got)
		}
		if want := map[bool]string{true: "from_bundle", false: "_stext"}[named]; p.Frames[0].Loc.Function != want {
			t.Errorf("kernel frame named %q, want %q", p.Frames[0].Loc.Function, want)
		}
	}
}

// TestLoadFileKallsymsChanged checks that a mapped capture's kallsyms,
// read back from the file on first use, is not read from a file that
// changed since: the symbolizer reports why instead.
func TestLoadFileKallsymsChanged(t *testing.T) {
	data := writeTestCapture(t)
	path := filepath.Join(t.TempDir(), "c.syscap")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadFile(path, LoadOptions{NoSymbolize: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)-8], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Kallsyms.Symbolize(0, kBase+0x10, true); ok {
		t.Error("kallsyms named an address from a changed file")
	}
	if err := p.Kallsyms.Err(); err == nil || !strings.Contains(err.Error(), "changed since it was loaded") {
		t.Errorf("Err() = %v, want the file changed", err)
	}
}

// TestLoadMappedTruncated truncates a capture after it was mapped, as a
// recording overwriting it would: reading the mapping faults, which
// loadMapped reports as an error instead of crashing.
func TestLoadMappedTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.syscap")
	if err := os.WriteFile(path, writeTestCapture(t), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, unmap, info, err := capture.MapFile(f)
	if err != nil || data == nil {
		t.Skipf("cannot map: %v", err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	p, err := loadMapped(data, unmap, &sourceFile{path: path, info: info}, LoadOptions{NoHostFiles: true})
	if p != nil || !errors.Is(err, capture.ErrFileShrank) {
		t.Fatalf("loadMapped of a truncated file: %v, %v", p, err)
	}
}

// A frame-pointer walk that runs past the outermost frame reads whatever
// is there, a stack protector's canary most often: a user return address
// above every user address space is dropped, while JIT addresses, the
// vsyscall page, kernel addresses and the sampled IP itself are kept.
func TestImpossibleReturnDropped(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	const (
		canary   = 0xbe552274c0854800
		jit      = capture.JITMapMark | 1
		vsyscall = 0xffffffffff600400
		kernel   = 0xffffffff81000010
		high     = 1<<56 - 0x1000 // 5-level paging: still possible
	)
	addrs := []uint64{capture.ContextKernel, kernel, capture.ContextUser, canary, 0x401000, high, canary, jit, vsyscall, canary}
	h := capture.FrameHeader{PID: 10, Time: 1}
	if err := w.WriteFrame(&capture.Sample{FrameHeader: h, TID: 10, Addrs: addrs}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 1 {
		t.Fatalf("%d samples", len(p.Samples))
	}
	var got []uint64
	for _, f := range p.Stack(p.Samples[0].Stack) {
		got = append(got, p.Frames[f].Addr)
	}
	// The first user address is where the thread was, canary or not.
	want := []uint64{kernel, canary, 0x401000, high, jit, vsyscall}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("frames %#x, want %#x", got, want)
	}
}

// TestLoadFewerGCs: with FewerGCs, a small capture is loaded with GOGC
// 400, and the process's own setting is back afterwards.
func TestLoadFewerGCs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.syscap")
	if err := os.WriteFile(path, inlineCapture(t), 0o600); err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(123))
	gogc := func() int { v := debug.SetGCPercent(-1); debug.SetGCPercent(v); return v }
	during := 0
	_, err := LoadFile(path, LoadOptions{NoHostFiles: true, FewerGCs: true, Progress: func(string, int64, int64) { during = gogc() }})
	if err != nil {
		t.Fatal(err)
	}
	if during != 400 || gogc() != 123 {
		t.Errorf("GOGC %d while loading and %d after, want 400 and 123", during, gogc())
	}
}
