package perf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func regs17() []uint64 {
	r := make([]uint64, 17)
	for i := range r {
		r[i] = uint64(100 + i)
	}
	return r
}

func TestDecodeRecord(t *testing.T) {
	stack := bytes.Repeat([]byte{0xab}, 64)
	chain := []uint64{ContextUser, 0x401000, 0x401234}
	bid := []byte("0123456789abcdefghij")
	for _, tc := range []struct {
		name  string
		stack bool // testFormat(stack)
		raw   []byte
		check func(t *testing.T, r *Record)
	}{
		{"sample", false, sampleRecord(10, 11, 1234, chain), func(t *testing.T, r *Record) {
			s := r.Sample
			if s.Identifier != 7 || s.IP != 0x401000 || s.PID != 10 || s.TID != 11 || s.Time != 1234 ||
				s.CPU != 1 || s.Period != 1000000 || !slices.Equal(s.Callchain, chain) || r.Time() != 1234 {
				t.Errorf("got %+v", s)
			}
		}},
		{"sample/regs+stack", true, userSampleRecord(1, 2, 3, chain, regs17(), stack, 40), func(t *testing.T, r *Record) {
			s := &r.Sample
			f := testFormat(true)
			ip, _ := f.UserReg(s, RegX86IP)
			r8, _ := f.UserReg(s, RegX86R8)
			if s.RegsABI != RegsABI64 || len(s.Regs) != 17 || ip != 108 || r8 != 109 {
				t.Errorf("regs abi %d %v: ip %d r8 %d", s.RegsABI, s.Regs, ip, r8)
			}
			if _, ok := f.UserReg(s, RegX86Flags); ok {
				t.Error("FLAGS reported though not in the mask")
			}
			if s.StackSize != 64 || len(s.Stack) != 40 || s.Stack[39] != 0xab {
				t.Errorf("stack size %d, %d bytes", s.StackSize, len(s.Stack))
			}
		}},
		{"sample/kernel thread", true, userSampleRecord(0, 0, 3, chain, nil, nil, 0), func(t *testing.T, r *Record) {
			if s := r.Sample; s.RegsABI != 0 || len(s.Regs) != 0 || len(s.Stack) != 0 || s.StackSize != 0 {
				t.Errorf("got %+v", s)
			}
		}},
		{"mmap", false, record(RecordMmap, MiscUser, idTrailer((&enc{}).u32(5).u32(6).u64(0x1000).u64(0x2000).u64(0x3000).str("/bin/x"), 5, 6, 99, 1, 7).b),
			func(t *testing.T, r *Record) {
				m := r.Mmap
				if m.PID != 5 || m.Addr != 0x1000 || m.Len != 0x2000 || m.PgOff != 0x3000 || string(m.Filename) != "/bin/x" || r.ID.Time != 99 || r.ID.Identifier != 7 {
					t.Errorf("got %+v id %+v", m, r.ID)
				}
			}},
		{"mmap2/build id", false, record(RecordMmap2, MiscUser|MiscMmapBuildID, idTrailer((&enc{}).u32(5).u32(6).u64(0x1000).u64(0x2000).u64(0).
			raw([]byte{20, 0, 0, 0}).raw(bid).u32(5).u32(2).str("/usr/lib/libc.so.6"), 5, 6, 99, 1, 7).b),
			func(t *testing.T, r *Record) {
				m := r.Mmap
				if !bytes.Equal(m.BuildIDBytes(), bid) || m.Ino != 0 || m.Prot != 5 || m.Flags != 2 || string(m.Filename) != "/usr/lib/libc.so.6" {
					t.Errorf("got %+v", m)
				}
			}},
		{"mmap2/inode", false, record(RecordMmap2, MiscUser, idTrailer((&enc{}).u32(5).u32(6).u64(0x1000).u64(0x2000).u64(0).
			u32(8).u32(1).u64(4242).u64(3).u32(5).u32(2).str("//anon"), 5, 6, 99, 1, 7).b),
			func(t *testing.T, r *Record) {
				m := r.Mmap
				if m.BuildIDBytes() != nil || m.Maj != 8 || m.Min != 1 || m.Ino != 4242 || m.InoGeneration != 3 || string(m.Filename) != "//anon" {
					t.Errorf("got %+v", m)
				}
			}},
		{"comm/exec", false, record(RecordComm, MiscCommExec, idTrailer((&enc{}).u32(5).u32(5).str("busy"), 5, 5, 99, 0, 7).b),
			func(t *testing.T, r *Record) {
				if c := r.Comm; !c.Exec || string(c.Comm) != "busy" || c.PID != 5 {
					t.Errorf("got %+v", c)
				}
			}},
		{"fork", false, record(RecordFork, 0, idTrailer((&enc{}).u32(6).u32(5).u32(6).u32(5).u64(98), 6, 6, 98, 0, 7).b),
			func(t *testing.T, r *Record) {
				if k := r.Task; k != (Task{PID: 6, PPID: 5, TID: 6, PTID: 5, Time: 98}) {
					t.Errorf("got %+v", k)
				}
				if pid, tid := r.PIDTID(); pid != 6 || tid != 6 {
					t.Errorf("PIDTID %d/%d", pid, tid)
				}
			}},
		{"lost", false, record(RecordLost, 0, idTrailer((&enc{}).u64(7).u64(12), 0, 0, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				if r.Lost != (Lost{ID: 7, Lost: 12}) || r.ID.CPU != 1 {
					t.Errorf("got %+v %+v", r.Lost, r.ID)
				}
			}},
		{"throttle", false, record(RecordUnthrottle, 0, idTrailer((&enc{}).u64(5).u64(7).u64(8), 0, 0, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				if r.Throttle != (Throttle{Time: 5, ID: 7, StreamID: 8}) {
					t.Errorf("got %+v", r.Throttle)
				}
			}},
		{"lost samples", false, record(RecordLostSamples, 0, idTrailer((&enc{}).u64(3), 0, 0, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				if r.LostSamples.Lost != 3 {
					t.Errorf("got %+v", r.LostSamples)
				}
			}},
		{"unknown", false, record(RecordType(17), 0, idTrailer(&enc{}, 1, 2, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				if len(r.Raw) != 40 || r.ID.TID != 2 || r.Type.String() != "KSYMBOL" {
					t.Errorf("raw %d bytes, id %+v, %v", len(r.Raw), r.ID, r.Type)
				}
			}},
		{"namespaces", false, record(RecordNamespaces, 0, idTrailer(nsBody(8, 9, 7), 8, 9, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				ns := r.Namespaces
				if ns.PID != 8 || ns.TID != 9 || ns.Count != 7 || r.ID.TID != 9 || len(r.Raw) != 0 {
					t.Fatalf("got %+v, id %+v, raw %d bytes", ns, r.ID, len(r.Raw))
				}
				for i, l := range ns.Links {
					if l != (NamespaceLink{Dev: 4, Inode: 0xf0000000 + uint64(i)}) {
						t.Errorf("link %d: %+v", i, l)
					}
				}
				if ns.Links[NamespaceMnt].Inode != 0xf0000005 || ns.Links[NamespacePID].Inode != 0xf0000003 {
					t.Errorf("mnt %+v, pid %+v", ns.Links[NamespaceMnt], ns.Links[NamespacePID])
				}
			}},
		{"namespaces of a later kernel", false, record(RecordNamespaces, 0, idTrailer(nsBody(8, 8, 9), 8, 8, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				if ns := r.Namespaces; ns.Count != 9 || ns.Links[NamespaceCgroup].Inode != 0xf0000006 {
					t.Errorf("got %+v", ns)
				}
			}},
		{"namespaces of an earlier kernel", false, record(RecordNamespaces, 0, idTrailer(nsBody(8, 8, 2), 8, 8, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				if ns := r.Namespaces; ns.Count != 2 || ns.Links[NamespaceUTS].Inode != 0xf0000001 || ns.Links[NamespaceIPC] != (NamespaceLink{}) {
					t.Errorf("got %+v", ns)
				}
			}},
		{"switch", false, record(RecordSwitch, MiscSwitchOut, idTrailer(&enc{}, 1, 2, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				if len(r.Raw) != 0 || r.ID.TID != 2 || r.ID.Time != 5 || r.Misc&MiscSwitchOut == 0 {
					t.Errorf("raw %d bytes, id %+v, misc %#x", len(r.Raw), r.ID, r.Misc)
				}
			}},
		{"switch cpu wide", false, record(RecordSwitchCPUWide, 0, idTrailer((&enc{}).u32(3).u32(4), 1, 2, 5, 1, 7).b),
			func(t *testing.T, r *Record) {
				if r.Switch != (Switch{NextPrevPID: 3, NextPrevTID: 4}) || r.ID.TID != 2 {
					t.Errorf("got %+v %+v", r.Switch, r.ID)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec Record
			if err := DecodeRecord(&rec, tc.raw, testFormat(tc.stack)); err != nil {
				t.Fatal(err)
			}
			if want := RecordType(tc.raw[0]); rec.Type != want {
				t.Fatalf("type %v, want %v", rec.Type, want)
			}
			tc.check(t, &rec)
		})
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	long := sampleRecord(1, 2, 3, nil)
	bigStack := userSampleRecord(1, 2, 3, nil, regs17(), make([]byte, 8), 8)
	binary.NativeEndian.PutUint64(bigStack[8+48+8+8+17*8:], 1000)
	badChain := slices.Clone(long)
	copy(badChain[8+48:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}) // nr
	for _, tc := range []struct {
		name  string
		stack bool
		raw   []byte
		f     *Format
		want  string
	}{
		{"short header", false, []byte{9, 0, 0, 0}, nil, "shorter than its header"},
		{"size mismatch", false, append(slices.Clone(long), 0, 0, 0, 0, 0, 0, 0, 0), nil, "does not match"},
		{"callchain", false, badChain, nil, "callchain of"},
		{"trailing", false, record(RecordSample, 0, append(slices.Clone(long[8:]), make([]byte, 8)...)), nil, "8 bytes left"},
		{"short sample", false, record(RecordSample, 0, make([]byte, 16)), nil, "too short"},
		{"regs", true, userSampleRecord(1, 2, 3, nil, []uint64{1, 2}, nil, 0), nil, "user registers exceed"},
		{"stack", true, bigStack, nil, "user stack of 1000 bytes exceeds"},
		{"dyn size", true, userSampleRecord(1, 2, 3, nil, regs17(), make([]byte, 8), 9), nil, "dyn_size 9 exceeds size 8"},
		{"build id", false, record(RecordMmap2, MiscMmapBuildID, idTrailer((&enc{}).u32(5).u32(6).u64(1).u64(2).u64(0).
			raw([]byte{21, 0, 0, 0}).raw(make([]byte, 20)).u32(5).u32(2).str("/x"), 5, 6, 99, 1, 7).b), nil, "build id size 21"},
		{"mmap body", false, record(RecordMmap, 0, idTrailer((&enc{}).u32(5), 5, 6, 99, 1, 7).b), nil, "body too short"},
		{"trailer", false, record(RecordExit, 0, make([]byte, 16)), nil, "sample_id trailer"},
		{"namespaces count", false, record(RecordNamespaces, 0, idTrailer((&enc{}).u32(1).u32(1).u64(1<<62).u64(4).u64(5), 1, 1, 5, 1, 7).b), nil, "4611686018427387904 namespaces do not fit in the 16 bytes"},
		{"namespaces body", false, record(RecordNamespaces, 0, idTrailer((&enc{}).u32(1), 1, 1, 5, 1, 7).b), nil, "body too short"},
		{"unsupported", false, long, &Format{SampleType: 1 << 4}, "unsupported sample_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testFormat(tc.stack)
			if tc.f != nil {
				f = *tc.f
			}
			rec := Record{Type: RecordComm}
			err := DecodeRecord(&rec, tc.raw, f)
			var fe *FormatError
			if !errors.As(err, &fe) || fe.CPU != -1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a FormatError containing %q", err, tc.want)
			}
			if rec.Type != RecordNone {
				t.Errorf("type %v after error", rec.Type)
			}
		})
	}
}

// TestDecodeRecordReuse checks that decoding into a used Record neither
// allocates nor keeps stale values.
func TestDecodeRecordReuse(t *testing.T) {
	f := testFormat(true)
	big := userSampleRecord(1, 2, 3, make([]uint64, 40), regs17(), make([]byte, 64), 64)
	small := userSampleRecord(4, 5, 6, []uint64{1}, nil, nil, 0)
	var rec Record
	if err := DecodeRecord(&rec, big, f); err != nil {
		t.Fatal(err)
	}
	if err := DecodeRecord(&rec, small, f); err != nil {
		t.Fatal(err)
	}
	if s := rec.Sample; len(s.Callchain) != 1 || len(s.Regs) != 0 || len(s.Stack) != 0 || s.StackSize != 0 || s.PID != 4 {
		t.Errorf("stale sample %+v", s)
	}
	allocs := testing.AllocsPerRun(100, func() {
		DecodeRecord(&rec, big, f)
		DecodeRecord(&rec, small, f)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per decode", allocs)
	}
}

func TestRecordTypeString(t *testing.T) {
	for typ, want := range map[RecordType]string{RecordSample: "SAMPLE", RecordMmap2: "MMAP2", 99: "RecordType(99)"} {
		if got := fmt.Sprint(typ); got != want {
			t.Errorf("%d: %q, want %q", uint32(typ), got, want)
		}
	}
}

// nsBody encodes the body of a NAMESPACES record of task tid of pid with
// n namespaces, each on device 4 with inode 0xf0000000 plus its index.
func nsBody(pid, tid uint32, n int) *enc {
	e := (&enc{}).u32(pid).u32(tid).u64(uint64(n))
	for i := range n {
		e.u64(4).u64(0xf0000000 + uint64(i))
	}
	return e
}
