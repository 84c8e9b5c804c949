package testcaptures

import (
	"bytes"
	"fmt"
	"testing"

	"nsprof/capture"
)

// SameProgram returns a capture of pids processes (1 to pids) that each
// map one program, /bin/p, at 0x400000 (with build-id buildID, none when
// empty) and take one sample at each of addrs addresses 16 bytes apart;
// the bundle names address i of process pid f_PID_I when named says so
// (f_I when shared is set: the same name in every process), and the
// others not at all. Many processes of one program, in frame order
// interleaved by nothing: the shape of a system-wide capture of a build.
func SameProgram(tb testing.TB, pids, addrs int, buildID string, shared bool, named func(pid int32, i int) bool) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := newWriter(tb, &buf)
	must := mustf(tb)
	var syms []capture.Symbol
	for pid := int32(1); pid <= int32(pids); pid++ {
		h := capture.FrameHeader{PID: pid, Time: Start, CPU: -1}
		must(w.WriteFrame(&capture.Process{FrameHeader: h, Cmdline: fmt.Sprintf("/bin/p%d", pid)}))
		must(w.WriteFrame(&capture.Map{FrameHeader: h, Start: 0x400000, End: 0x400000 + uint64(addrs)*0x10, Filename: "/bin/p", BuildID: buildID}))
		for i := range addrs {
			a := 0x400000 + uint64(i)*0x10
			if named(pid, i) {
				name := fmt.Sprintf("f_%d_%d", pid, i)
				if shared {
					name = fmt.Sprintf("f_%d", i)
				}
				syms = append(syms, capture.Symbol{PID: pid, Begin: a, End: a + 0xf, Name: name})
			}
			must(w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pid, Time: Start + int64(1+i), CPU: 0}, TID: pid, Addrs: []uint64{capture.ContextUser, a}}))
		}
	}
	b, err := capture.EncodeSymbols(syms)
	must(err)
	must(w.AddSymbolsFile(capture.FrameHeader{PID: -1, CPU: -1, Time: Start + 1<<20}, b))
	must(w.Close())
	return buf.Bytes()
}
