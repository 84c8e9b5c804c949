package analyze

import (
	"bytes"
	"testing"

	"nsprof/capture"
)

// TestRootMappingNamed: runc's init maps its binary through a detached
// bind mount, which perf names "/": its frames' DSO is the name another
// process maps the same build-id under (the first in order of two),
// else the build-id. The "/" process samples first, so that the frames
// merged at runc's code are named in it.
func TestRootMappingNamed(t *testing.T) {
	const runc, other = "0123456789abcdef0123456789abcdef01234567", "fedcba9876543210fedcba9876543210fedcba98"
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: testStart, EndTime: testStart + 1000})
	if err != nil {
		t.Fatal(err)
	}
	var syms []capture.Symbol
	for _, pr := range []struct {
		pid      int32
		file, id string
	}{{101, "/", runc}, {102, "/", other}, {100, "/usr/bin/runc", runc}, {103, "/usr/sbin/runc", runc}} {
		h := capture.FrameHeader{PID: pr.pid, Time: testStart}
		must(t, w.WriteFrame(&capture.Process{FrameHeader: h, Cmdline: "runc init"}))
		must(t, w.WriteFrame(&capture.Map{FrameHeader: h, Start: 0x400000, End: 0x500000, Filename: pr.file, BuildID: pr.id}))
		must(t, w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pr.pid, Time: testStart + 1}, TID: pr.pid, Addrs: []uint64{capture.ContextUser, 0x401000}}))
		syms = append(syms, capture.Symbol{PID: pr.pid, Begin: 0x401000, End: 0x401100, Name: "nsexec"})
	}
	bundle, err := capture.EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	must(t, w.AddFileGzip(capture.FrameHeader{PID: -1, Time: testStart + 2}, capture.SymbolsFile, bundle))
	must(t, w.Close())
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]string{100: "runc", 101: "runc", 102: "[build-id fedcba987654]", 103: "runc"}
	for _, s := range p.Samples {
		fn := p.Funcs[p.Frames[p.Stack(s.Stack)[0]].Func]
		if fn.Name != "nsexec" || fn.DSO != want[s.PID] {
			t.Errorf("pid %d: %s in %q, want nsexec in %q", s.PID, fn.Name, fn.DSO, want[s.PID])
		}
	}
}
