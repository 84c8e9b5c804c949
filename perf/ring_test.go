package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

const fakePage = 4096

// makeRing builds a ring in memory, like the kernel's: a metadata page and
// a data area of dataSize bytes holding recs from stream position start
// (so start may be past the end of the area), with data_tail at start and
// data_head after the records.
func makeRing(tb testing.TB, cpu, dataSize int, start uint64, recs ...[]byte) *ring {
	tb.Helper()
	words := make([]uint64, (fakePage+dataSize)/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	meta, data := mem[:fakePage], mem[fakePage:]
	pos := start
	for _, r := range recs {
		for i, b := range r {
			data[(pos+uint64(i))%uint64(dataSize)] = b
		}
		pos += uint64(len(r))
	}
	if pos-start > uint64(dataSize) {
		tb.Fatalf("%d bytes of records overflow a %d-byte ring", pos-start, dataSize)
	}
	binary.NativeEndian.PutUint64(meta[metaDataTail:], start)
	binary.NativeEndian.PutUint64(meta[metaDataHead:], pos)
	binary.NativeEndian.PutUint64(meta[metaDataOffset:], fakePage)
	binary.NativeEndian.PutUint64(meta[metaDataSize:], uint64(dataSize))
	rg, err := newRing(cpu, meta, data)
	if err != nil {
		tb.Fatal(err)
	}
	return rg
}

// advanceHead moves data_head as the kernel would after writing n bytes.
func advanceHead(rg *ring, n uint64) {
	atomic.AddUint64(rg.word(metaDataHead), n)
}

func metaTail(rg *ring) uint64 { return atomic.LoadUint64(rg.word(metaDataTail)) }

// fakePoller never blocks: it runs onWait, or reports the deadline.
type fakePoller struct {
	waits  int
	onWait func() error
}

func (p *fakePoller) wait(time.Time, func(int)) error {
	p.waits++
	if p.onWait != nil {
		return p.onWait()
	}
	return os.ErrDeadlineExceeded
}
func (p *fakePoller) wake() error  { return nil }
func (p *fakePoller) close() error { return nil }

func newFakeReader(f Format, p *fakePoller, rings ...*ring) *Reader {
	return newReader(&resources{rings: rings, poll: p}, f, EventCPUClock, false)
}

func commRecord(pid uint32, name string) []byte {
	return record(RecordComm, MiscCommExec, idTrailer((&enc{}).u32(pid).u32(pid).str(name), pid, pid, 1, 0, 7).b)
}

func mmap2Record(pid uint32, name string) []byte {
	return record(RecordMmap2, MiscUser|MiscMmapBuildID, idTrailer((&enc{}).u32(pid).u32(pid).u64(0x1000).u64(0x2000).u64(0).
		raw([]byte{20, 0, 0, 0}).raw([]byte("0123456789abcdefghij")).u32(5).u32(2).str(name), pid, pid, 1, 0, 7).b)
}

func TestRingWrap(t *testing.T) {
	const size = 512
	long := "/usr/lib/x86_64-linux-gnu/" + strings.Repeat("x", 40) + ".so"
	for _, start := range []uint64{
		3*size + size - 24, // the COMM record's body wraps
		size - 4,           // the first header wraps (records are 8-aligned in practice)
		size - 244,         // the MMAP2 record's filename wraps
		0,                  // nothing wraps
	} {
		recs := [][]byte{commRecord(5, "busy"), sampleRecord(5, 5, 2, []uint64{ContextUser, 1, 2, 3}), mmap2Record(5, long)}
		rg := makeRing(t, 1, size, start, recs...)
		r := newFakeReader(testFormat(false), &fakePoller{}, rg)
		var rec Record
		var got []string
		for {
			err := r.ReadInto(&rec)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				t.Fatalf("start %d: %v", start, err)
			}
			if rec.CPU != 1 {
				t.Errorf("cpu %d", rec.CPU)
			}
			switch rec.Type {
			case RecordComm:
				got = append(got, "comm "+string(rec.Comm.Comm))
			case RecordSample:
				if !slices.Equal(rec.Sample.Callchain, []uint64{ContextUser, 1, 2, 3}) {
					t.Errorf("start %d: callchain %v", start, rec.Sample.Callchain)
				}
				got = append(got, "sample")
			case RecordMmap2:
				if string(rec.Mmap.BuildIDBytes()) != "0123456789abcdefghij" {
					t.Errorf("start %d: build id %q", start, rec.Mmap.BuildIDBytes())
				}
				got = append(got, "mmap2 "+string(rec.Mmap.Filename))
			}
		}
		want := []string{"comm busy", "sample", "mmap2 " + long}
		if !slices.Equal(got, want) {
			t.Errorf("start %d: got %q, want %q", start, got, want)
		}
		if tail, head := metaTail(rg), rg.head; tail != head || tail <= start {
			t.Errorf("start %d: data_tail %d, data_head %d", start, tail, head)
		}
	}
}

func TestRingMalformed(t *testing.T) {
	zero := make([]byte, 8) // a header of size 0
	tooBig := record(RecordComm, 0, make([]byte, 16))
	binary.NativeEndian.PutUint16(tooBig[6:], 200)
	badBody := record(RecordFork, 0, make([]byte, 8))
	for _, tc := range []struct {
		name string
		recs [][]byte
		want string
		next bool // reading resumes with the next record
	}{
		{"size 0", [][]byte{zero, commRecord(1, "a")}, "record size 0", false},
		{"past head", [][]byte{tooBig}, "record size 200", false},
		{"body", [][]byte{badBody, commRecord(1, "a")}, "FORK", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := makeRing(t, 3, 256, 512+64, tc.recs...)
			r := newFakeReader(testFormat(false), &fakePoller{}, rg)
			var rec Record
			err := r.ReadInto(&rec)
			var fe *FormatError
			if !errors.As(err, &fe) || fe.CPU != 3 || fe.Offset != 64 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a FormatError at cpu 3 offset 64 about %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "cpu 3 offset 0x40") {
				t.Errorf("message %q does not name cpu and offset", err)
			}
			err = r.ReadInto(&rec)
			if tc.next && (err != nil || rec.Type != RecordComm) {
				t.Errorf("after the bad record: %v %v", rec.Type, err)
			}
			if !tc.next && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("after a bad header: %v %v, want the ring discarded", rec.Type, err)
			}
		})
	}
}

// TestReaderDrainsAllRings checks that one wakeup serves every ring and
// that records arriving later are read after the next wait.
func TestReaderDrainsAllRings(t *testing.T) {
	r0 := makeRing(t, 0, 256, 0, commRecord(1, "a"), commRecord(1, "b"))
	r1 := makeRing(t, 1, 256, 0, commRecord(2, "c"))
	late := commRecord(2, "d")
	p := &fakePoller{}
	p.onWait = func() error {
		if p.waits == 1 {
			copy(r1.data[r1.head&r1.mask:], late)
			advanceHead(r1, uint64(len(late)))
			return nil
		}
		return os.ErrDeadlineExceeded
	}
	r := newFakeReader(testFormat(false), p, r0, r1)
	var got []string
	var rec Record
	for r.ReadInto(&rec) == nil {
		got = append(got, string(rec.Comm.Comm))
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) || p.waits != 2 {
		t.Errorf("got %q after %d waits, want %q after 2", got, p.waits, want)
	}
}

func TestUserRegsMask(t *testing.T) {
	if got := userRegsMask("amd64", false); got != 0xff01ff {
		t.Errorf("amd64 mask %#x", got)
	}
	if got := userRegsMask("amd64", true); got != 1<<RegX86BP|1<<RegX86SP|1<<RegX86IP {
		t.Errorf("amd64 frame mask %#x", got)
	}
	if got := userRegsMask("arm64", false); got != 1<<33-1 {
		t.Errorf("arm64 mask %#x", got)
	}
	if got := userRegsMask("mips", false); got != 0 {
		t.Errorf("mips mask %#x", got)
	}
}

// benchRing fills a dataSize ring with copies of rec, padded to the ring
// size by one unknown record, starting off bytes into the ring so that one
// record wraps. Each reader wait "writes" another full ring.
func benchReader(b *testing.B, f Format, rec []byte) *Reader {
	const dataSize = 1 << 20
	var recs [][]byte
	n := 0
	for n+len(rec) <= dataSize-64 {
		recs = append(recs, rec)
		n += len(rec)
	}
	recs = append(recs, record(RecordType(14), 0, make([]byte, dataSize-n-headerSize)))
	rg := makeRing(b, 0, dataSize, 100, recs...)
	p := &fakePoller{onWait: func() error { advanceHead(rg, dataSize); return nil }}
	b.SetBytes(int64(len(rec)))
	return newFakeReader(f, p, rg)
}

func BenchmarkReadInto(b *testing.B) {
	chain := make([]uint64, 16)
	for i := range chain {
		chain[i] = 0x400000 + uint64(i)*0x100
	}
	b.Run("callchain", func(b *testing.B) {
		r := benchReader(b, testFormat(false), sampleRecord(1, 2, 3, chain))
		var rec Record
		b.ReportAllocs()
		for b.Loop() {
			if err := r.ReadInto(&rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stack8k", func(b *testing.B) {
		r := benchReader(b, testFormat(true), userSampleRecord(1, 2, 3, chain, regs17(), make([]byte, 8192), 8192))
		var rec Record
		b.ReportAllocs()
		for b.Loop() {
			if err := r.ReadInto(&rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestReaderMergesRingsByTime: the records read together come out in
// time order across rings, the lowest CPU first among equal times, so an
// exec recorded on one CPU comes before the samples taken after it on
// another; a record without a time (0) comes out as soon as it is the
// next of its ring.
func TestReaderMergesRingsByTime(t *testing.T) {
	comm := func(name string, time uint64) []byte {
		return record(RecordComm, 0, idTrailer((&enc{}).u32(1).u32(1).str(name), 1, 1, time, 0, 7).b)
	}
	sample := func(time uint64) []byte { return sampleRecord(1, 1, time, []uint64{ContextUser, 1}) }
	r0 := makeRing(t, 0, 512, 0, sample(30), sample(40), comm("x", 50))
	r1 := makeRing(t, 1, 512, 0, comm("exec", 10), sample(35), comm("untimed", 0), sample(60))
	r2 := makeRing(t, 2, 512, 0, sample(40))
	r := newFakeReader(testFormat(false), &fakePoller{}, r0, r1, r2)
	var got []string
	var rec Record
	for r.ReadInto(&rec) == nil {
		name := fmt.Sprintf("sample@%d", rec.Sample.Time)
		if rec.Type == RecordComm {
			name = string(rec.Comm.Comm) + fmt.Sprintf("@%d", rec.Time())
		}
		got = append(got, fmt.Sprintf("cpu%d:%s", rec.CPU, name))
	}
	want := []string{"cpu1:exec@10", "cpu0:sample@30", "cpu1:sample@35", "cpu1:untimed@0", "cpu0:sample@40", "cpu2:sample@40", "cpu0:x@50", "cpu1:sample@60"}
	if !slices.Equal(got, want) {
		t.Errorf("records\n got %q\nwant %q", got, want)
	}
}

// The reader tells the kernel what it read (data_tail) once it read the
// records up to the head snapshot, or a sixteenth of the ring since it
// last told it: not after each record, whose store moved the cache line
// the kernel writes data_head to at every record from CPU to CPU.
func TestRingReleasesInBatches(t *testing.T) {
	const size = 4096 // released at least every 256 bytes
	var recs [][]byte
	for i := range 12 {
		recs = append(recs, commRecord(uint32(10+i), "busy"))
	}
	const start = 3 * size / 2
	rg := makeRing(t, 1, size, start, recs...)
	r := newFakeReader(testFormat(false), &fakePoller{}, rg)
	var rec Record
	read, told := uint64(start), 0
	for i := range recs {
		if err := r.ReadInto(&rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		read += uint64(len(recs[i]))
		tail := metaTail(rg)
		switch {
		case i == len(recs)-1 && tail != read:
			t.Fatalf("after the last record of the snapshot: data_tail %d, want %d", tail, read)
		case tail != read && read-tail >= size/publishParts:
			t.Fatalf("after record %d: data_tail %d, %d bytes behind what was read", i, tail, read-tail)
		case tail == read:
			told++
		}
	}
	if told >= len(recs) || told < 2 {
		t.Errorf("data_tail stored after %d of %d records: want fewer than all, more than once", told, len(recs))
	}
	if err := r.ReadInto(&rec); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after the last record: %v", err)
	}
}
