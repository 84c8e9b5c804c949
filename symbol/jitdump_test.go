package symbol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// jitDump writes a jitdump in byte order bo, as a JIT does: a header, then
// records.
type jitDump struct {
	bo  binary.AppendByteOrder
	buf bytes.Buffer
}

func newJITDump(bo binary.AppendByteOrder) *jitDump {
	d := &jitDump{bo: bo}
	d.u32(jitMagic)
	d.u32(1)             // version
	d.u32(jitHeaderSize) // the header's size
	d.u32(62)            // EM_X86_64
	d.u32(0)             // padding
	d.u32(4242)          // pid
	d.u64(1000)          // timestamp
	d.u64(0)             // flags
	return d
}

func (d *jitDump) u32(v uint32) { d.buf.Write(d.bo.AppendUint32(nil, v)) }
func (d *jitDump) u64(v uint64) { d.buf.Write(d.bo.AppendUint64(nil, v)) }

func (d *jitDump) prefix(id uint32, size int) {
	d.u32(id)
	d.u32(uint32(size))
	d.u64(2000) // timestamp
}

// load appends a code-load record, the code's bytes included.
func (d *jitDump) load(name string, addr, size, index uint64) {
	d.prefix(jitRecCodeLoad, jitLoadFixed+len(name)+1+int(size))
	d.u32(4242) // pid
	d.u32(4243) // tid
	d.u64(addr) // vma
	d.u64(addr) // code address
	d.u64(size)
	d.u64(index)
	d.buf.WriteString(name)
	d.buf.WriteByte(0)
	d.buf.Write(bytes.Repeat([]byte{0xcc}, int(size)))
}

// move appends a code-move record.
func (d *jitDump) move(from, to, size, index uint64) {
	d.prefix(jitRecCodeMove, jitMoveSize)
	d.u32(4242)
	d.u32(4243)
	d.u64(to) // vma
	d.u64(from)
	d.u64(to)
	d.u64(size)
	d.u64(index)
}

// other appends a record of id with n bytes of payload (debug or
// unwinding information, a close).
func (d *jitDump) other(id uint32, n int) {
	d.prefix(id, jitPrefixSize+n)
	d.buf.Write(make([]byte, n))
}

func (d *jitDump) bytes() []byte { return d.buf.Bytes() }

func parseJIT(t *testing.T, b []byte) (*Table, error) {
	t.Helper()
	return ParseJITDump(bytes.NewReader(b), int64(len(b)))
}

// lookupName returns the name t gives addr, "" for none.
func lookupName(t *Table, addr uint64) string {
	s, ok := t.Lookup(addr)
	if !ok {
		return ""
	}
	return s.Name
}

func TestParseJITDump(t *testing.T) {
	for _, bo := range []binary.AppendByteOrder{binary.LittleEndian, binary.BigEndian} {
		d := newJITDump(bo)
		d.load("JS:*outerLoop /app/hot.js:3:19", 0x7f0000001000, 0x200, 1)
		d.other(2, 40) // debug information: skipped
		d.load("LazyCompile:leafWork", 0x7f0000002000, 0x80, 2)
		d.other(4, 24) // unwinding information
		d.load("stale", 0x7f0000003000, 0x40, 3)
		d.load("reused", 0x7f0000003000, 0x40, 4) // the same memory, later code
		d.move(0x7f0000002000, 0x7f0000005000, 0x80, 2)
		d.move(0x7f0000009000, 0x7f000000a000, 0x80, 99) // of no code loaded: nothing
		d.other(3, 0)                                    // close
		tab, err := parseJIT(t, d.bytes())
		if err != nil {
			t.Fatalf("%v: %v", bo, err)
		}
		for addr, want := range map[uint64]string{
			0x7f0000001000: "JS:*outerLoop /app/hot.js:3:19",
			0x7f00000011ff: "JS:*outerLoop /app/hot.js:3:19",
			0x7f0000001200: "",
			0x7f0000002040: "LazyCompile:leafWork",
			0x7f0000003010: "reused",
			0x7f0000005000: "LazyCompile:leafWork",
			0x7f000000a000: "",
		} {
			if got := lookupName(tab, addr); got != want {
				t.Errorf("%v: %#x named %q, want %q", bo, addr, got, want)
			}
		}
		if tab.Len() != 4 {
			t.Errorf("%v: %d symbols, want 4: %v", bo, tab.Len(), tab.All())
		}
	}
}

// A JIT appends to its dump while nsprof reads it: a record cut short is
// the end of what there is to read, not an error.
func TestParseJITDumpBeingWritten(t *testing.T) {
	d := newJITDump(binary.LittleEndian)
	d.load("first", 0x1000, 0x10, 1)
	d.load("second", 0x2000, 0x10, 2)
	whole := d.bytes()
	firstEnd := jitHeaderSize + jitLoadFixed + len("first") + 1 + 0x10
	for _, n := range []int{firstEnd, firstEnd + 3, firstEnd + jitPrefixSize, firstEnd + jitLoadFixed + 2, len(whole) - 1} {
		tab, err := parseJIT(t, whole[:n])
		if err != nil {
			t.Errorf("cut at %d of %d: %v", n, len(whole), err)
			continue
		}
		if got := lookupName(tab, 0x1008); got != "first" {
			t.Errorf("cut at %d: 0x1008 named %q, want first", n, got)
		}
		if got := lookupName(tab, 0x2008); got != "" {
			t.Errorf("cut at %d: 0x2008 named %q from a record not yet whole", n, got)
		}
	}
}

func TestParseJITDumpErrors(t *testing.T) {
	good := newJITDump(binary.LittleEndian)
	good.load("kept", 0x1000, 0x10, 1)
	header := good.bytes()[:jitHeaderSize]
	with := func(edit func(b []byte)) []byte {
		b := bytes.Clone(good.bytes())
		edit(b)
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		kept bool // the names before the damage come back with the error
	}{
		{"empty", nil, false},
		{"short header", header[:20], false},
		{"magic", with(func(b []byte) { b[0] = 'X' }), false},
		{"version", with(func(b []byte) { binary.LittleEndian.PutUint32(b[4:], 2) }), false},
		{"header size", with(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 8) }), false},
		{"record shorter than its prefix", append(bytes.Clone(good.bytes()), 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), true},
		{"load without room for a name", with(func(b []byte) {
			binary.LittleEndian.PutUint32(b[jitHeaderSize+4:], jitLoadFixed)
		}), false},
		{"name not terminated", with(func(b []byte) {
			name := jitHeaderSize + jitLoadFixed
			binary.LittleEndian.PutUint32(b[jitHeaderSize+4:], uint32(jitLoadFixed+4))
			copy(b[name:], "kept")
		}), false},
	} {
		tab, err := parseJIT(t, tc.data)
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %v, want a *FormatError", tc.name, err)
			continue
		}
		if got := lookupName(tab, 0x1000); (got == "kept") != tc.kept {
			t.Errorf("%s: names before the damage: %q (want kept: %v)", tc.name, got, tc.kept)
		}
	}
}

func TestIsJITDumpPath(t *testing.T) {
	for name, want := range map[string]bool{
		"/tmp/jit-1234.dump":           true,
		"/home/u/app/jit-7.dump":       true,
		"jit-7.dump":                   true,
		"/tmp/jit-.dump":               false,
		"/tmp/jit-12a.dump":            false,
		"/tmp/jit-99999999999999.dump": false,
		"/tmp/perf-1234.map":           false,
		"/tmp/jit-1234.dump.old":       false,
		"/usr/lib/libjit-1.dump.so":    false,
	} {
		if got := IsJITDumpPath(name); got != want {
			t.Errorf("IsJITDumpPath(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMergeTables(t *testing.T) {
	a := NewTable([]Symbol{{Name: "dump", Addr: 0x1000, Size: 0x10}})
	b := NewTable([]Symbol{{Name: "map", Addr: 0x1000, Size: 0x10}, {Name: "map only", Addr: 0x2000, Size: 0x10}})
	m := Merge(a, b)
	if got := lookupName(m, 0x1000); got != "dump" {
		t.Errorf("0x1000 named %q, want dump (the first table's)", got)
	}
	if got := lookupName(m, 0x2000); got != "map only" {
		t.Errorf("0x2000 named %q, want map only", got)
	}
	if Merge(nil, b) != b || Merge(a, nil) != a {
		t.Error("Merge with a nil table is not the other table")
	}
}

func FuzzParseJITDump(f *testing.F) {
	d := newJITDump(binary.LittleEndian)
	d.load("JS:*f", 0x1000, 0x20, 1)
	d.move(0x1000, 0x3000, 0x20, 1)
	d.other(2, 8)
	f.Add(d.bytes())
	f.Add(newJITDump(binary.BigEndian).bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, _ := ParseJITDump(bytes.NewReader(b), int64(len(b)))
		// Each name is a record of a load or a move, 57 bytes at least.
		if tab.Len() > len(b)/jitLoadFixed {
			t.Fatalf("%d names from %d bytes", tab.Len(), len(b))
		}
		for _, s := range tab.All() {
			if s.Size == 0 || s.Addr+s.Size < s.Addr || s.Name == "" {
				t.Fatalf("bad symbol %+v", s)
			}
		}
	})
}

// A dump larger than the parser's window: records read across windows,
// code longer than a window skipped, a name longer than one read whole.
func TestParseJITDumpLarge(t *testing.T) {
	d := newJITDump(binary.LittleEndian)
	const n = 400
	for i := range uint64(n) {
		d.load("f"+strconv.FormatUint(i, 10), 0x100000+i*0x1000, 0x3f1, i) // 1 KB of code each
	}
	d.load("big code", 0x900000, 3*jitPageSize, n)
	long := strings.Repeat("x", 2*jitPageSize)
	d.load(long, 0xa00000, 0x10, n+1)
	d.load("last", 0xb00000, 0x10, n+2)
	tab, err := parseJIT(t, d.bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(n) {
		if got, want := lookupName(tab, 0x100000+i*0x1000+7), "f"+strconv.FormatUint(i, 10); got != want {
			t.Fatalf("function %d named %q, want %q", i, got, want)
		}
	}
	for addr, want := range map[uint64]string{0x900000 + 2*jitPageSize: "big code", 0xa00008: long, 0xb00000: "last"} {
		if got := lookupName(tab, addr); got != want {
			t.Errorf("%#x named %.20q, want %.20q", addr, got, want)
		}
	}
}

// unwinding appends an unwinding record: .eh_frame bytes eh, then an
// .eh_frame_hdr of hdr bytes, then pad bytes up to its mapped size.
func (d *jitDump) unwinding(eh []byte, hdr, pad int) {
	d.prefix(jitRecUnwindingInfo, jitUnwindFixed+len(eh)+hdr+pad)
	d.u64(uint64(len(eh) + hdr))
	d.u64(uint64(hdr))
	d.u64(uint64(len(eh) + hdr + pad)) // mapped size
	d.buf.Write(eh)
	d.buf.Write(bytes.Repeat([]byte{0xee}, hdr+pad))
}

func parseJITUnwind(b []byte) ([]JITUnwind, error) {
	codes, _, err := ParseJITDumpUnwind(bytes.NewReader(b), int64(len(b)), 0)
	return codes, err
}

// Each unwinding record's .eh_frame goes with the code load after it, its
// header left out; code without one, and moved code, are given without,
// and a record with no code load after it gives nothing.
func TestParseJITDumpUnwind(t *testing.T) {
	for _, bo := range []binary.AppendByteOrder{binary.LittleEndian, binary.BigEndian} {
		d := newJITDump(bo)
		d.unwinding([]byte("first eh_frame"), 20, 4)
		d.load("py::first", 0x7f0000001000, 11, 1)
		d.load("py::none", 0x7f0000001110, 11, 2)
		d.unwinding([]byte("second"), 0, 0)
		d.other(2, 40) // debug information between: the pairing holds
		d.load("py::second", 0x7f0000001220, 11, 3)
		d.unwinding(nil, 20, 0) // an .eh_frame_hdr alone
		d.load("py::empty", 0x7f0000001330, 11, 4)
		d.move(0x7f0000001000, 0x7f0000002000, 11, 1)
		d.unwinding([]byte("last"), 20, 0) // no code load after it
		got, err := parseJITUnwind(d.bytes())
		if err != nil {
			t.Fatalf("%v: %v", bo, err)
		}
		want := []JITUnwind{
			{Start: 0x7f0000001000, End: 0x7f000000100b, EHFrame: []byte("first eh_frame")},
			{Start: 0x7f0000001110, End: 0x7f000000111b},
			{Start: 0x7f0000001220, End: 0x7f000000122b, EHFrame: []byte("second")},
			{Start: 0x7f0000001330, End: 0x7f000000133b},
			{Start: 0x7f0000002000, End: 0x7f000000200b},
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d codes, want %d: %+v", bo, len(got), len(want), got)
		}
		for i := range want {
			if got[i].Start != want[i].Start || got[i].End != want[i].End || !bytes.Equal(got[i].EHFrame, want[i].EHFrame) || (got[i].EHFrame == nil) != (want[i].EHFrame == nil) {
				t.Errorf("%v: code %d: %#x-%#x %q, want %#x-%#x %q", bo, i, got[i].Start, got[i].End, got[i].EHFrame, want[i].Start, want[i].End, want[i].EHFrame)
			}
		}
		// ParseJITDump names the code as before, the moved code twice.
		if tab, err := parseJIT(t, d.bytes()); err != nil || tab.Len() != 5 {
			t.Errorf("%v: ParseJITDump: %d names, %v; want 5", bo, tab.Len(), err)
		}
	}
}

// A damaged unwinding record ends the walk with an error naming it; the
// code paired before it is returned. One of more than jitMaxEHFrame bytes
// of .eh_frame is skipped, its code given without.
func TestParseJITDumpUnwindErrors(t *testing.T) {
	d := newJITDump(binary.LittleEndian)
	d.unwinding([]byte("ok"), 0, 0)
	d.load("a", 0x1000, 0x10, 1)
	d.unwinding(make([]byte, jitMaxEHFrame+1), 0, 0)
	d.load("b", 0x2000, 0x10, 2)
	good := d.bytes()
	if got, err := parseJITUnwind(good); err != nil || len(got) != 2 || got[0].Start != 0x1000 || got[0].EHFrame == nil || got[1].Start != 0x2000 || got[1].EHFrame != nil {
		t.Fatalf("with an oversized .eh_frame: %+v, %v; want the first code with its own, the second without", got, err)
	}
	for _, c := range []struct {
		name string
		rec  func(d *jitDump)
		want string
	}{
		{"too short", func(d *jitDump) { d.other(jitRecUnwindingInfo, 8) }, "unwinding record too short"},
		{"data past the record", func(d *jitDump) {
			d.prefix(jitRecUnwindingInfo, jitUnwindFixed+8)
			d.u64(9) // unwinding size
			d.u64(0)
			d.u64(9)
			d.u64(0)
		}, "unwinding data larger than its record"},
		{"header larger than the data", func(d *jitDump) {
			d.prefix(jitRecUnwindingInfo, jitUnwindFixed+8)
			d.u64(8)
			d.u64(9) // header size
			d.u64(8)
			d.u64(0)
		}, "unwinding data larger than its record"},
	} {
		d := newJITDump(binary.LittleEndian)
		d.unwinding([]byte("ok"), 0, 0)
		d.load("a", 0x1000, 0x10, 1)
		c.rec(d)
		d.load("b", 0x2000, 0x10, 2)
		got, err := parseJITUnwind(d.bytes())
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want a FormatError saying %q", c.name, err, c.want)
		}
		if len(got) != 1 || got[0].Start != 0x1000 {
			t.Errorf("%s: %+v, want the code before the damage", c.name, got)
		}
	}
}

// A dump read as it grows gives each code once, paired with its
// unwinding record even when the read before ended between the two.
func TestParseJITDumpUnwindGrowing(t *testing.T) {
	d := newJITDump(binary.LittleEndian)
	d.unwinding([]byte("a"), 20, 0)
	d.load("a", 0x1000, 0x10, 1)
	cut1 := d.buf.Len()
	d.unwinding([]byte("b"), 20, 0)
	cut2 := d.buf.Len() // the code load not written yet
	d.load("b", 0x2000, 0x10, 2)
	cut3 := d.buf.Len() - 5 // the next unwinding record cut short
	d.unwinding([]byte("c"), 20, 0)
	d.load("c", 0x3000, 0x10, 3)
	b := d.bytes()
	var got []string
	var next int64
	for _, cut := range []int{cut1, cut2, cut3, len(b), len(b)} {
		codes, n, err := ParseJITDumpUnwind(bytes.NewReader(b[:cut]), int64(cut), next)
		if err != nil {
			t.Fatalf("up to %d from %d: %v", cut, next, err)
		}
		for _, c := range codes {
			got = append(got, fmt.Sprintf("%#x:%s", c.Start, c.EHFrame))
		}
		next = n
	}
	if want := []string{"0x1000:a", "0x2000:b", "0x3000:c"}; !slices.Equal(got, want) {
		t.Errorf("read as it grew: %v, want %v", got, want)
	}
	if next != int64(len(b)) {
		t.Errorf("next %d at the end, want %d", next, len(b))
	}
}

func FuzzParseJITDumpUnwind(f *testing.F) {
	d := newJITDump(binary.LittleEndian)
	d.unwinding([]byte("eh_frame"), 20, 4)
	d.load("py::f", 0x1000, 11, 1)
	f.Add(d.bytes())
	f.Add(newJITDump(binary.BigEndian).bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		got, next, _ := ParseJITDumpUnwind(bytes.NewReader(b), int64(len(b)), 0)
		if next < 0 || next > int64(len(b)) {
			t.Fatalf("next %d of %d bytes", next, len(b))
		}
		// Each is a code load (its fixed fields and a name's NUL) or a
		// move; with call frame information, an unwinding record too.
		if len(got) > len(b)/(jitLoadFixed+1) {
			t.Fatalf("%d codes from %d bytes", len(got), len(b))
		}
		cfi := 0
		for _, u := range got {
			if u.EHFrame != nil {
				cfi++
			}
		}
		if cfi > len(b)/(jitUnwindFixed+jitLoadFixed+1) {
			t.Fatalf("%d codes with call frame information from %d bytes", cfi, len(b))
		}
		for _, u := range got {
			if u.End <= u.Start || u.EHFrame != nil && len(u.EHFrame) == 0 || len(u.EHFrame) > jitMaxEHFrame {
				t.Fatalf("bad code %#x-%#x with %d bytes", u.Start, u.End, len(u.EHFrame))
			}
		}
	})
}
