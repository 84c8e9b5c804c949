package record

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"nsprof/internal/testutils"
)

// TestRingLayout compiles preload/memprof.h and checks that the ring
// header's field offsets, the record header's size and the version are
// the ones this package reads.
func TestRingLayout(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	hdr, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "preload", "memprof.h"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "layout.c")
	// The header is copied next to the source, so the build cache keys on it.
	if err := os.WriteFile(filepath.Join(dir, "memprof.h"), hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	code := `#include <stddef.h>
#include <stdio.h>
#include "memprof.h"
#define F(f) printf(#f " %zu\n", offsetof(struct memprof_ring_header, f))
int main(void)
{
	F(size); F(pid); F(tid); F(closed); F(head); F(tail); F(lost);
	F(sampled_untracked); F(tsc_times); F(signal_dropped); F(calls_lost); F(calls_untimed);
	printf("record %zu\nhello %zu\nversion %u\n", sizeof(struct memprof_record), sizeof(struct memprof_hello), MEMPROF_VERSION);
	printf("call %zu kind %d pad %u\n", sizeof(struct memprof_call_record), MEMPROF_REC_CALL, MEMPROF_PAD_BIT);
	return 0;
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testutils.BuildC(t, src)).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("size %d\npid %d\ntid %d\nclosed %d\nhead %d\ntail %d\nlost %d\nsampled_untracked %d\ntsc_times %d\nsignal_dropped %d\ncalls_lost %d\ncalls_untimed %d\nrecord %d\nhello %d\nversion %d\ncall %d kind %d pad %d\n",
		ringOffSize, ringOffPID, ringOffTID, ringOffClosed, ringOffHead, ringOffTail, ringOffLost, ringOffUntracked, ringOffTSCTimes, ringOffSigDrop,
		ringOffCallsLost, ringOffUntimed, recAllocSize, helloSize, ringVersion, recCallSize, recCall, recPadBit)
	if string(out) != want {
		t.Errorf("memprof.h says\n%s\nrecord reads\n%s", out, want)
	}
}

// TestRingRecordIsAllocationFrame compiles preload/memprof.h and checks
// that its allocation record is laid out as Sysprof's ALLOCATION frame
// (SysprofCaptureFrame then SysprofCaptureAllocation, 48 bytes before
// the addresses), with its type, so that the recorder writes the records
// to the capture as they lie in the ring. The offsets are Sysprof's,
// written out here rather than taken from package capture.
func TestRingRecordIsAllocationFrame(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	hdr, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "preload", "memprof.h"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "memprof.h"), hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	code := `#include <stddef.h>
#include <stdio.h>
#include "memprof.h"
#define F(f) printf(#f " %zu %zu\n", offsetof(struct memprof_record, f), sizeof(((struct memprof_record *)0)->f))
int main(void)
{
	F(len); F(cpu); F(pid); F(time); F(type); F(addr); F(size); F(tid); F(n_addrs);
	printf("size %zu type %d\n", sizeof(struct memprof_record), MEMPROF_REC_ALLOC);
	return 0;
}
`
	src := filepath.Join(dir, "frame.c")
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testutils.BuildC(t, src)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "len 0 2\ncpu 2 2\npid 4 4\ntime 8 8\ntype 16 1\naddr 24 8\nsize 32 8\ntid 40 4\nn_addrs 44 2\nsize 48 type 14\n"
	if string(out) != want {
		t.Errorf("memprof.h lays a record out as\n%s\nSysprof's ALLOCATION frame is\n%s", out, want)
	}
}

// TestMemprofDrainCounts: draining a ring adds what its header counts
// as lost with the ring full and dropped in signal handlers since the
// last drain, and Stats.Summary says both.
func TestMemprofDrainCounts(t *testing.T) {
	mem := make([]uint64, (ringHeaderSize+4096)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), len(mem)*8)
	g := &memRing{mem: b, data: b[ringHeaderSize:]}
	m := &memprof{}
	set := func(lost, dropped uint64) {
		*g.word(ringOffLost) = lost
		*g.word(ringOffSigDrop) = dropped
		if !m.drain(nil, g) {
			t.Fatal("open ring dropped")
		}
	}
	set(3, 5)
	set(4, 9)
	if m.lost != 4 || m.sigDropped != 9 {
		t.Errorf("lost %d, dropped in signal handlers %d; want 4 and 9", m.lost, m.sigDropped)
	}
	st := Stats{Allocations: 10, Frees: 8, AllocLost: m.lost, AllocSignalDropped: m.sigDropped}
	if s := st.Summary("x"); !strings.Contains(s, "10 allocations and 8 frees (13 lost: 4 with rings full, 9 in signal handlers)") {
		t.Errorf("summary %q", s)
	}
}
