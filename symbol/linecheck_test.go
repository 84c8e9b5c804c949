package symbol

import (
	"debug/dwarf"
	"encoding/binary"
	"testing"
)

// lineHeader5 returns a DWARF 5 line table (32-bit) whose directory
// entries have the given forms and count, and which has one file entry
// of DW_FORM_string "f.c"; dirs are the directory entries' bytes.
func lineHeader5(dirForms []byte, dirCount uint64, dirs []byte) []byte {
	var h []byte
	h = append(h, 1, 1, 1, 0xfb, 14, 13)              // lengths, is_stmt, line base and range, opcode base
	h = append(h, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1) // standard opcode lengths
	h = append(h, byte(len(dirForms)))                // directory entry formats
	for _, f := range dirForms {
		h = append(h, 1, f) // DW_LNCT_path
	}
	h = binary.AppendUvarint(h, dirCount)
	h = append(h, dirs...)
	h = append(h, 2, 1, 0x08, 2, 0x0b) // file formats: path string, directory index data1
	h = binary.AppendUvarint(h, 1)
	h = append(h, 'f', '.', 'c', 0, 0)
	b := binary.LittleEndian.AppendUint16(nil, 5)
	b = append(b, 8, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	b = append(b, h...)
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// A DWARF 5 line table header that declares more entries than its bytes
// hold is refused; one that declares what it holds is read.
func TestLineTableSafe(t *testing.T) {
	for _, c := range []struct {
		name string
		line []byte
		want bool
	}{
		{"one directory", lineHeader5([]byte{0x08}, 1, []byte("/src\x00")), true},
		{"2^40 directories in 5 bytes", lineHeader5([]byte{0x08}, 1<<40, []byte("/src\x00")), false},
		{"a directory past the header", lineHeader5([]byte{0x08}, 2, []byte("/src\x00")), false},
		{"directories of no bytes", lineHeader5([]byte{0x19}, 3, nil), true},
		{"too many directories of no bytes", lineHeader5([]byte{0x19}, maxZeroSizeEntries+1, nil), false},
		{"an unknown form", lineHeader5([]byte{0x01}, 1, []byte{0, 0, 0, 0, 0, 0, 0, 0}), false},
		{"truncated", lineHeader5([]byte{0x08}, 1, []byte("/src\x00"))[:20], false},
		{"none", nil, true},
	} {
		if got := lineTableSafe(c.line); got != c.want {
			t.Errorf("%s: lineTableSafe = %v, want %v", c.name, got, c.want)
		}
	}
	// What is taken as safe, debug/dwarf reads.
	if fs := dwoFiles(lineHeader5([]byte{0x08}, 1, []byte("/src\x00")), "/src"); len(fs) != 1 || fs[0].Name != "/src/f.c" {
		t.Errorf("files %v, want /src/f.c", fs)
	}
}

// Every line table of libc's debug file (DWARF 5, gcc's) is safe: the
// check refuses none of the real ones.
func TestLineHeadersSafeLibc(t *testing.T) {
	libc := openHostLibc(t)
	f := openFile(t, buildIDPath(DefaultDebugDir, libc.BuildID()))
	line, err := f.section(".debug_line", maxDWARFSize)
	if err != nil || len(line) == 0 {
		t.Fatalf("libc's debug file: .debug_line: %d bytes, %v", len(line), err)
	}
	tables := 0
	for off := 0; off < len(line); tables++ {
		n, size, ok := unitLength(line[off:])
		if !ok {
			break
		}
		if !lineTableSafe(line[off:]) {
			t.Fatalf("libc's line table at %#x refused", off)
		}
		off += size + n
	}
	if tables < 100 {
		t.Errorf("%d line tables in libc's debug file, want its hundreds", tables)
	}
}

// cuAt returns a DWARF 5 unit whose compile unit entry has
// DW_AT_stmt_list off (with testStmtAbbrev).
func cuAt(off uint32) []byte {
	info := binary.LittleEndian.AppendUint32(nil, 8+5)
	info = binary.LittleEndian.AppendUint16(info, 5)
	info = append(info, 1, 8) // DW_UT_compile, address size
	info = binary.LittleEndian.AppendUint32(info, 0)
	return binary.LittleEndian.AppendUint32(append(info, 1), off)
}

// testStmtAbbrev: 1 a compile unit with a DW_FORM_sec_offset
// DW_AT_stmt_list and no children.
var testStmtAbbrev = []byte{1, 0x11, 0, 0x10, 0x17, 0, 0, 0}

// The line table a unit points at is checked where it lies, not as a
// walk over the section finds it: a benign table whose length covers a
// hostile one hides it from a walk, not from a unit's DW_AT_stmt_list.
// Its lines are not read; the others are, and the process lives.
func TestHostileLineTableByOffset(t *testing.T) {
	benign := lineHeader5([]byte{0x08}, 1, []byte("/src\x00"))
	hostile := lineHeader5([]byte{0x08}, 1<<40, []byte("/src\x00"))
	// The benign table's length made to cover the hostile one.
	cover := append(binary.LittleEndian.AppendUint32(nil, uint32(len(benign)-4+len(hostile))), benign[4:]...)
	line := append(cover, hostile...)
	info := append(cuAt(0), cuAt(uint32(len(benign)))...)
	d, err := newDWARF(map[string][]byte{"abbrev": testStmtAbbrev, "line": line}, info)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	var got []bool
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		lr, err := safeLineReader(d, cu)
		got = append(got, err == nil && lr != nil)
	}
	if len(got) != 2 || !got[0] || got[1] {
		t.Errorf("line tables read per unit: %v, want [true false]", got)
	}
	if _, _, err := readLines(d); err != nil {
		t.Errorf("readLines: %v", err)
	}
}

// FuzzLineHeaders reads the line tables of arbitrary .debug_line bytes
// that lineHeadersSafe takes, as a unit pointing at their start: no
// panic, no allocation beyond what the bytes justify (the fuzzer's
// memory limit).
func FuzzLineHeaders(f *testing.F) {
	f.Add(lineHeader5([]byte{0x08}, 1, []byte("/src\x00")))
	f.Add(lineHeader5([]byte{0x19}, 3, nil))
	f.Fuzz(func(t *testing.T, line []byte) {
		if !lineTableSafe(line) {
			return
		}
		dwoFiles(line, "/src")
		d, err := dwarf.New(nil, nil, nil, nil, line, nil, nil, nil)
		if err != nil || d == nil {
			return
		}
	})
}
