package testcaptures

import (
	"testing"

	"nsprof/capture"
)

// OffCPU returns a capture of process 10 ("server") recorded with
// --off-cpu and --blocking at 1000 Hz of cpu-clock: two CPU samples in
// "work", thread 11 off the CPU for 7 ms in "wait" (sleeping) and thread
// 10 blocked 9 ms in read(2) from "load" (a blocking mark of fd 3); names
// from a symbol bundle.
func OffCPU(tb testing.TB) []byte {
	tb.Helper()
	buf, w, must, h := serverAt1kHz(tb)
	off, err := w.AddJITMap(capture.OffCPUMarker('S'))
	must(err)
	read, err := w.AddJITMap(capture.BlockingMarker("read"))
	must(err)
	entry, syms := serverFunctions("main", "work", "wait", "load")
	for i := range 2 {
		must(w.AddSample(Start+int64(i+1)*1e6, 0, 10, 10, []uint64{capture.ContextUser, entry["work"] + 0x10, entry["main"] + 0x20}))
	}
	var stacks []byte
	stacks = capture.AppendStack(stacks, capture.StackRecord{Time: Start + 3e6, PID: 10, TID: 11, CPU: 1,
		Addrs: []uint64{capture.ContextUser, off, entry["wait"] + 0x10, entry["main"] + 0x20}})
	stacks = capture.AppendStack(stacks, capture.StackRecord{Time: Start + 4e6, PID: 10, TID: 10,
		Addrs: []uint64{capture.ContextUser, read, entry["load"] + 0x10, entry["main"] + 0x20}})
	must(w.AddFileChunk(h(5e6), capture.StacksFile, stacks, true))
	must(w.AddFileChunk(h(5e6), capture.OffCPUFile, capture.AppendOffCPU(nil, capture.OffCPU{TID: 11, Time: Start + 3e6, Duration: 7e6, State: 'S'}), true))
	must(w.AddMark(Start+4e6, 10, 9e6, capture.BlockingGroup, "read", "fd 3"))
	bundle, err := capture.EncodeSymbols(syms)
	must(err)
	must(w.AddFileGzip(h(9e6), capture.SymbolsFile, bundle))
	must(w.Close())
	return buf.Bytes()
}
