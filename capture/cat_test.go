package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// child builds a capture as an instrumented child would write it: its own
// JIT names and counter ids (which collide with the parent's), namespace pids.
func child(t *testing.T, start int64) []byte {
	var buf bytes.Buffer
	w, err := NewWriterWithOptions(&buf, WriterOptions{StartTime: start, Clock: func() int64 { return start + 500 }})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := w.AddJITMap("child_fn")
	id, _ := w.RequestCounters(1)
	h := FrameHeader{CPU: 0, PID: 1, Time: start + 10}
	w.DefineCounters(h, []Counter{{Category: "Child", Name: "Iterations", ID: id, Type: CounterInt64}})
	w.SetCounters(h, []CounterUpdate{{ID: id, Value: IntValue(42)}})
	w.WriteFrame(&Sample{FrameHeader: h, TID: 2, Addrs: []uint64{a, 0x401000, ContextUser}})
	w.WriteFrame(&Fork{FrameHeader: h, ChildPID: 3})
	w.AddMark(start+20, 1, 1000, "child", "work", "")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCatRemapsAndTranslates runs for Cat and for CatBytes, which reads
// the JIT names only once it meets a JIT address (here before the names,
// which the child's Writer writes when it is closed).
func TestCatRemapsAndTranslates(t *testing.T) {
	for _, how := range []string{"Cat", "CatBytes"} {
		t.Run(how, func(t *testing.T) { testCatRemapsAndTranslates(t, how == "CatBytes") })
	}
}

func testCatRemapsAndTranslates(t *testing.T, inPlace bool) {
	var parent memFile
	w, err := NewWriterWithOptions(&parent, WriterOptions{StartTime: 1000, Clock: func() int64 { return 1200 }})
	if err != nil {
		t.Fatal(err)
	}
	pa, _ := w.AddJITMap("parent_fn")
	pid, _ := w.RequestCounters(1)
	w.DefineCounters(FrameHeader{PID: -1, Time: 1001}, []Counter{{Category: "Parent", Name: "Used", ID: pid}})

	hostOf := map[int32]int32{1: 5001, 2: 5002, 3: 5003}
	src := child(t, 900) // starts earlier, ends later (mark ends at 1920)
	opts := CatOptions{MapPID: func(id int32) int32 { return hostOf[id] }}
	if inPlace {
		err = CatBytes(w, src, opts)
	} else {
		err = Cat(w, bytes.NewReader(src), opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	w.WriteFrame(&Sample{FrameHeader: FrameHeader{PID: 7, Time: 1100}, TID: 7, Addrs: []uint64{pa}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	hdr, frames, err := readAll(t, parent.b)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.StartTime != 900 || hdr.EndTime != 1920 {
		t.Errorf("time range %d..%d, want 900..1920", hdr.StartTime, hdr.EndTime)
	}
	names := map[uint64]string{}
	counters := map[uint32]string{}
	for _, f := range frames {
		switch f := f.(type) {
		case *JITMap:
			for _, e := range f.Entries {
				names[e.Addr] = e.Name
			}
		case *CounterDefine:
			for _, c := range f.Counters {
				if old, dup := counters[c.ID]; dup {
					t.Errorf("counter id %d defined twice (%s, %s)", c.ID, old, c.Name)
				}
				counters[c.ID] = c.Name
			}
		}
	}
	var childSample, parentSample *Sample
	for _, f := range frames {
		switch f := f.(type) {
		case *Sample:
			if f.PID == 5001 {
				childSample = f
			} else {
				parentSample = f
			}
		case *CounterSet:
			if counters[f.Updates[0].ID] != "Iterations" || f.Updates[0].Value.Int64() != 42 {
				t.Errorf("counter value landed on %q", counters[f.Updates[0].ID])
			}
		case *Fork:
			if f.PID != 5001 || f.ChildPID != 5003 {
				t.Errorf("fork %d -> %d, want 5001 -> 5003", f.PID, f.ChildPID)
			}
		}
	}
	if childSample == nil || childSample.TID != 5002 {
		t.Fatalf("child sample not translated: %+v", childSample)
	}
	if names[childSample.Addrs[0]] != "child_fn" || childSample.Addrs[1] != 0x401000 || childSample.Addrs[2] != ContextUser {
		t.Errorf("child addrs %x resolve to %q", childSample.Addrs, names[childSample.Addrs[0]])
	}
	if parentSample == nil || names[parentSample.Addrs[0]] != "parent_fn" {
		t.Errorf("parent JIT address lost")
	}
}

func TestCatFilesKeepsDamagedPrefix(t *testing.T) {
	a := child(t, 100)
	b := child(t, 50)
	cut := b[:len(b)-3]
	var out bytes.Buffer
	err := CatFiles(&out, []io.ReadSeeker{bytes.NewReader(a), bytes.NewReader(cut)}, []string{"a", "b"}, CatOptions{})
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want FormatError", err)
	}
	hdr, frames, rerr := readAll(t, out.Bytes())
	if rerr != nil {
		t.Fatalf("merged output damaged: %v", rerr)
	}
	_, fa, _ := readAll(t, a)
	_, fb, _ := readAll(t, cut)
	if len(frames) != len(fa)+len(fb) {
		t.Errorf("merged %d frames, want %d", len(frames), len(fa)+len(fb))
	}
	if hdr.StartTime != 50 || hdr.EndTime != 1120 {
		t.Errorf("range %d..%d on a pipe, want 50..1120", hdr.StartTime, hdr.EndTime)
	}
}

func TestFilesReassembly(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 10000) // 160 KB: several chunks
	var buf bytes.Buffer
	w, _ := NewWriterWithOptions(&buf, WriterOptions{ByteOrder: binary.BigEndian})
	h := FrameHeader{PID: -1, CPU: -1}
	w.AddFileBytes(h, "/big", big)
	w.AddFileBytes(h, "/empty", nil)
	exact := big[:2*fileChunkSize] // two chunks, the last full
	w.AddFileBytes(h, "/exact", exact)
	w.AddFileGzip(h, "/proc/mounts", []byte("proc /proc proc rw 0 0\n"))
	w.WriteFrame(&FileChunk{FrameHeader: h, Path: "/partial", Data: []byte("no end")})
	w.Close()
	fs := filesOf(t, buf.Bytes())
	if got, _ := fs.Lookup("/big"); !bytes.Equal(got, big) {
		t.Errorf("/big: %d bytes, want %d", len(got), len(big))
	}
	if got, _ := fs.Lookup("/exact"); !bytes.Equal(got, exact) {
		t.Errorf("/exact: %d bytes, want %d", len(got), len(exact))
	}
	if got, err := fs.Lookup("/empty"); err != nil || len(got) != 0 {
		t.Errorf("/empty: %q %v", got, err)
	}
	if got, err := fs.Lookup("/proc/mounts"); err != nil || string(got) != "proc /proc proc rw 0 0\n" {
		t.Errorf("/proc/mounts via .gz: %q %v", got, err)
	}
	if _, err := fs.Lookup("/missing"); err == nil {
		t.Error("missing file found")
	}
	list := fs.List()
	want := []string{"/big", "/empty", "/exact", "/partial", "/proc/mounts.gz"}
	for i, e := range list {
		if e.Path != want[i] {
			t.Fatalf("list %v, want %v", list, want)
		}
		if e.Complete != (e.Path != "/partial") {
			t.Errorf("%s complete=%t", e.Path, e.Complete)
		}
	}
	if w.Count(TypeFileChunk) < 6 {
		t.Errorf("only %d chunks written for 160 KB", w.Count(TypeFileChunk))
	}
}

// memFile is an in-memory seekable file, so the header gets patched.
type memFile struct {
	b   []byte
	off int64
}

func (m *memFile) Write(p []byte) (int, error) {
	n, err := m.WriteAt(p, m.off)
	m.off += int64(n)
	return n, err
}

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if need := int(off) + len(p); need > len(m.b) {
		m.b = append(m.b, make([]byte, need-len(m.b))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += m.off
	case io.SeekEnd:
		off += int64(len(m.b))
	}
	m.off = off
	return off, nil
}

// TestCatFilesMergesPastDamage merges a damaged input, one whose header
// is not a capture's, and good inputs after them: every good input is
// merged whole and the damaged one up to its damage, and the error names
// both bad inputs, the first with its offset.
func TestCatFilesMergesPastDamage(t *testing.T) {
	a, b := child(t, 100), child(t, 50)
	cut := b[:len(b)-3]
	junk := []byte("not a capture, but long enough to hold a header of 256 bytes" + strings.Repeat(".", 300))
	var out bytes.Buffer
	srcs := []io.ReadSeeker{bytes.NewReader(cut), bytes.NewReader(junk), bytes.NewReader(a)}
	err := CatFiles(&out, srcs, []string{"cut.syscap", "junk.syscap", "a.syscap"}, CatOptions{})
	if _, ok := errors.AsType[*FormatError](err); !ok || !strings.Contains(err.Error(), "cut.syscap: ") ||
		!strings.Contains(err.Error(), "at offset") || !strings.Contains(err.Error(), "junk.syscap: ") || strings.Contains(err.Error(), "a.syscap") {
		t.Fatalf("err = %v, want the damage of cut.syscap (with its offset) and junk.syscap", err)
	}
	_, frames, rerr := readAll(t, out.Bytes())
	if rerr != nil {
		t.Fatalf("merged output damaged: %v", rerr)
	}
	_, fa, _ := readAll(t, a)
	_, fcut, _ := readAll(t, cut)
	if len(frames) != len(fa)+len(fcut) {
		t.Errorf("merged %d frames, want %d of a.syscap and %d before the damage of cut.syscap", len(frames), len(fa), len(fcut))
	}
}

// filesOf reads the embedded files of the capture data.
func filesOf(t *testing.T, data []byte) *Files {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := ReadFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
