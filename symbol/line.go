package symbol

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"errors"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// maxDWARFSize bounds each DWARF section read for line tables.
const maxDWARFSize = 1 << 30

// lineTable maps addresses to source lines, read on first use from the
// DWARF .debug_line of a file it reopens; see [Symbols.Line].
type lineTable struct {
	open    func() (*os.File, error)
	buildID []byte

	// dw is the file's DWARF, read on first use.
	dwOnce sync.Once
	dw     *dwarf.Data
	// unread is set when the file could not be opened again to read
	// its DWARF, or the supplementary file it links to could not be
	// found (see [Symbols.LinesUnread]).
	unread atomic.Bool

	// findAlt finds the supplementary file the DWARF links to (see
	// [altLink]); nil searches nowhere. alt is its DWARF, read on
	// first use.
	findAlt func(altLink) (*File, error)
	altOnce sync.Once
	alt     *altDWARF

	// findDWO finds the .dwo files of split DWARF's skeleton units,
	// findDWP the program's DWARF package; nil searches nowhere.
	// sawSplit is set once a skeleton is read.
	findDWO  func(compDir, name string) (*File, error)
	findDWP  func() (*File, error)
	sawSplit atomic.Bool
	// dwoMissing counts the skeleton units whose .dwo was not found.
	dwoMissing atomic.Int64

	// rows and files are every line program, read on the first Line.
	once  sync.Once
	rows  []lineRow
	files []string

	// inl answers Frames, reading compilation units as addresses need.
	inlOnce sync.Once
	inlMu   sync.Mutex
	inl     *inlineIndex
}

// lineRow is one row of the line program: from addr on, the code is at
// files[file]:line. A row with file == noFile ends a sequence.
type lineRow struct {
	addr uint64
	file uint32
	line uint32
}

const noFile = ^uint32(0)

// newLineTable returns a line table read lazily from the file open
// returns, which must carry buildID (when not nil).
func newLineTable(open func() (*os.File, error), buildID []byte) *lineTable {
	return &lineTable{open: open, buildID: buildID}
}

// ownLineTable returns the line table of obj itself, reopened at path
// through the first root that has a file with obj's build-id.
func (l *Loader) ownLineTable(obj *File, path string) *lineTable {
	if !obj.hasDebugInfo() || obj.BuildID() == nil {
		return nil
	}
	open := firstOf(l.roots())
	t := newLineTable(func() (*os.File, error) { return open(path) }, obj.BuildID())
	t.findAlt = l.altFinder(open, path)
	t.findDWO, t.findDWP = l.dwoFinder(open, path), l.dwpFinder(open, path)
	return t
}

// firstOf returns an Opener that opens a path through the first of roots
// that has it.
func firstOf(roots []Opener) Opener {
	return func(path string) (*os.File, error) {
		var errs []error
		for _, open := range roots {
			f, err := open(path)
			if err == nil {
				return f, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}

// LinesUnread reports whether s has a DWARF line table that could not be
// read when asked for: its file could not be opened again, or was
// another build by then, or the supplementary file its DWARF links to
// (dwz's) was not found. The frames s gave then lack what the table
// holds, and are no truth to keep about the file.
func (s *Symbols) LinesUnread() bool {
	return s != nil && s.lines != nil && s.lines.unread.Load()
}

// Line returns the source file and line of the link-time address vaddr,
// from the DWARF .debug_line of the file the symbols came from (the object
// itself, or its debug file). ok is false when there is no line
// information for vaddr. The line table is read on the first call.
func (s *Symbols) Line(vaddr uint64) (file string, line int, ok bool) {
	if s == nil || s.lines == nil {
		return "", 0, false
	}
	return s.lines.find(vaddr)
}

func (t *lineTable) find(addr uint64) (string, int, bool) {
	if t == nil {
		return "", 0, false
	}
	t.once.Do(t.load)
	return findLine(t.rows, t.files, addr)
}

// findLine returns the file and line of the row covering addr.
func findLine(rows []lineRow, files []string, addr uint64) (string, int, bool) {
	i := sort.Search(len(rows), func(i int) bool { return rows[i].addr > addr }) - 1
	if i < 0 || rows[i].file == noFile {
		return "", 0, false
	}
	return files[rows[i].file], int(rows[i].line), true
}

// load reads the line tables; on any error the table stays empty.
func (t *lineTable) load() {
	if d := t.data(); d != nil {
		t.rows, t.files, _ = readLines(d)
	}
}

// data returns the file's DWARF, reading it on the first call; nil when
// the file cannot be opened, is another build or has no valid DWARF.
func (t *lineTable) data() *dwarf.Data {
	t.dwOnce.Do(func() {
		f, err := t.openFile()
		if err != nil {
			t.unread.Store(true)
			return
		}
		defer f.Close()
		t.dw, _ = f.dwarf()
	})
	return t.dw
}

// openFile opens the file again, checking it is the same build.
func (t *lineTable) openFile() (*File, error) {
	osf, err := t.open()
	if err != nil {
		return nil, err
	}
	f, err := NewFile(osf)
	if err != nil {
		osf.Close()
		return nil, err
	}
	f.closer = osf
	if t.buildID != nil && !bytes.Equal(f.BuildID(), t.buildID) {
		f.Close()
		return nil, errors.New("reopened file is another build")
	}
	return f, nil
}

// OpenLines opens again the file s reads its DWARF source lines from
// (the object itself or its debug file), through the opener the load
// found it with, and checks that it carries the object's build-id; an
// error when s has none (no DWARF, or a Go line table only).
func (s *Symbols) OpenLines() (*os.File, error) {
	if s == nil || s.lines == nil {
		return nil, errors.New("no DWARF line table")
	}
	f, err := s.lines.openFile()
	if err != nil {
		return nil, err
	}
	osf := f.closer.(*os.File)
	f.closer = nil
	return osf, nil
}

// dwarf returns the DWARF data of f, with every .debug_ section checked
// against the file and bounded in size first.
func (f *File) dwarf() (d *dwarf.Data, err error) {
	defer recoverTo(&err, "read DWARF")
	for _, s := range f.elf.Sections {
		if len(s.Name) > 7 && s.Name[:7] == ".debug_" {
			if _, err := f.checkBounds(s); err != nil {
				return nil, err
			}
			if s.Size > maxDWARFSize {
				return nil, &FormatError{Off: int64(min(s.Offset, maxFileSize)), Msg: "section " + s.Name + " too large", Val: s.Size}
			}
		}
	}
	return f.readDWARF()
}

// readLines reads every line program of d into rows sorted by address.
func readLines(d *dwarf.Data) (rows []lineRow, files []string, err error) {
	defer recoverTo(&err, "read DWARF line tables")
	fileIdx := map[string]uint32{}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := safeLineReader(d, cu)
		r.SkipChildren()
		if err != nil || lr == nil {
			continue
		}
		urows, ufiles := unitLines(lr)
		for _, row := range urows {
			if row.file != noFile {
				name := ufiles[row.file]
				idx, ok := fileIdx[name]
				if !ok {
					idx = uint32(len(files))
					files = append(files, name)
					fileIdx[name] = idx
				}
				row.file = idx
			}
			rows = append(rows, row)
		}
	}
	sortRows(rows)
	return rows, files, nil
}

// unitLines reads the line program of one compilation unit into rows
// sorted by address, with their own file table.
func unitLines(lr *dwarf.LineReader) (rows []lineRow, files []string) {
	fileIdx := map[string]uint32{}
	var e dwarf.LineEntry
	for {
		if err := lr.Next(&e); err != nil {
			break // io.EOF, or a malformed program: keep what was read
		}
		row := lineRow{addr: e.Address, file: noFile}
		if !e.EndSequence && e.File != nil {
			idx, ok := fileIdx[e.File.Name]
			if !ok {
				idx = uint32(len(files))
				files = append(files, e.File.Name)
				fileIdx[e.File.Name] = idx
			}
			row.file, row.line = idx, uint32(max(e.Line, 0))
		}
		rows = append(rows, row)
	}
	sortRows(rows)
	return rows, files
}

// sortRows sorts rows by address; at one address, a sequence's start wins
// over another's end.
func sortRows(rows []lineRow) {
	slices.SortStableFunc(rows, func(a, b lineRow) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		return cmp.Compare(b2i(a.file != noFile), b2i(b.file != noFile))
	})
}
