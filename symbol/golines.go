package symbol

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"math"
	"sort"

	"nsprof/internal/gopclntab"
	"nsprof/internal/pageread"
)

// goLineTable gives the source frames of a Go binary from what the Go
// runtime itself uses for tracebacks: the line table (.gopclntab) and the
// inline trees the functions' funcdata point to (go:func.*). Both survive
// -ldflags=-s -w, which removes the symbol table and DWARF. Only the
// Go 1.20+ layout is read (pclntab magic 0xfffffff1).
//
// Every read is bounds-checked; a table that does not hold together
// yields no frames, never a panic.
type goLineTable struct {
	order   binary.ByteOrder
	quantum uint64 // instruction size quantum of the pc deltas
	text    uint64 // moduledata.text: function entries are offsets from it
	nfunc   int

	// The tables, read from the file as they are looked at (goSpan).
	funcnames   goSpan // funcnametab
	funcnameOff uint64 // its offset from the header
	cutab       goSpan // per compilation unit: file indexes into filetab
	filetab     goSpan
	pctab       goSpan
	pcln        goSpan // functab, then the _func records

	// funcdata holds go:func.* (moduledata.gofunc, at funcdataAddr),
	// where the inline trees are: funcdata offsets count from it.
	funcdata     goSpan
	funcdataAddr uint64

	// steps holds the decoded tables of the function frames was last
	// asked about.
	steps goSteps
}

// Layout of the Go 1.20+ runtime structures read here.
const (
	goFuncFixed     = 44 // _func up to its pcdata offsets
	goInlinedCall   = 16 // funcID, pad, nameOff, parentPc, startLine
	goPCDataInlTree = 2  // PCDATA_InlTreeIndex
	goFuncDataInl   = 3  // FUNCDATA_InlTree
	maxGoInlDepth   = 64
	// moduledata word indexes (Go 1.20+): pcHeader, then six slices,
	// findfunctab, minpc, maxpc, text, ... rodata, gofunc.
	modTextWord   = 20
	modGofuncWord = 40
)

// goLines reads f's Go line table and, through its moduledata, where its
// inline trees are. It returns nil, nil for a file that is not a Go
// 1.20+ binary, and for one whose moduledata it cannot find.
func (f *File) goLines() (t *goLineTable, err error) {
	defer recoverTo(&err, "read Go line table")
	if !gopclntab.IsGo(f.elf) {
		return nil, nil
	}
	src, off, err := f.pclntabSource()
	if err != nil || src == nil {
		return nil, err
	}
	t, err = parseGoLineTableFrom(src, f.elf.ByteOrder)
	if err != nil || t == nil {
		if fe, ok := err.(*FormatError); ok && fe.Off >= 0 {
			fe.Off += off
		}
		return nil, err
	}
	s, _ := gopclntab.Section(f.elf)
	if s == nil || off < int64(s.Offset) {
		return nil, nil
	}
	base := s.Addr + uint64(off-int64(s.Offset)) // the header's address
	text, gofunc, ok := f.moduledata(base, base+t.funcnameOff)
	if !ok {
		// Without go:func.* an inlined call's code would be named
		// after the function it was inlined into: no frames at all.
		return nil, nil
	}
	t.text = text
	if gofunc >= base && gofunc-base < src.Len() {
		t.funcdata, t.funcdataAddr = spanOf(src, gofunc-base), gofunc
		return t, nil
	}
	for _, sec := range f.elf.Sections {
		if sec.Type == elf.SHT_PROGBITS && sec.Flags&elf.SHF_ALLOC != 0 && gofunc >= sec.Addr && gofunc-sec.Addr < sec.Size {
			b, err := f.sectionSource(sec)
			if err != nil {
				return nil, err
			}
			t.funcdata, t.funcdataAddr = spanOf(b, gofunc-sec.Addr), gofunc
			return t, nil
		}
	}
	return nil, nil
}

// pclntabSource returns the Go line table of f and its file
// offset: read from the file on demand where it is a section of its own,
// as pclntab finds it otherwise.
func (f *File) pclntabSource() (*pageread.Source, int64, error) {
	s, search := gopclntab.Section(f.elf)
	if s == nil {
		return nil, 0, nil
	}
	if search {
		data, off, err := f.pclntab()
		if err != nil || data == nil {
			return nil, 0, err
		}
		return pageread.Held(data), off, nil
	}
	src, err := f.sectionSource(s)
	return src, int64(min(s.Offset, maxFileSize)), err
}

// sectionSource returns the contents of s, bounded as
// sectionData bounds them: read on demand unless s is compressed.
func (f *File) sectionSource(s *elf.Section) (*pageread.Source, error) {
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		b, err := f.sectionData(s, maxPclntabSize)
		if err != nil {
			return nil, err
		}
		return pageread.Held(b), nil
	}
	if _, err := f.checkBounds(s); err != nil {
		return nil, err
	}
	if s.Size > maxPclntabSize {
		return nil, &FormatError{Off: int64(min(s.Offset, maxFileSize)), Msg: "section " + s.Name + " too large", Val: s.Size}
	}
	return pageread.File(f.r, int64(s.Offset), s.Size, 0, maxGoPages), nil
}

// goLinesOrNil is goLines for a loader: nil for anything but a readable
// Go 1.20+ line table with its inline trees.
func (f *File) goLinesOrNil() *goLineTable {
	t, err := f.goLines()
	if err != nil {
		return nil
	}
	return t
}

// moduledata finds the runtime's moduledata of f: the record whose first
// word is the address of the pclntab header and whose second is that of
// the function name table (funcnames). It returns its text and gofunc
// words. Go 1.26 puts it in .go.module, earlier versions in .noptrdata.
// Go 1.26's position-independent builds hold the words in the file as
// well as in their relocations; a linker that left them to relocations
// alone would leave the moduledata unfound.
func (f *File) moduledata(pclntab, funcnames uint64) (text, gofunc uint64, ok bool) {
	ptr := 8
	if f.elf.Class == elf.ELFCLASS32 {
		ptr = 4
	}
	word := func(b []byte, i int) uint64 {
		if ptr == 4 {
			return uint64(f.elf.ByteOrder.Uint32(b[i*4:]))
		}
		return f.elf.ByteOrder.Uint64(b[i*8:])
	}
	need := (modGofuncWord + 1) * ptr
	for _, name := range []string{".go.module", ".noptrdata", ".data"} {
		s := f.elf.Section(name)
		if s == nil || s.Type != elf.SHT_PROGBITS {
			continue
		}
		b, err := f.sectionData(s, maxPclntabSize)
		if err != nil {
			continue
		}
		for i := 0; i+need <= len(b); i += ptr {
			m := b[i:]
			if word(m, 0) != pclntab || word(m, 1) != funcnames {
				continue
			}
			text, gofunc = word(m, modTextWord), word(m, modGofuncWord)
			if ts := f.elf.Section(".text"); ts == nil || text != ts.Addr {
				continue
			}
			return text, gofunc, true
		}
	}
	return 0, 0, false
}

// parseGoLineTable reads the header of a Go 1.20+ pclntab held in data,
// as parseGoLineTableFrom.
func parseGoLineTable(data []byte, order binary.ByteOrder) (*goLineTable, error) {
	return parseGoLineTableFrom(pageread.Held(data), order)
}

// parseGoLineTableFrom reads the header of a Go 1.20+ pclntab with
// [gopclntab.ParseLayout]. Text and go:func.* are left for the caller to
// set.
func parseGoLineTableFrom(src *pageread.Source, order binary.ByteOrder) (*goLineTable, error) {
	head := src.At(0, gopclntab.HeaderSize)
	if len(head) < 8 || order.Uint32(head) != gopclntab.Magic120 {
		return nil, nil
	}
	l, err := gopclntab.ParseLayout(head, src.Len(), order)
	if err != nil {
		fe := err.(*gopclntab.FormatError)
		return nil, &FormatError{Off: fe.Off, Msg: "pclntab " + fe.Msg, Val: fe.Val}
	}
	if l == nil {
		return nil, nil
	}
	return &goLineTable{
		order: order, quantum: l.Quantum, nfunc: l.NFunc,
		funcnames: spanOf(src, l.FuncNames), funcnameOff: l.FuncNames,
		cutab: spanOf(src, l.CUTab), filetab: spanOf(src, l.FileTab), pctab: spanOf(src, l.PCTab), pcln: spanOf(src, l.FuncTab),
	}, nil
}

// u32 returns the 32-bit word of b at off, false when it is out of range.
func (t *goLineTable) u32(b goSpan, off uint64) (uint32, bool) {
	w := b.at(off, 4)
	if len(w) < 4 {
		return 0, false
	}
	return t.order.Uint32(w), true
}

// goFunc is what frames needs of one _func record.
type goFunc struct {
	entry, end            uint64 // end: the next function's entry
	nameOff, pcfile, pcln uint32
	cuOff                 uint32
	inlIndex, inlTree     uint32 // pctab offset of PCDATA_InlTreeIndex, gofunc offset of the tree
	hasInl                bool
}

// funcAt returns the function holding pc.
func (t *goLineTable) funcAt(pc uint64) (goFunc, bool) {
	if pc < t.text || t.nfunc == 0 {
		return goFunc{}, false
	}
	off := pc - t.text
	// functab: nfunc+1 pairs of (entryOff, funcOff), the last an end.
	i := sort.Search(t.nfunc, func(i int) bool {
		e, ok := t.u32(t.pcln, uint64(i)*8)
		return !ok || uint64(e) > off
	}) - 1
	if i < 0 {
		return goFunc{}, false
	}
	next, ok := t.u32(t.pcln, uint64(i+1)*8)
	if !ok || off >= uint64(next) {
		return goFunc{}, false
	}
	fo, ok := t.u32(t.pcln, uint64(i)*8+4)
	if !ok {
		return goFunc{}, false
	}
	rec := uint64(fo)
	var w [11]uint32
	for k := range w {
		if w[k], ok = t.u32(t.pcln, rec+uint64(k)*4); !ok {
			return goFunc{}, false
		}
	}
	fn := goFunc{entry: t.text + uint64(w[0]), end: t.text + uint64(next), nameOff: w[1], pcfile: w[5], pcln: w[6], cuOff: w[8]}
	if fn.entry > pc {
		return goFunc{}, false
	}
	npcdata, nfuncdata := w[7], w[10]>>24
	if t.order == binary.BigEndian {
		nfuncdata = w[10] & 0xff
	}
	if npcdata > goPCDataInlTree && nfuncdata > goFuncDataInl {
		idx, ok1 := t.u32(t.pcln, rec+goFuncFixed+goPCDataInlTree*4)
		tree, ok2 := t.u32(t.pcln, rec+goFuncFixed+uint64(npcdata)*4+goFuncDataInl*4)
		if ok1 && ok2 && idx != 0 && tree != ^uint32(0) {
			fn.inlIndex, fn.inlTree, fn.hasInl = idx, tree, true
		}
	}
	return fn, true
}

// pcvalue decodes the pctab table at off for the function starting at
// entry and returns its value at pc, -1 if the table does not cover pc.
func (t *goLineTable) pcvalue(off uint32, entry, pc uint64) int32 {
	if off == 0 || uint64(off) >= t.pctab.len() {
		return -1
	}
	v := int32(-1)
	t.pctab.window(uint64(off), func(b []byte) bool {
		v = -1
		return gopclntab.Decode(b, entry, math.MaxUint64, t.quantum, func(_, next uint64, val int32) bool {
			if pc < next {
				v = val
				return false
			}
			return true
		})
	})
	return v
}

// cstring returns the NUL-terminated string at off of b; "" when it runs
// to the end.
func cstring(b goSpan, off uint64) string {
	var s string
	b.window(off, func(w []byte) bool {
		if i := bytes.IndexByte(w, 0); i >= 0 {
			s = string(w[:i])
			return true
		}
		return false
	})
	return s
}

// strAt reads the NUL-terminated string at an offset of a table:
// cstring, or a memo of it.
type strAt func(b goSpan, off uint64) string

// pcValue gives the value of a function's pcvalue table (at a pctab
// offset) at a pc, -1 where the table does not cover it: decoded from the
// table for each pc ([goLineTable.pcvalue]), or looked up in steps decoded
// once ([goLineTable.frameRuns]).
type pcValue func(off uint32, pc uint64) int32

// position returns the file and line of pc in fn.
func (t *goLineTable) position(fn goFunc, pc uint64, val pcValue, str strAt) (string, int) {
	line := val(fn.pcln, pc)
	fileno := val(fn.pcfile, pc)
	if line < 0 || fileno < 0 {
		return "", 0
	}
	fo, ok := t.u32(t.cutab, (uint64(fn.cuOff)+uint64(fileno))*4)
	if !ok || fo == ^uint32(0) {
		return "", int(line)
	}
	return str(t.filetab, uint64(fo)), int(line)
}

// frames returns the source frames at pc, innermost first, as
// [Symbols.Frames]; nil when no function covers pc.
func (t *goLineTable) frames(pc uint64) []Frame {
	fn, ok := t.funcAt(pc)
	if !ok {
		return nil
	}
	return t.framesOf(fn, pc)
}

// framesIn returns the source frames at pc of fn, its tables read
// through val and its strings through str.
func (t *goLineTable) framesIn(fn goFunc, pc uint64, val pcValue, str strAt) []Frame {
	file, line := t.position(fn, pc, val, str)
	var out []Frame
	if fn.hasInl {
		for ix, depth := val(fn.inlIndex, pc), 0; ix >= 0 && depth < maxGoInlDepth; depth++ {
			at := uint64(fn.inlTree) + uint64(ix)*goInlinedCall
			nameOff, ok1 := t.u32(t.funcdata, at+4)
			parent, ok2 := t.u32(t.funcdata, at+8)
			if !ok1 || !ok2 {
				break
			}
			out = append(out, Frame{Function: str(t.funcnames, uint64(nameOff)), File: file, Line: line})
			callPC := fn.entry + uint64(int64(int32(parent)))
			file, line = t.position(fn, callPC, val, str)
			ix = val(fn.inlIndex, callPC)
		}
	}
	return append(out, Frame{Function: str(t.funcnames, uint64(fn.nameOff)), File: file, Line: line})
}
