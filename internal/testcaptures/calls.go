package testcaptures

import (
	"bytes"
	"testing"

	"nsprof/capture"
)

// CallArc is one record of a [Calls] capture: Count calls of Callee from
// Caller taking Total ns, Self of them outside instrumented callees.
type CallArc struct {
	Caller, Callee     string
	Count, Total, Self int64
}

// CallArcs are the arcs of [Calls]: fix_f's in two records, as a
// thread's table written twice gives them.
var CallArcs = []CallArc{
	{"main", "run", 1, 30_000_000, 8_800_000},
	{"run", "f", 600_000, 12_000_000, 12_000_000},
	{"run", "f", 400_000, 8_000_000, 8_000_000},
	{"run", "a", 1, 700_000, 100_000},
	{"run", "b", 1, 500_000, 100_000},
	{"a", "g", 600, 600_000, 600_000},
	{"b", "g", 400, 400_000, 400_000},
}

// serverAt1kHz starts a capture of process 10 ("server") and 20 ("evil",
// as [CPU] describes them) recorded at 1000 Hz of cpu-clock, and returns
// it with a function failing tb on an error and the header of a frame of
// process 10 at ns nanoseconds from [Start].
func serverAt1kHz(tb testing.TB) (*bytes.Buffer, *capture.Writer, func(error), func(ns int64) capture.FrameHeader) {
	tb.Helper()
	buf := new(bytes.Buffer)
	w, must := newWriter(tb, buf), mustf(tb)
	h := func(ns int64) capture.FrameHeader { return capture.FrameHeader{CPU: 0, PID: 10, Time: Start + ns} }
	writeServerAndEvil(w, must, h(0), capture.FrameHeader{CPU: 0, PID: 20, Time: Start})
	must(w.AddMetadata(Start, capture.MetaEvent, "cpu-clock"))
	must(w.AddMetadata(Start, capture.MetaFrequency, "1000"))
	return buf, w, must, h
}

// serverFunctions places functions names in process 10, 0x100 bytes
// each from 0x401000, and returns their entries and symbols.
func serverFunctions(names ...string) (map[string]uint64, []capture.Symbol) {
	entry := map[string]uint64{}
	var syms []capture.Symbol
	for i, name := range names {
		a := 0x401000 + uint64(i)*0x100
		entry[name] = a
		syms = append(syms, capture.Symbol{PID: 10, Begin: a, End: a + 0xff, Name: name})
	}
	return entry, syms
}

// Calls returns a capture of process 10 ("server") recorded with
// --calls at 1000 Hz of cpu-clock: four CPU samples (three in f, one in
// g) and the instrumented calls of [CallArcs], timed, in
// capture.CallsFile; names from a symbol bundle.
func Calls(tb testing.TB) []byte {
	tb.Helper()
	buf, w, must, h := serverAt1kHz(tb)
	must(w.AddMetadata(Start, capture.MetaCalls, "1"))
	entry, syms := serverFunctions("main", "run", "f", "g", "a", "b")
	// A call site is 0x20 into its caller; a sample's address 0x10 into
	// its function.
	stack := func(names ...string) []uint64 {
		out := []uint64{capture.ContextUser, entry[names[0]] + 0x10}
		for _, n := range names[1:] {
			out = append(out, entry[n]+0x20)
		}
		return out
	}
	for i, st := range [][]string{{"f", "run", "main"}, {"f", "run", "main"}, {"f", "run", "main"}, {"g", "a", "run", "main"}} {
		must(w.WriteFrame(&capture.Sample{FrameHeader: h(int64(i+1) * 1e6), TID: 10, Addrs: stack(st...)}))
	}
	var file []byte
	for i, a := range CallArcs {
		file = capture.AppendCall(file, capture.Call{
			PID: 10, TID: 10, Time: Start + 5e6 + int64(i),
			Callee: entry[a.Callee], Site: entry[a.Caller] + 0x20,
			Count: a.Count, Total: a.Total, Self: a.Self, Timed: true,
		})
	}
	must(w.AddFileBytes(h(6e6), capture.CallsFile, file))
	must(w.AddMetadata(Start+9e6, capture.MetaCallsArcs, "7"))
	must(w.AddMetadata(Start+9e6, capture.MetaCallsLost, "0"))
	must(w.AddMetadata(Start+9e6, capture.MetaCallsUntimed, "0"))
	bundle, err := capture.EncodeSymbols(syms)
	must(err)
	must(w.AddFileGzip(h(9e6), capture.SymbolsFile, bundle))
	must(w.Close())
	return buf.Bytes()
}
