package symbol

import (
	"debug/dwarf"
	"fmt"
	"path/filepath"
	"testing"

	"nsprof/internal/testutils"
)

// readDWARF, which reads only the sections nsprof uses, in parallel,
// must give the entries and line tables debug/elf's DWARF gives: for
// DWARF 5 and 4 (with type units), zlib-compressed sections, and libc's
// debug file.
func TestReadDWARFMatchesDebugElf(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("testdata", "fixture.c")
	v5 := testutils.BuildC(t, src, "-shared", "-fPIC", "-g", "-gdwarf-5")
	v4 := testutils.BuildC(t, src, "-shared", "-fPIC", "-g", "-gdwarf-4", "-fdebug-types-section")
	zlib := filepath.Join(dir, "zlib.so")
	run(t, "objcopy", "--compress-debug-sections=zlib", v5, zlib)
	files := map[string]string{"dwarf5": v5, "dwarf4": v4, "zlib": zlib}
	files["libc debug file"] = buildIDPath(DefaultDebugDir, openHostLibc(t).BuildID())
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			f := openFile(t, path)
			want, err := f.elf.DWARF()
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.readDWARF()
			if err != nil {
				t.Fatal(err)
			}
			w, g := dwarfDigest(t, want), dwarfDigest(t, got)
			if len(w) == 0 {
				t.Fatal("no entries")
			}
			if len(w) != len(g) {
				t.Fatalf("%d entries and line rows, debug/elf gives %d", len(g), len(w))
			}
			for i := range w {
				if w[i] != g[i] {
					t.Fatalf("item %d: %s, debug/elf gives %s", i, g[i], w[i])
				}
			}
		})
	}
}

// dwarfDigest lists every entry with its fields, every unit's ranges and
// every line row, as text.
func dwarfDigest(t *testing.T, d *dwarf.Data) []string {
	t.Helper()
	var out []string
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		out = append(out, fmt.Sprintf("%#x %v %v", e.Offset, e.Tag, e.Field))
		if e.Tag != dwarf.TagCompileUnit {
			continue
		}
		rs, err := d.Ranges(e)
		out = append(out, fmt.Sprintf("ranges %v %v", rs, err))
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			out = append(out, fmt.Sprintf("line reader %v", err))
			continue
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			file := ""
			if le.File != nil {
				file = le.File.Name
			}
			out = append(out, fmt.Sprintf("%#x %s:%d:%d", le.Address, file, le.Line, le.Column))
		}
	}
	return out
}

// BenchmarkReadDWARF compares loading libc's debug file's DWARF with
// readDWARF and with debug/elf.
func BenchmarkReadDWARF(b *testing.B) {
	f := openFile(b, buildIDPath(DefaultDebugDir, openHostLibc(b).BuildID()))
	b.Run("readDWARF", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.readDWARF(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("debug-elf", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.elf.DWARF(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
