// Package testcaptures builds small deterministic captures for the golden
// tests of report and export: the same bytes on every run and host (a
// fixed capture time, start and clock, names from a symbol bundle and an
// embedded kallsyms so no host file is read), the sysprof-cli capture kept
// in analyze/testdata and a --memprof capture nsprof recorded. It is for
// tests only.
package testcaptures

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
)

// Start is the captures' start on the capture clock.
const Start = int64(1_000_000_000_000)

// Hostile are names that must come out escaped in every view and
// format: markup, quotes, control and invalid bytes, a new line.
var Hostile = []string{
	`</text><script>alert(1)</script>`,
	"ctl\x01\x1b[31m",
	"bad\xff\xfeutf8",
	"semi;colon",
	"new\nline",
}

// newWriter returns a capture writer into buf with fixed times.
func newWriter(tb testing.TB, buf *bytes.Buffer) *capture.Writer {
	tb.Helper()
	w, err := capture.NewWriterWithOptions(buf, capture.WriterOptions{
		StartTime: Start, EndTime: Start + 10e6,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Clock:       func() int64 { return math.MinInt64 },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// writeServerAndEvil writes the PROCESS and MAP frames of the CPU and
// Memory captures' two processes, "server" (pid 10, a binary with a
// build-id) and "evil" (pid 20), with the headers h10 and h20.
func writeServerAndEvil(w *capture.Writer, must func(error), h10, h20 capture.FrameHeader) {
	must(w.WriteFrame(&capture.Process{FrameHeader: h10, Cmdline: "/usr/bin/server --port 80"}))
	must(w.WriteFrame(&capture.Process{FrameHeader: h20, Cmdline: "/usr/bin/evil"}))
	must(w.WriteFrame(&capture.Map{FrameHeader: h10, Start: 0x400000, End: 0x500000, Offset: 0x1000, Filename: "/usr/bin/server", BuildID: "0123abcd"}))
	must(w.WriteFrame(&capture.Map{FrameHeader: h20, Start: 0x400000, End: 0x500000, Filename: "/usr/bin/evil"}))
}

// mustf fails tb on err.
func mustf(tb testing.TB) func(error) {
	return func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// Stack is N samples of thread TID of process PID at MS milliseconds
// from Start, with the functions Frames, leaf first: "k_" names are
// kernel functions.
type Stack struct {
	PID, TID int32
	MS       int64
	Frames   []string
	N        int
}

// cpuStacks are CPU's stacks.
var cpuStacks = []Stack{
	{10, 10, 1, []string{"hot", "work", "main"}, 5},
	{10, 11, 2, []string{"k_read", "k_entry", "read", "work", "main"}, 3},
	{10, 11, 3, []string{"work", "main"}, 2},
	{20, 20, 4, []string{Hostile[0], Hostile[1], "main"}, 1},
	{20, 20, 5, []string{Hostile[2], Hostile[3], "main"}, 1},
	{20, 21, 6, []string{Hostile[4], "main"}, 2},
	{20, 20, 7, []string{"k_idle"}, 1},
}

// CPU returns a capture of stack samples of two processes: pid 10
// ("server", threads 10 and 11) runs in podman container "web" with ns
// pid 1 and a binary with a build-id; pid 20 ("evil", on the host) has
// functions with hostile names. A symbol bundle names the user frames and
// an embedded kallsyms the kernel frames.
func CPU(tb testing.TB) []byte {
	tb.Helper()
	return CPUOf(tb, cpuStacks)
}

// KernelBuildID is the kernel build-id of the notes [CPUWithNotes] embeds.
const KernelBuildID = "00112233445566778899aabbccddeeff01234567"

// KernelNotes returns the kernel notes [CPUWithNotes] embeds, as
// /sys/kernel/notes holds them: a Xen note, then the GNU build-id note
// of [KernelBuildID], little-endian.
func KernelNotes() []byte {
	id, _ := hex.DecodeString(KernelBuildID)
	var b []byte
	note := func(name string, typ uint32, desc []byte) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(name)+1))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
		b = binary.LittleEndian.AppendUint32(b, typ)
		b = append(b, name...)
		b = append(b, make([]byte, 4-len(name)%4)...) // NUL, padded to 4
		b = append(b, desc...)
		b = append(b, make([]byte, (4-len(desc)%4)%4)...)
	}
	note("Xen", 6, []byte("linux"))
	note("GNU", 3, id)
	return b
}

// CPUOf returns a capture as [CPU] describes, of the samples stacks.
func CPUOf(tb testing.TB, stacks []Stack) []byte {
	tb.Helper()
	return cpuOf(tb, stacks, false)
}

// CPUWithNotes returns a capture as [CPUOf], with the kernel's notes
// embedded as nsprof record embeds them ([KernelNotes]).
func CPUWithNotes(tb testing.TB, stacks []Stack) []byte {
	tb.Helper()
	return cpuOf(tb, stacks, true)
}

func cpuOf(tb testing.TB, stacks []Stack, notes bool) []byte {
	tb.Helper()
	return cpuCapture(tb, stacks, notes, cpuProcs, nil)
}

// Collector returns [CPU]'s capture with the figures of a
// SYSPROF_CONTROL_FD collector in its metadata: 1200 frames, rings full 3
// times, 2 ms blocked, about 40 frames lost.
func Collector(tb testing.TB) []byte {
	tb.Helper()
	return cpuCapture(tb, cpuStacks, false, cpuProcs, func(w *capture.Writer, must func(error)) {
		for k, v := range map[string]string{capture.MetaCollectorFrames: "1200", capture.MetaCollectorFull: "3",
			capture.MetaCollectorBlockedNs: "2000000", capture.MetaCollectorLostEstimate: "40"} {
			must(w.AddMetadata(Start, k, v))
		}
	})
}

// cpuProcs is the process file of [CPU]: server in podman container
// "web", evil on the host.
const cpuProcs = `{"kind":"process","time":0,"pid":10,"nspid":[10,1],"comm":"server","uid":0,"container":{"kind":"podman","id":"abcdef0123456789","name":"web"}}
{"kind":"process","time":0,"pid":20,"comm":"evil","uid":0,"container":{"kind":"host"}}
`

// CPUExec returns a capture as [CPUOf] describes, in which pid 20 ran
// "launcher" (command line "launcher --exec evil") until it exec'd
// "evil" 5 ms after [Start].
func CPUExec(tb testing.TB, stacks []Stack) []byte {
	tb.Helper()
	server, _, _ := strings.Cut(cpuProcs, "\n")
	procs := server + "\n" + fmt.Sprintf(`{"kind":"process","time":%d,"pid":20,"comm":"launcher","cmdline":["launcher","--exec","evil"],"uid":0,"container":{"kind":"host"}}
{"kind":"process","time":%d,"pid":20,"comm":"evil","cmdline":["evil"],"uid":0,"container":{"kind":"host"}}
`, Start, Start+5e6)
	return cpuCapture(tb, stacks, false, procs, nil)
}

// cpuCapture writes the capture [CPUOf] describes with the process file
// procs, and calls extra, if not nil, to add frames before the end.
func cpuCapture(tb testing.TB, stacks []Stack, notes bool, procs string, extra func(w *capture.Writer, must func(error))) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, must := newWriter(tb, &buf), mustf(tb)
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: pid, Time: Start + ms*1e6}
	}
	writeServerAndEvil(w, must, h(10, 0), h(20, 0))
	addr := map[string]uint64{}
	var syms []capture.Symbol
	var kallsyms bytes.Buffer
	next := map[bool]uint64{false: 0x401000, true: 0xffffffff81000000}
	for _, s := range stacks {
		for _, name := range s.Frames {
			if _, ok := addr[name]; ok {
				continue
			}
			k := strings.HasPrefix(name, "k_")
			a := next[k]
			next[k] += 0x100
			addr[name] = a + 0x10
			if k {
				fmt.Fprintf(&kallsyms, "%x T %s\n", a, name)
				continue
			}
			for _, p := range []int32{10, 20} {
				syms = append(syms, capture.Symbol{PID: p, Begin: a, End: a + 0xff, Name: name})
			}
		}
	}
	for _, s := range stacks {
		var addrs []uint64
		inKernel := false
		for i, name := range s.Frames {
			k := strings.HasPrefix(name, "k_")
			if i == 0 && k {
				addrs, inKernel = append(addrs, capture.ContextKernel), true
			}
			if (i == 0 || inKernel) && !k {
				addrs, inKernel = append(addrs, capture.ContextUser), false
			}
			addrs = append(addrs, addr[name])
		}
		for range s.N {
			must(w.WriteFrame(&capture.Sample{FrameHeader: h(s.PID, s.MS), TID: s.TID, Addrs: addrs}))
		}
	}
	bundle, err := capture.EncodeSymbols(syms)
	must(err)
	must(w.AddFileGzip(h(-1, 9), capture.SymbolsFile, bundle))
	must(w.AddFileGzip(h(-1, 9), "/proc/kallsyms", kallsyms.Bytes()))
	if notes {
		must(w.AddFileBytes(h(-1, 9), capture.KernelNotesFile, KernelNotes()))
	}
	must(w.AddFileBytes(h(-1, 9), capture.ProcessFile, []byte(procs)))
	if extra != nil {
		extra(w, must)
	}
	must(w.Close())
	return buf.Bytes()
}

// webStacks are [Web]'s stacks: samples in every millisecond, so that a
// range holds some of them.
var webStacks = func() []Stack {
	var out []Stack
	for ms := range int64(10) {
		out = append(out, Stack{10, 10, ms, []string{"hot", "work", "main"}, 3})
		if ms%3 == 2 {
			out = append(out, Stack{10, 11, ms, []string{"k_read", "k_entry", "read", "work", "main"}, 2})
		}
		if ms%3 == 1 {
			out = append(out, Stack{20, 20, ms, []string{Hostile[0], Hostile[1], "main"}, 2})
		}
		if ms%3 == 0 {
			out = append(out, Stack{20, 21, ms, []string{Hostile[4], Hostile[2], "main"}, 1})
		}
	}
	return out
}()

// Web returns a capture for nsprof web's views: stack samples in each of
// its 10 ms of pid 10 ("server", threads 10 and 11) in podman container
// "web" and of pid 20 (comm [Hostile][0], threads 20 and 21) in podman
// container "db", with functions of hostile names; marks ("gtk:frame"
// of pid 10 at 1, 4 and 7 ms, 500 µs each, and one of pid 20 whose
// group, name and message are hostile), the sample type cpu (a
// cpu-clock recording at 1 kHz), two counters (one with a hostile
// name), a log, and source lines for "hot": "step" (step.h:12) is
// inlined in it at hot.c:42.
func Web(tb testing.TB) []byte {
	tb.Helper()
	procs := `{"kind":"process","time":0,"pid":10,"nspid":[10,1],"comm":"server","uid":0,"container":{"kind":"podman","id":"abcdef0123456789","name":"web"}}
{"kind":"process","time":0,"pid":20,"nspid":[20,1],"comm":"` + strings.ReplaceAll(Hostile[0], "/", `\/`) + `","uid":0,"container":{"kind":"podman","id":"0123456789abcdef","name":"db"}}
`
	return cpuCapture(tb, webStacks, false, procs, func(w *capture.Writer, must func(error)) {
		// A cpu-clock recording at 1 kHz: each sample stands for 1 ms of
		// CPU time, a second sample type.
		must(w.AddMetadata(Start, capture.MetaEvent, "cpu-clock"))
		must(w.AddMetadata(Start, capture.MetaFrequency, "1000"))
		for _, ms := range []int64{1, 4, 7} {
			must(w.AddMark(Start+ms*1e6, 10, 500_000, "gtk", "frame", "frame "+fmt.Sprint(ms)))
		}
		must(w.AddMark(Start+2e6, 20, 3_000_000, Hostile[0], Hostile[4], Hostile[1]))
		h := func(ms int64) capture.FrameHeader { return capture.FrameHeader{CPU: -1, PID: -1, Time: Start + ms*1e6} }
		must(w.DefineCounters(h(0), []capture.Counter{
			{Category: "CPU Percent", Name: "Total", ID: 1, Type: capture.CounterDouble, Value: capture.DoubleValue(0)},
			{Category: Hostile[0], Name: Hostile[1], ID: 2, Type: capture.CounterInt64, Value: capture.IntValue(0)},
		}))
		for ms := range int64(10) {
			must(w.SetCounters(h(ms), []capture.CounterUpdate{
				{ID: 1, Value: capture.DoubleValue(float64(10 * (ms%4 + 1)))},
				{ID: 2, Value: capture.IntValue(ms * ms)},
			}))
		}
		must(w.AddLog(Start+5e6, 20, capture.LogWarning, Hostile[0], Hostile[4]))
		// "hot", the first function named (0x401010), has "step"
		// inlined where it was sampled.
		must(w.AddFileGzip(h(9), capture.LinesFile, capture.EncodeLines([]capture.AddrLines{{PID: 10, Addr: 0x401010, Frames: []capture.SourceFrame{
			{Function: "step", File: "/src/server/step.h", Line: 12}, {Function: "hot", File: "/src/server/hot.c", Line: 42},
		}}})))
	})
}

// Alloc is N allocations of Size bytes by process PID from the functions
// Frames (leaf first), the first Freed of them freed at once.
type Alloc struct {
	PID      int32
	Frames   []string
	Size     int64
	N, Freed int
}

// memAllocs are Memory's allocations.
var memAllocs = []Alloc{
	{PID: 10, Frames: []string{"alloc_a", "main"}, Size: 100, N: 3, Freed: 2},
	{PID: 10, Frames: []string{"alloc_b", "work", "main"}, Size: 5000, N: 1, Freed: 1},
	{PID: 10, Frames: []string{Hostile[0], "main"}, Size: 7, N: 1},
	{PID: 20, Frames: []string{Hostile[4], "main"}, Size: 10, N: 2, Freed: 2},
}

// Memory returns a capture of ALLOCATION frames, as nsprof record
// --memprof writes them (frees have size 0), of two processes, named by a
// symbol bundle: some blocks are freed at once, one is leaked.
func Memory(tb testing.TB) []byte {
	tb.Helper()
	return MemoryOf(tb, memAllocs)
}

// MemoryOf returns a capture as [Memory] describes, of allocs.
func MemoryOf(tb testing.TB, allocs []Alloc) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, must := newWriter(tb, &buf), mustf(tb)
	h := func(pid int32, ns int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: -1, PID: pid, Time: Start + ns}
	}
	writeServerAndEvil(w, must, h(10, 0), h(20, 0))
	addr := map[string]uint64{}
	var syms []capture.Symbol
	next := uint64(0x401000)
	for _, a := range allocs {
		for _, name := range a.Frames {
			if _, ok := addr[name]; ok {
				continue
			}
			addr[name] = next + 0x10
			for _, p := range []int32{10, 20} {
				syms = append(syms, capture.Symbol{PID: p, Begin: next, End: next + 0xff, Name: name})
			}
			next += 0x100
		}
	}
	ns := int64(1000)
	block := uint64(0x10000)
	for _, a := range allocs {
		var addrs []uint64
		for _, name := range a.Frames {
			addrs = append(addrs, addr[name])
		}
		for i := range a.N {
			block += 0x100
			ns += 10
			must(w.WriteFrame(&capture.Allocation{FrameHeader: h(a.PID, ns), TID: a.PID, Addr: block, Size: a.Size, Addrs: addrs}))
			if i < a.Freed {
				ns += 10
				must(w.WriteFrame(&capture.Allocation{FrameHeader: h(a.PID, ns), TID: a.PID, Addr: block}))
			}
		}
	}
	bundle, err := capture.EncodeSymbols(syms)
	must(err)
	must(w.AddFileGzip(h(-1, 9e6), capture.SymbolsFile, bundle))
	must(w.Close())
	return buf.Bytes()
}

// Timeline returns a capture of marks with known durations (in µs:
// "gtk:frame" 1, 2, 3, 4 and 10; "app:load" once, 250), two counters,
// logs (one with two lines, one with markup), and two processes, the
// second forked by the first and exiting at 6 ms.
func Timeline(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, must := newWriter(tb, &buf), mustf(tb)
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: pid, Time: Start + ms*1e6}
	}
	must(w.WriteFrame(&capture.Process{FrameHeader: h(40, 0), Cmdline: "/usr/bin/gui --x"}))
	must(w.WriteFrame(&capture.Fork{FrameHeader: h(40, 2), ChildPID: 41}))
	must(w.WriteFrame(&capture.Process{FrameHeader: h(41, 2), Cmdline: "/usr/bin/helper\nwith newline"}))
	must(w.WriteFrame(&capture.Exit{FrameHeader: h(41, 6)}))
	for i, us := range []int64{4, 1, 10, 3, 2} {
		must(w.AddMark(Start+int64(i+1)*1e6, 40, us*1000, "gtk", "frame", ""))
	}
	must(w.AddMark(Start+8e6, 41, 250_000, "app", "load", "config"))
	must(w.DefineCounters(h(-1, 0), []capture.Counter{
		{Category: "CPU Percent", Name: "Total", ID: 1, Type: capture.CounterDouble, Value: capture.DoubleValue(0)},
		{Category: "Demo", Name: "Constant", ID: 2, Type: capture.CounterInt64, Value: capture.IntValue(7)},
	}))
	for i, v := range []float64{50, 100, 25} {
		must(w.SetCounters(h(-1, int64(i+1)*2), []capture.CounterUpdate{{ID: 1, Value: capture.DoubleValue(v)}}))
	}
	must(w.AddLog(Start+3e6, 40, capture.LogWarning, "Gtk", "theme <missing>"))
	must(w.AddLog(Start+7e6, 41, capture.LogDebug, "app", "line one\nline two"))
	must(w.AddLog(Start+7e6, 41, capture.LogCritical, Hostile[1], Hostile[2]))
	must(w.Close())
	return buf.Bytes()
}

// Sysprof returns the capture Sysprof 3.46's sysprof-cli recorded, kept
// in analyze/testdata.
func Sysprof(tb testing.TB) []byte {
	tb.Helper()
	return readGzip(tb, filepath.Join("..", "..", "analyze", "testdata", "sysprof-cli-3.46-callchain.syscap.gz"))
}

// SysprofGTK returns the capture Sysprof 3.46's sysprof-cli recorded of
// a GTK 4 program (its threads appear as FORK frames only), kept in
// analyze/testdata.
func SysprofGTK(tb testing.TB) []byte {
	tb.Helper()
	return readGzip(tb, filepath.Join("..", "..", "analyze", "testdata", "sysprof-cli-3.46-gtk4.syscap.gz"))
}

// Memprof returns a capture nsprof recorded of the memprof fixture
// (internal/testutils/fixtures/memprof.c, built with the fixture flags):
//
//	NSPROF_MEMPROF_LIB=libnsprof-memprof.so nsprof record --memprof \
//	    --no-perf --no-cpu --no-disk --no-network --no-memory -- ./memprof
//
// 4131 allocations and 4126 frees of two processes, with nsprof's symbol
// bundle, lines and processes files.
func Memprof(tb testing.TB) []byte {
	tb.Helper()
	return readGzip(tb, filepath.Join("testdata", "nsprof-memprof.syscap.gz"))
}

// readGzip returns the decompressed contents of the file at path,
// relative to this package's directory.
func readGzip(tb testing.TB, path string) []byte {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	path = filepath.Join(filepath.Dir(file), path)
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return data
}
