package unwind

import (
	"sync/atomic"
	"unsafe"
)

// lazyFDEs holds the FDEs of an object's .eh_frame whose rows are made
// when an address of theirs is first looked up. Interpreting every FDE
// when the table was loaded held 24 bytes a row for code no sample
// reached: GCC's cc1 (45 k FDEs, 480 k rows) took 11.5 MB and 56 MB of
// allocations to load, libLLVM-14 22.8 MB and 140 MB, where their
// .eh_frame sections are 2.4 and 5.0 MB. The section is kept; each FDE
// costs 40 bytes until it is looked up.
type lazyFDEs struct {
	// begin and fdes are sorted by address, without overlaps: of
	// overlapping FDEs the first (by address, then in the section) is
	// kept, as Table.build keeps it.
	begin []uint64
	fdes  []lazyFDE
	cies  []*cie
	data  []byte
	// rows holds the rows of each FDE once made, ended by a terminator
	// at its end; an FDE whose instructions are malformed has none, and
	// covers nothing (interpreted whole, a later FDE overlapping it
	// would have covered its addresses: no real object seen has such
	// overlaps, and the tests check libc, cc1 and libstdc++ row by row).
	rows []atomic.Pointer[[]row]
	// made counts the rows made so far.
	made atomic.Int64
	// hints holds, by a hash of the address looked up, the index plus
	// one of the FDE last found for an address of that hash (see
	// Table.hints).
	hints [tableHints]atomic.Uint32
}

// lazyFDE is an FDE of lazyFDEs: its range, its instructions
// (data[ins:ins+n]) and its CIE (cies[cie]).
type lazyFDE struct {
	end    uint64
	ins, n uint32
	cie    uint32
}

// newLazyFDEs returns the FDEs of s, the section they were parsed from,
// to be interpreted when looked up; nil when none has a usable CIE or
// the section is too large to address with 32 bits.
func newLazyFDEs(s section, fdes []fde) *lazyFDEs {
	if len(s.data) > 1<<32-1 {
		return nil
	}
	fdes = sortFDEs(fdes)
	l := &lazyFDEs{data: s.data, begin: make([]uint64, 0, len(fdes)), fdes: make([]lazyFDE, 0, len(fdes))}
	cieIndex := make(map[*cie]uint32)
	var end uint64
	for i := range fdes {
		f := &fdes[i]
		if f.begin < end || initCIE(f.cie) != nil {
			continue
		}
		ci, ok := cieIndex[f.cie]
		if !ok {
			ci = uint32(len(l.cies))
			cieIndex[f.cie] = ci
			l.cies = append(l.cies, f.cie)
		}
		l.begin = append(l.begin, f.begin)
		l.fdes = append(l.fdes, lazyFDE{end: f.end, ins: uint32(f.ins), n: uint32(len(f.insns)), cie: ci})
		end = f.end
	}
	if len(l.fdes) == 0 {
		return nil
	}
	l.rows = make([]atomic.Pointer[[]row], len(l.fdes))
	return l
}

// find returns the row covering link-time address a, or nil.
func (l *lazyFDEs) find(a uint64) *row {
	h := &l.hints[(a*0x9e3779b97f4a7c15)>>(64-tableHintBits)]
	i := int(h.Load()) - 1
	if i < 0 || i >= len(l.begin) || l.begin[i] > a || a >= l.fdes[i].end {
		lo, hi := 0, len(l.begin)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if l.begin[m] <= a {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if i = lo - 1; i < 0 || a >= l.fdes[i].end {
			return nil
		}
		h.Store(uint32(i + 1))
	}
	rows := l.rows[i].Load()
	if rows == nil {
		rows = l.make(i)
	}
	return findRow(*rows, a)
}

// make interprets FDE i into its rows, keeps and returns them. Two
// goroutines may both make them: they make the same rows.
func (l *lazyFDEs) make(i int) *[]row {
	f := &l.fdes[i]
	fd := fde{cie: l.cies[f.cie], begin: l.begin[i], end: f.end, insns: l.data[f.ins : f.ins+f.n : f.ins+f.n]}
	var in interp
	rows, err := in.rows(make([]row, 0, 8), &fd)
	if err != nil {
		rows = nil // covers nothing, as Table.build leaves it out
	} else {
		rows = append(rows, row{addr: f.end})
	}
	rows = rows[:len(rows):len(rows)]
	l.rows[i].Store(&rows)
	l.made.Add(int64(len(rows)))
	return &rows
}

// size returns the memory l holds, in bytes: the section, the FDEs and
// the rows made so far.
func (l *lazyFDEs) size() int {
	perFDE := int(unsafe.Sizeof(lazyFDE{})) + 8 + int(unsafe.Sizeof(atomic.Pointer[[]row]{}))
	return len(l.data) + perFDE*len(l.fdes) + int(unsafe.Sizeof(row{}))*int(l.made.Load())
}
