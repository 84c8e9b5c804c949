package perf

import "testing"

// With user stacks unwound by the reader, the kernel's user callchain is
// left out, as perf record --call-graph dwarf does.
func TestExcludeUserCallchain(t *testing.T) {
	s, err := Options{UserStack: 8192, ExcludeUserCallchain: true}.settings(4096, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	a := s.attr(EventCPUClock, false, false)
	if a.Bits&attrExcludeCallchainU == 0 || a.Sample_stack_user != 8192 || a.Sample_regs_user != 0xff01ff {
		t.Fatalf("bits %#x stack %d regs %#x", a.Bits, a.Sample_stack_user, a.Sample_regs_user)
	}
	s, _ = Options{}.settings(4096, "amd64")
	if a := s.attr(EventCPUClock, false, false); a.Bits&attrExcludeCallchainU != 0 {
		t.Fatal("exclude_callchain_user set by default")
	}
}
