package symbol

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

// dwarfUnits gives the inline index the DWARF of the compilation units it
// reads. Offsets are those of the file's .debug_info.
type dwarfUnits interface {
	// unit returns DWARF data holding the unit that covers pc, and the
	// unit's offset; ok is false when no unit covers pc.
	unit(pc uint64) (d *dwarf.Data, off dwarf.Offset, ok bool)
	// entry returns DWARF data holding the entry at off, which may lie
	// in another unit (an abstract origin); nil if it cannot.
	entry(off dwarf.Offset) *dwarf.Data
	// prepare is told the addresses that will be asked about, so that
	// their units are read at once.
	prepare(pcs []uint64)
	// prepareEntries is told the offsets of entries that will be asked
	// about, so that their units are read at once.
	prepareEntries(offs []dwarf.Offset)
}

// fullUnits is a whole file's DWARF, as debug/dwarf reads it, with the
// address ranges of its compilation units indexed on first use.
// debug/dwarf's Reader.SeekPC walks every unit from the last one found
// for each address, parsing each unit's first entry and ranges: an
// address no unit covers (hand-written assembly, as libc's syscall
// wrappers are) cost a walk over all of them, about 1700 units for
// libc's debug file.
type fullUnits struct {
	d      *dwarf.Data
	ranges []unitRange // sorted by lo, then unit order; nil until indexed
	// reach[i] is the highest hi of ranges[:i+1], so that a lookup
	// scans back only over ranges that can still hold the address.
	reach   []uint64
	indexed bool
}

// unitRange is one address range of the compilation unit at off, the
// n-th unit of .debug_info.
type unitRange struct {
	lo, hi uint64
	off    dwarf.Offset
	n      int
}

func newFullUnits(d *dwarf.Data) *fullUnits { return &fullUnits{d: d} }

func (u *fullUnits) unit(pc uint64) (*dwarf.Data, dwarf.Offset, bool) {
	if !u.indexed {
		u.index()
	}
	// The ranges that can hold pc start at lo <= pc; of those that do,
	// the first unit in the file's order answers, as SeekPC's walk from
	// the first unit would.
	i := sort.Search(len(u.ranges), func(i int) bool { return u.ranges[i].lo > pc }) - 1
	best := -1
	for ; i >= 0 && u.reach[i] > pc; i-- {
		if r := &u.ranges[i]; pc < r.hi && (best < 0 || r.n < u.ranges[best].n) {
			best = i
		}
	}
	if best < 0 {
		return nil, 0, false
	}
	return u.d, u.ranges[best].off, true
}

// index reads the ranges of every unit once. A unit whose first entry
// or ranges cannot be read is left out; the units after it are still
// indexed.
func (u *fullUnits) index() {
	u.indexed = true
	defer func() {
		if recover() != nil {
			u.ranges, u.reach = nil, nil
		}
	}()
	r := u.d.Reader()
	for n := 0; ; n++ {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		rs, err := u.d.Ranges(e)
		if err == nil {
			for _, rg := range rs {
				if rg[0] < rg[1] {
					u.ranges = append(u.ranges, unitRange{lo: rg[0], hi: rg[1], off: e.Offset, n: n})
				}
			}
		}
		r.SkipChildren()
	}
	slices.SortFunc(u.ranges, func(a, b unitRange) int {
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	u.reach = make([]uint64, len(u.ranges))
	hi := uint64(0)
	for i, r := range u.ranges {
		hi = max(hi, r.hi)
		u.reach[i] = hi
	}
}

func (u *fullUnits) entry(dwarf.Offset) *dwarf.Data { return u.d }
func (u *fullUnits) prepare([]uint64)               {}
func (u *fullUnits) prepareEntries([]dwarf.Offset)  {}

// sparseUnits reads only the compilation units that addresses fall in,
// found through .debug_aranges. Loading a large debug file whole is
// mostly inflating its compressed .debug_info and having debug/dwarf
// parse the header and abbreviations of every unit in it (libc's: 5.8 MB,
// about 1700 units, 90-130 ms); a recording asks about a few units.
//
// .debug_info is inflated only as far as the last unit needed. The data
// handed to debug/dwarf keeps every offset of the file: the units read are
// at their place, and each run of units between them is replaced by one
// placeholder unit of the same length (version 4, an empty abbreviation
// table appended after the real ones), which debug/dwarf skips without
// parsing. The other sections the units need are read whole.
type sparseUnits struct {
	open    func() (*File, error) // reopens the file, for more of .debug_info
	aranges []arange

	// The other sections, whole, once ready is closed (or secErr):
	// "abbrev" ends with the empty table, at offset empty.
	ready  chan struct{}
	sec    map[string][]byte
	secErr error
	empty  uint32
	asize  byte // address size of the placeholder units

	info     []byte    // the first bytes of .debug_info, inflated so far
	f        *File     // while need reads on
	rd       io.Reader // .debug_info of f, inflating, at len(info)
	infoSize uint64    // size of the whole section
	order    binary.ByteOrder
	starts   []uint64 // the units' offsets, as far as walked
	walked   uint64   // where the next unit starts (== infoSize at the end)

	covered  []uint64 // the units d holds, sorted
	d        *dwarf.Data
	rebuilds int
	stopped  bool // .debug_info unreadable, or too many rebuilds: no unit is read
	// held keeps the file need opened open across calls (see hold): a
	// stream opened again inflates .debug_info from its start.
	held bool
}

// maxRebuilds bounds how many times the data is made again for units not
// prepared: each costs a copy of .debug_info up to the last unit, and
// past this many, reading the whole DWARF once is cheaper.
const maxRebuilds = 16

// reserveInfo is the largest .debug_info whose inflated size is allocated
// at once; libc's is 5.8 MB.
const reserveInfo = 64 << 20

// placeholderSize is the header of a version 4 unit: length (4), version
// (2), abbreviation offset (4), address size (1).
const placeholderSize = 11

// sparseUnits returns f's DWARF read as addresses need it, or nil when f
// has no .debug_aranges (or the DWARF is in a form this reader leaves to
// debug/elf). open reopens the same file later, when more of .debug_info
// is needed.
func (f *File) sparseUnits(open func() (*File, error)) (u *sparseUnits, err error) {
	defer recoverTo(&err, "read DWARF")
	ar := f.elf.Section(".debug_aranges")
	info := f.elf.Section(".debug_info")
	if ar == nil || info == nil || ar.Type == elf.SHT_NOBITS || info.Type == elf.SHT_NOBITS || f.elf.Type == elf.ET_REL {
		return nil, nil
	}
	var want []*elf.Section
	for _, s := range f.elf.Sections {
		if strings.HasPrefix(s.Name, ".zdebug_") {
			return nil, nil
		}
		if name, ok := strings.CutPrefix(s.Name, ".debug_"); ok && (dwarfSections[name] || name == "aranges") {
			if _, err := f.checkBounds(s); err != nil {
				return nil, err
			}
			if s.Size > maxDWARFSize {
				return nil, &FormatError{Off: int64(min(s.Offset, maxFileSize)), Msg: "section " + s.Name + " too large", Val: s.Size}
			}
			if name != "info" && name != "aranges" {
				want = append(want, s)
			}
		}
	}
	u = &sparseUnits{open: open, infoSize: info.Size, order: f.elf.ByteOrder, asize: 8, ready: make(chan struct{})}
	if f.elf.Class == elf.ELFCLASS32 {
		u.asize = 4
	}
	b, err := f.readSection(ar, ar.Size, 0)
	if err != nil {
		return nil, &FormatError{Off: int64(min(ar.Offset, maxFileSize)), Msg: "section .debug_aranges: " + err.Error()}
	}
	u.aranges, _ = parseAranges(b, u.order) // the sets before any damage
	if len(u.aranges) == 0 {
		return nil, nil
	}
	// The other sections are inflated in the background, while the units
	// asked for are read from .debug_info.
	go u.loadSections(want)
	return u, nil
}

// loadSections reads the sections other than .debug_info whole, each in
// its own goroutine, from the file opened again (the caller's may be
// closed by then).
func (u *sparseUnits) loadSections(want []*elf.Section) {
	defer close(u.ready)
	f, err := u.open()
	if err != nil {
		u.secErr = err
		return
	}
	defer f.Close()
	bufs := make([][]byte, len(want))
	errs := make([]error, len(want))
	var wg sync.WaitGroup
	for i, w := range want {
		s := f.elf.Section(w.Name)
		if s == nil || s.Size != w.Size {
			errs[i] = errors.New("reopened file has another " + w.Name)
			continue
		}
		extra := 0
		if s.Name == ".debug_abbrev" {
			extra = 1 // the placeholders' empty table
		}
		wg.Go(func() {
			defer recoverTo(&errs[i], "read section "+s.Name)
			bufs[i], errs[i] = f.readSection(s, s.Size, extra)
		})
	}
	wg.Wait()
	sec := map[string][]byte{}
	for i, s := range want {
		if errs[i] != nil {
			u.secErr = &FormatError{Off: int64(min(s.Offset, maxFileSize)), Msg: "section " + s.Name + ": " + errs[i].Error()}
			return
		}
		sec[strings.TrimPrefix(s.Name, ".debug_")] = bufs[i]
	}
	abbrev := sec["abbrev"]
	if uint64(len(abbrev)) > 0xffffffff {
		u.secErr = errors.New(".debug_abbrev too large for a placeholder unit")
		return
	}
	u.empty = uint32(len(abbrev))
	sec["abbrev"] = append(abbrev, 0) // capacity was left for it
	u.sec = sec
}

// readSection reads the first n bytes of s (inflated), in a buffer with
// room for extra more.
func (f *File) readSection(s *elf.Section, n uint64, extra int) ([]byte, error) {
	n = min(n, s.Size)
	b := make([]byte, n, n+uint64(extra))
	r, err := f.openSection(s)
	if err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (u *sparseUnits) unit(pc uint64) (*dwarf.Data, dwarf.Offset, bool) {
	defer u.release()
	off, ok := findArange(u.aranges, pc)
	if !ok {
		return nil, 0, false
	}
	d := u.cover([]uint64{off})
	if d == nil || !slices.Contains(u.covered, off) {
		return nil, 0, false
	}
	die, ok := u.firstEntry(off)
	return d, die, ok
}

// firstEntry returns the offset of the first entry of the covered unit at
// off (debug/dwarf names units by it): after the unit's header.
func (u *sparseUnits) firstEntry(off uint64) (dwarf.Offset, bool) {
	if u.end(off)-off < 4+2+1+1+4 {
		return 0, false
	}
	n := uint64(4 + 2 + 4 + 1) // length, version, abbreviations, address size
	if u.order.Uint16(u.info[off+4:]) >= 5 {
		n++ // the unit type
		switch u.info[off+6] {
		case 4, 5: // DW_UT_skeleton, DW_UT_split_compile: the unit id
			n += 8
		case 2, 6: // DW_UT_type, DW_UT_split_type: signature and type offset
			n += 8 + 4
		}
	}
	if off+n > u.end(off) {
		return 0, false
	}
	return dwarf.Offset(off + n), true
}

func (u *sparseUnits) entry(off dwarf.Offset) *dwarf.Data {
	defer u.release()
	start, ok := u.unitOf(off)
	if !ok {
		return nil
	}
	return u.cover([]uint64{start})
}

// unitOf returns the offset of the unit holding the entry at off, walking
// the unit headers as far as off.
func (u *sparseUnits) unitOf(off dwarf.Offset) (uint64, bool) {
	if err := u.walk(uint64(off)); err != nil {
		return 0, false
	}
	i, found := slices.BinarySearch(u.starts, uint64(off))
	if !found {
		i--
	}
	if i < 0 {
		return 0, false
	}
	return u.starts[i], true
}

func (u *sparseUnits) prepareEntries(offs []dwarf.Offset) {
	defer u.release()
	if len(offs) == 0 {
		return
	}
	// One walk, as far as the last of them.
	if err := u.walk(uint64(slices.Max(offs))); err != nil {
		return
	}
	var starts []uint64
	for _, off := range offs {
		if start, ok := u.unitOf(off); ok {
			starts = append(starts, start)
		}
	}
	u.cover(starts)
}

func (u *sparseUnits) prepare(pcs []uint64) {
	defer u.release()
	var offs []uint64
	for _, pc := range pcs {
		if off, ok := findArange(u.aranges, pc); ok {
			offs = append(offs, off)
		}
	}
	u.cover(offs)
}

// cover returns DWARF data holding the units at offs as well as those read
// before; offsets that are not the start of a unit are ignored. It is nil
// once .debug_info could not be read or was made again too often: the
// caller then reads the whole DWARF.
func (u *sparseUnits) cover(offs []uint64) *dwarf.Data {
	if u.stopped {
		return nil
	}
	var add []uint64
	for _, off := range offs {
		if !slices.Contains(u.covered, off) && !slices.Contains(add, off) {
			add = append(add, off)
		}
	}
	if len(add) == 0 {
		return u.d
	}
	if u.rebuilds >= maxRebuilds {
		u.stopped = true
		return nil
	}
	if err := u.walk(slices.Max(add)); err != nil {
		u.stopped = true
		return nil
	}
	grew := false
	for _, off := range add {
		if _, ok := slices.BinarySearch(u.starts, off); ok {
			u.covered = append(u.covered, off)
			grew = true
		}
	}
	if !grew {
		return u.d
	}
	slices.Sort(u.covered)
	u.rebuilds++
	d, err := u.build()
	if err != nil {
		u.stopped = true
		return nil
	}
	u.d = d
	return d
}

// walk reads unit headers until the unit holding off (or the end of the
// section) is known, inflating more of .debug_info as it needs.
func (u *sparseUnits) walk(off uint64) error {
	for u.walked < u.infoSize && u.walked <= off {
		start := u.walked
		if err := u.need(start + 4); err != nil {
			return err
		}
		n := uint64(u.order.Uint32(u.info[start:]))
		if n >= 0xfffffff0 {
			// 64-bit DWARF, or reserved: left to debug/dwarf.
			return &FormatError{Off: -1, Msg: "unsupported .debug_info unit length", Val: n}
		}
		end := start + 4 + n
		if end > u.infoSize {
			return &FormatError{Off: -1, Msg: ".debug_info unit longer than the section", Val: n}
		}
		if n > 0 {
			u.starts = append(u.starts, start)
		}
		u.walked = end
	}
	return nil
}

// end returns where the unit starting at off ends.
func (u *sparseUnits) end(off uint64) uint64 {
	return off + 4 + uint64(u.order.Uint32(u.info[off:]))
}

// need makes at least the first n bytes of .debug_info available,
// inflating on from where the last call stopped. The file stays open
// until release.
func (u *sparseUnits) need(n uint64) error {
	if n <= uint64(len(u.info)) {
		return nil
	}
	if u.rd == nil {
		if len(u.info) > 0 {
			// Opened again: the stream starts over, so what was read
			// is inflated again. Read the rest of the section too, so
			// that no unit asked for later costs a third pass: asked
			// one address at a time, each new unit did.
			n = u.infoSize
		}
		f, err := u.open()
		if err != nil {
			return err
		}
		s := f.elf.Section(".debug_info")
		if s == nil || s.Size != u.infoSize {
			f.Close()
			return errors.New("reopened file has another .debug_info")
		}
		rd, err := f.openSection(s)
		if err != nil {
			f.Close()
			return err
		}
		u.f, u.rd = f, rd
		// A stream opened again starts over: skip what was read.
		if _, err := io.CopyN(io.Discard, u.rd, int64(len(u.info))); err != nil {
			return err
		}
	}
	// Read ahead: unit headers are walked a few bytes at a time.
	n = min(max(n, uint64(len(u.info))+256<<10), u.infoSize)
	l := len(u.info)
	if uint64(cap(u.info)) < n {
		// Room for the whole section at once, up to reserveInfo:
		// growing by a quarter, as append does for large slices,
		// copied what was inflated again and again, and each new
		// buffer's pages fault in anew. Past that, the size the file
		// claims is trusted only as far as doubling goes.
		c := u.infoSize
		if c > reserveInfo {
			c = min(max(n, 2*uint64(cap(u.info))), u.infoSize)
		}
		b := make([]byte, l, c)
		copy(b, u.info)
		u.info = b
	}
	u.info = u.info[:n]
	if _, err := io.ReadFull(u.rd, u.info[l:]); err != nil {
		u.info = u.info[:l]
		return err
	}
	return nil
}

// release closes the file need opened, unless the caller holds it open.
func (u *sparseUnits) release() {
	if u.held {
		return
	}
	if u.f != nil {
		u.f.Close()
		u.f, u.rd = nil, nil
	}
}

// hold keeps .debug_info's stream open until the function it returns is
// called, so that the calls meanwhile inflate it once.
func (u *sparseUnits) hold() (done func()) {
	u.held = true
	return func() {
		u.held = false
		u.release()
	}
}

// all returns the whole DWARF, made of the sections already read and
// .debug_info inflated to its end, for when an address falls outside
// .debug_aranges; nil if it cannot be read. It saves inflating every
// section again.
func (u *sparseUnits) all() (d *dwarf.Data) {
	defer u.release()
	defer func() {
		if recover() != nil {
			d = nil
		}
	}()
	if err := u.need(u.infoSize); err != nil {
		return nil
	}
	<-u.ready
	if u.secErr != nil {
		return nil
	}
	d, err := newDWARF(u.sec, u.info)
	if err != nil {
		return nil
	}
	return d
}

// build makes the DWARF data of the covered units, with placeholders
// between them.
func (u *sparseUnits) build() (d *dwarf.Data, err error) {
	defer recoverTo(&err, "read DWARF")
	last := u.covered[len(u.covered)-1]
	if err := u.need(u.end(last)); err != nil {
		return nil, err
	}
	<-u.ready
	if u.secErr != nil {
		return nil, u.secErr
	}
	view := make([]byte, u.end(last))
	at := uint64(0)
	for _, off := range u.covered {
		if gap := off - at; gap >= placeholderSize {
			p := view[at:off]
			u.order.PutUint32(p[0:], uint32(gap-4))
			u.order.PutUint16(p[4:], 4)
			u.order.PutUint32(p[6:], u.empty)
			p[10] = u.asize
		} else {
			copy(view[at:off], u.info[at:off]) // too short for a placeholder: the real units
		}
		end := u.end(off)
		copy(view[off:end], u.info[off:end])
		at = end
	}
	return newDWARF(u.sec, view)
}
