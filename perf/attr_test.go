package perf

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"nsprof/internal/unix"
)

func TestAttrDefaults(t *testing.T) {
	s, err := Options{}.settings(4096, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	a := s.attr(EventCPUClock, false, true)
	if a.Size != uint32(unsafe.Sizeof(a)) || a.Type != typeSoftware || a.Config != configSWCPUClock {
		t.Errorf("size %d type %d config %d", a.Size, a.Type, a.Config)
	}
	if a.Sample != DefaultFrequency || a.Bits&attrFreq == 0 {
		t.Errorf("sample %d bits %#x, want %d Hz", a.Sample, a.Bits, DefaultFrequency)
	}
	want := uint64(attrDisabled | attrInherit | attrMmap | attrMmap2 | attrComm | attrCommExec | attrTask |
		attrSampleIDAll | attrUseClockID | attrBuildID | attrEnableOnExec | attrWatermark | attrFreq)
	if a.Bits != want {
		t.Errorf("bits %#x, want %#x (diff %#x)", a.Bits, want, a.Bits^want)
	}
	if a.Clockid != unix.CLOCK_MONOTONIC || a.Wakeup != DefaultRingPages*4096/4 {
		t.Errorf("clockid %d wakeup %d", a.Clockid, a.Wakeup)
	}
	if a.Sample_type != 0x101a7 || a.Sample_regs_user != 0 || a.Sample_stack_user != 0 {
		t.Errorf("sample_type %#x regs %#x stack %d", a.Sample_type, a.Sample_regs_user, a.Sample_stack_user)
	}
	if f := s.format(); f.SampleType != a.Sample_type || !f.SampleIDAll || f.check() != nil {
		t.Errorf("format %+v", f)
	}
}

func TestAttrOptions(t *testing.T) {
	s, err := Options{Event: EventCycles, Period: 4000, UserStack: 8192, ExcludeKernel: true,
		ExcludeKernelCallchain: true, NoBuildID: true, WakeupEvents: 10, MaxCallchain: 32}.settings(4096, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	a := s.attr(EventCycles, true, false)
	if a.Type != typeHardware || a.Config != configHWCycles || a.Sample != 4000 || a.Bits&attrFreq != 0 {
		t.Errorf("type %d config %d sample %d bits %#x", a.Type, a.Config, a.Sample, a.Bits)
	}
	for _, bit := range []uint64{attrExcludeKernel, attrExcludeCallchainK, attrExcludeIdle} {
		if a.Bits&bit == 0 {
			t.Errorf("bit %#x missing from %#x", bit, a.Bits)
		}
	}
	for _, bit := range []uint64{attrBuildID, attrInherit, attrEnableOnExec, attrWatermark} {
		if a.Bits&bit != 0 {
			t.Errorf("bit %#x set in %#x", bit, a.Bits)
		}
	}
	if a.Wakeup != 10 || a.Sample_max_stack != 32 || s.RingPages != DefaultStackRingPages {
		t.Errorf("wakeup %d max stack %d ring pages %d", a.Wakeup, a.Sample_max_stack, s.RingPages)
	}
	if a.Sample_type&(sampleRegsUser|sampleStackUser) == 0 || a.Sample_regs_user != 0xff01ff || a.Sample_stack_user != 8192 {
		t.Errorf("sample_type %#x regs %#x stack %d", a.Sample_type, a.Sample_regs_user, a.Sample_stack_user)
	}
	if s.attr(EventCPUClock, true, false).Bits&attrExcludeIdle == 0 {
		t.Error("system-wide events should exclude idle by default")
	}
	s.IncludeIdle = true
	if s.attr(EventCPUClock, true, false).Bits&attrExcludeIdle != 0 {
		t.Error("IncludeIdle ignored")
	}
}

func TestAttrInvalid(t *testing.T) {
	for _, tc := range []struct {
		o      Options
		goarch string
		want   string
	}{
		{Options{Frequency: 100, Period: 100}, "amd64", "exclusive"},
		{Options{UserStack: 100}, "amd64", "multiple of 8"},
		{Options{UserStack: MaxUserStack + 8}, "amd64", "multiple of 8"},
		{Options{UserStack: 8192}, "riscv64", "registers of riscv64"},
		{Options{UserStack: 65528, RingPages: 8}, "amd64", "cannot hold"},
		{Options{RingPages: 3}, "amd64", "power of two"},
		{Options{WakeupBytes: 1, WakeupEvents: 1}, "amd64", "exclusive"},
		{Options{WakeupBytes: DefaultRingPages * 4096}, "amd64", "outside"},
		{Options{Event: EventContextSwitches + 1}, "amd64", "unknown event"},
	} {
		if _, err := tc.o.settings(4096, tc.goarch); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0-1\n": {0, 1}, "0-2,5,7-8": {0, 1, 2, 5, 7, 8}} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a", "3-1", "1,0", "0-", "99999"} {
		if got, err := parseCPUList(in); err == nil {
			t.Errorf("%q: %v, want an error", in, got)
		}
	}
}

// The events perf record -e names map to the kernel's types and configs
// (include/uapi/linux/perf_event.h), aliases included.
func TestParseEvent(t *testing.T) {
	for _, c := range []struct {
		name   string
		ev     Event
		typ    uint32
		config uint64
		hw     bool
	}{
		{"cpu-clock", EventCPUClock, 1, 0, false},
		{"task-clock", EventTaskClock, 1, 1, false},
		{"page-faults", EventPageFaults, 1, 2, false},
		{"faults", EventPageFaults, 1, 2, false},
		{"context-switches", EventContextSwitches, 1, 3, false},
		{"cs", EventContextSwitches, 1, 3, false},
		{"cycles", EventCycles, 0, 0, true},
		{"cpu-cycles", EventCycles, 0, 0, true},
		{"instructions", EventInstructions, 0, 1, true},
		{"cache-misses", EventCacheMisses, 0, 3, true},
		{"branch-misses", EventBranchMisses, 0, 5, true},
	} {
		ev, err := ParseEvent(c.name)
		if err != nil || ev != c.ev {
			t.Errorf("ParseEvent(%q) = %v, %v; want %v", c.name, ev, err, c.ev)
			continue
		}
		s, err := Options{Event: ev}.settings(4096, "amd64")
		if err != nil {
			t.Fatal(err)
		}
		if a := s.attr(ev, false, false); a.Type != c.typ || a.Config != c.config || ev.Hardware() != c.hw {
			t.Errorf("%s: type %d config %d hardware %v", c.name, a.Type, a.Config, ev.Hardware())
		}
	}
	if _, err := ParseEvent("sched:sched_switch"); err == nil || !strings.Contains(err.Error(), "cpu-clock, cycles, task-clock") {
		t.Errorf("unknown event: %v", err)
	}
}

// TestTracepointStack: the hits of tracepoints with stacks copy
// TracepointStack bytes of stack when it is below UserStack; the main
// event copies UserStack.
func TestTracepointStack(t *testing.T) {
	for _, c := range []struct{ user, tp, main, hit uint32 }{
		{512, 256, 512, 256},
		{512, 0, 512, 512},
		{128, 256, 128, 128},
	} {
		s, err := Options{UserStack: c.user, TracepointStack: c.tp}.settings(4096, "amd64")
		if err != nil {
			t.Fatal(err)
		}
		if a := s.attr(EventCPUClock, false, false); a.Sample_stack_user != c.main {
			t.Errorf("UserStack %d TracepointStack %d: main event copies %d, want %d", c.user, c.tp, a.Sample_stack_user, c.main)
		}
		for _, user := range []bool{false, true} {
			if a := s.tracepointAttr(1, true, user, false, false); a.Sample_stack_user != c.hit {
				t.Errorf("UserStack %d TracepointStack %d: hit copies %d, want %d", c.user, c.tp, a.Sample_stack_user, c.hit)
			}
		}
	}
	if _, err := (Options{UserStack: 512, TracepointStack: 100}).settings(4096, "amd64"); err == nil {
		t.Error("TracepointStack 100 accepted")
	}
}
