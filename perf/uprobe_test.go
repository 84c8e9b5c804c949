package perf

import "testing"

// TestUprobeAttrLayout: a probe's samples carry only the fields it asks
// for, whatever the main event records (here nsprof record's default: a
// 512-byte stack copy with the frame registers, and tracepoints with raw
// data): no registers or raw data ever, a callchain only with Stack and a
// user stack (of 8 bytes) only with CallSite. Each field costs every hit;
// an empty user stack cost a quarter of a microsecond a hit on a VM.
func TestUprobeAttrLayout(t *testing.T) {
	s, err := Options{UserStack: 512, FrameRegs: true}.settings(4096, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	s.tpIDs = []uint64{1}
	if st := s.format().SampleType; st&(sampleRegsUser|sampleStackUser|sampleRaw|sampleCallchain) != sampleRegsUser|sampleStackUser|sampleRaw|sampleCallchain {
		t.Fatalf("main layout %#x lacks the fields the probes must drop", st)
	}
	const base = sampleIdentifier | sampleIP | sampleTID | sampleTime | sampleCPU | samplePeriod
	for _, c := range []struct {
		u     Uprobe
		st    uint64
		stack uint32
	}{
		{Uprobe{}, base, 0},
		{Uprobe{Return: true}, base, 0},
		{Uprobe{CallSite: true}, base | sampleStackUser, 8},
		{Uprobe{Stack: true}, base | sampleCallchain, 0},
		{Uprobe{Stack: true, CallSite: true}, base | sampleCallchain | sampleStackUser, 8},
	} {
		a := s.uprobeAttr(c.u, 7, true, 4096)
		if a.Sample_type != c.st || a.Sample_stack_user != c.stack || a.Sample_regs_user != 0 {
			t.Errorf("%+v: sample_type %#x, stack %d, regs %#x; want %#x, %d, 0", c.u, a.Sample_type, a.Sample_stack_user, a.Sample_regs_user, c.st, c.stack)
		}
		if f := s.uprobeFormat(c.u); f.SampleType != a.Sample_type || f.RegsUser != 0 || !f.SampleIDAll {
			t.Errorf("%+v: format %+v does not describe sample_type %#x", c.u, f, a.Sample_type)
		}
		if c.u.Stack && a.Bits&attrExcludeCallchainK == 0 {
			t.Errorf("%+v: callchain includes the kernel's", c.u)
		}
	}
}
