package analyze

import (
	"bytes"
	"strings"
	"testing"

	"nsprof/capture"
)

// TestOffCPUKernelReused: a capture whose off-CPU kernel stacks came from
// the recorder's BPF program counts the intervals that reused a kernel
// stack (nsprof.offcpu.kernel-reused); the profile says how many, and its
// warnings say it beside the switches lost, as report prints them. A
// capture without the key says it does not count them. With switch-ins
// from the program, the intervals ended at a sample come with why.
func TestOffCPUKernelReused(t *testing.T) {
	for _, reused := range []string{"", "3"} {
		var buf bytes.Buffer
		w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: 1})
		if err != nil {
			t.Fatal(err)
		}
		off, err := w.AddJITMap(capture.OffCPUMarker('S'))
		if err != nil {
			t.Fatal(err)
		}
		var stacks, recs []byte
		for i := range int64(4) {
			stacks = capture.AppendStack(stacks, capture.StackRecord{Time: 100 * (i + 1), PID: 10, TID: 10, Addrs: []uint64{capture.ContextUser, off, capture.ContextKernel, 0xffffffff81000000, capture.ContextUser, 0x401000}})
			recs = capture.AppendOffCPU(recs, capture.OffCPU{TID: 10, Time: 100 * (i + 1), Duration: 50, State: 'S'})
		}
		h := capture.FrameHeader{CPU: -1, PID: -1, Time: 500}
		if err := w.AddFileChunk(h, capture.StacksFile, stacks, true); err != nil {
			t.Fatal(err)
		}
		if err := w.AddFileChunk(h, capture.OffCPUFile, recs, true); err != nil {
			t.Fatal(err)
		}
		md := [][2]string{{capture.MetaOffCPU, "1"}, {capture.MetaOffCPUIntervals, "4"}, {capture.MetaOffCPUUnpaired, "1"}, {capture.MetaOffCPUBySample, "2"}}
		if reused != "" {
			// Kernel stacks from the program: its switch-ins too.
			md = append(md, [2]string{capture.MetaOffCPUKernelReused, reused}, [2]string{capture.MetaOffCPUNoKernel, "0"}, [2]string{capture.MetaOffCPUSwitchIns, capture.OffCPUSwitchInsBPF})
		}
		for _, kv := range md {
			if err := w.AddMetadata(500, kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		n, ok := p.OffCPUKernelReused()
		if ok != (reused != "") || (ok && n != 3) {
			t.Errorf("key %q: OffCPUKernelReused() = %d, %v", reused, n, ok)
		}
		var lost, said, bySample int
		hinted := false
		for i, m := range p.Warnings {
			hinted = hinted || strings.Contains(m, "not reported by the kernel's sched_switch tracepoint")
			if strings.Contains(m, "lost one side of 1 context switches") {
				lost = i + 1
			}
			if strings.Contains(m, "2 intervals lost their switch in and end at their thread's next CPU sample") {
				bySample = i + 1
			}
			if strings.Contains(m, "3 of 4 intervals have the kernel stack walked at an earlier switch out") {
				said = i + 1
			}
		}
		if lost == 0 || bySample != lost+1 || (said != 0) != (reused != "") || (said != 0 && said != bySample+1) {
			t.Errorf("key %q: warnings %q; want the lost switches, those ended at a sample, then the reused stacks when counted", reused, p.Warnings)
		}
		// Switch-ins from the BPF program: why they were lost, and
		// what records them.
		if hinted != (reused != "") {
			t.Errorf("key %q: warnings %q: the sched_switch hint said %v, want %v", reused, p.Warnings, hinted, reused != "")
		}
	}
}
