package capture

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
)

// SymbolsFile is the embedded file in which Sysprof bundles symbol names
// at the end of a recording, so a capture can be read on another machine.
// Sysprof 45+ stores it gzip-compressed as "__symbols__.gz"; [Files.Lookup]
// finds either.
const SymbolsFile = "__symbols__"

// Symbol names the code at addresses Begin..End (inclusive) of process PID.
// Tag is a short library nickname such as "libc" or "Kernel"; it may be
// empty.
type Symbol struct {
	PID   int32
	Begin uint64
	End   uint64
	Name  string
	Tag   string
}

const symbolRecordSize = 32

// EncodeSymbols returns the __symbols__ file for syms in Sysprof's layout:
// records {u64 begin, u64 end, u32 pid, u32 name offset, u32 tag offset,
// u32 padding} sorted by (pid, begin) and ended by an all-zero record, then
// a string table; offsets count from the start of the file and 0 means
// none. Ranges are inclusive, which Sysprof 3.46 requires; Sysprof 45+
// treats the end as exclusive and so misses only a range's last byte.
// Records are in the machine's byte order, as Sysprof writes them. A
// symbol of pid 0 at 0..0 without a name is left out: its record would
// read as the terminator.
func EncodeSymbols(syms []Symbol) ([]byte, error) {
	return EncodeSymbolsInPlace(slices.Clone(syms))
}

// EncodeSymbolsInPlace is [EncodeSymbols] without a copy of syms, which
// it sorts and from which it removes what it leaves out: the bundle of a
// long system-wide recording holds millions of symbols (one per process
// and function), and the copy was a third of the recorder's peak memory.
func EncodeSymbolsInPlace(syms []Symbol) ([]byte, error) {
	s := slices.DeleteFunc(syms, isTerminator)
	sort.Slice(s, func(i, j int) bool {
		if s[i].PID != s[j].PID {
			return s[i].PID < s[j].PID
		}
		return s[i].Begin < s[j].Begin
	})
	strBase := (len(s) + 1) * symbolRecordSize
	var strs bytes.Buffer
	strs.WriteByte(0) // offset strBase+0 is never used: 0 means none
	index := map[string]uint32{}
	intern := func(str string) (uint32, error) {
		if str == "" {
			return 0, nil
		}
		if off, ok := index[str]; ok {
			return off, nil
		}
		off := strBase + strs.Len()
		if off > 1<<32-1 {
			return 0, fmt.Errorf("symbol string table exceeds 4 GiB")
		}
		strs.WriteString(cutNUL(str))
		strs.WriteByte(0)
		index[str] = uint32(off)
		return uint32(off), nil
	}
	out := make([]byte, strBase, strBase+strs.Len())
	for i, sym := range s {
		if sym.End < sym.Begin {
			return nil, fmt.Errorf("symbol %q: end %#x before begin %#x", sym.Name, sym.End, sym.Begin)
		}
		name, err := intern(sym.Name)
		if err != nil {
			return nil, err
		}
		tag, err := intern(sym.Tag)
		if err != nil {
			return nil, err
		}
		r := out[i*symbolRecordSize:]
		binary.NativeEndian.PutUint64(r[0:], sym.Begin)
		binary.NativeEndian.PutUint64(r[8:], sym.End)
		binary.NativeEndian.PutUint32(r[16:], uint32(sym.PID))
		binary.NativeEndian.PutUint32(r[20:], name)
		binary.NativeEndian.PutUint32(r[24:], tag)
	}
	return append(out, strs.Bytes()...), nil
}

// SymbolTable looks up names in a decoded __symbols__ file.
type SymbolTable struct {
	// recs are the records sorted by (pid, begin), each naming its
	// strings by their index in strs (strs[0] is ""): a Symbol, 56
	// bytes, held 19 MB for the 350 k records of a 60 s capture of a
	// build, most of them pointing at strings the others share.
	recs []symRec
	strs []string
	// pids are the records of each process (see [pidIndex]).
	pids pidIndex
}

// symRec is one record of a [SymbolTable].
type symRec struct {
	begin, end uint64
	name, tag  uint32
}

// DecodeSymbols parses a __symbols__ file written by Sysprof (3.46 or 45+)
// or by [EncodeSymbols]. A damaged file yields the records before the
// damage and an error naming the offset.
func DecodeSymbols(b []byte) (*SymbolTable, error) {
	n := countSymbols(b)
	t := &SymbolTable{recs: make([]symRec, 0, n), strs: []string{""}}
	pids := make([]int32, 0, n)
	// Writers share a string among the records naming it (a library's
	// functions in each process that maps it): one copy each.
	index := make(map[uint32]uint32)
	str := func(off uint32, at int) (uint32, error) {
		if off == 0 {
			return 0, nil
		}
		if int64(off) >= int64(len(b)) {
			return 0, &FormatError{Off: int64(at), Msg: "__symbols__ string offset past the end", Val: off}
		}
		i, ok := index[off]
		if !ok {
			i = uint32(len(t.strs))
			t.strs = append(t.strs, cstring(b[off:]))
			index[off] = i
		}
		return i, nil
	}
	for off := 0; ; off += symbolRecordSize {
		if off+symbolRecordSize > len(b) {
			return t.sorted(pids), &FormatError{Off: int64(off), Msg: "__symbols__ has no terminating record"}
		}
		r := b[off : off+symbolRecordSize]
		begin, end := binary.NativeEndian.Uint64(r), binary.NativeEndian.Uint64(r[8:])
		pid := int32(binary.NativeEndian.Uint32(r[16:]))
		no, to := binary.NativeEndian.Uint32(r[20:]), binary.NativeEndian.Uint32(r[24:])
		// Sysprof ends the records at the first whose begin, end, pid
		// and name offset are all 0, whatever its tag offset.
		if begin == 0 && end == 0 && pid == 0 && no == 0 {
			break
		}
		name, err := str(no, off)
		if err != nil {
			return t.sorted(pids), err
		}
		tag, err := str(to, off)
		if err != nil {
			return t.sorted(pids), err
		}
		t.recs = append(t.recs, symRec{begin: begin, end: end, name: name, tag: tag})
		pids = append(pids, pid)
	}
	return t.sorted(pids), nil
}

// countSymbols returns the number of records of a __symbols__ file before
// its terminating record (or its end).
func countSymbols(b []byte) int {
	n := 0
	for off := 0; off+symbolRecordSize <= len(b); off += symbolRecordSize {
		r := b[off : off+symbolRecordSize]
		if binary.NativeEndian.Uint64(r) == 0 && binary.NativeEndian.Uint64(r[8:]) == 0 && binary.NativeEndian.Uint32(r[16:]) == 0 && binary.NativeEndian.Uint32(r[20:]) == 0 {
			break
		}
		n++
	}
	return n
}

// isTerminator reports whether s would encode as the record that ends the
// records.
func isTerminator(s Symbol) bool {
	return s.PID == 0 && s.Begin == 0 && s.End == 0 && s.Name == ""
}

// sorted orders t's records by (pid, begin), pids giving each record's
// pid (as read, the order nsprof's and Sysprof's writers use), and indexes
// them by pid.
func (t *SymbolTable) sorted(pids []int32) *SymbolTable {
	less := func(i, j int) int {
		if c := cmp.Compare(pids[i], pids[j]); c != 0 {
			return c
		}
		return cmp.Compare(t.recs[i].begin, t.recs[j].begin)
	}
	ordered := true
	for i := 1; i < len(pids) && ordered; i++ {
		ordered = less(i-1, i) <= 0
	}
	if !ordered {
		order := make([]int32, len(pids))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, b int32) int { return less(int(a), int(b)) })
		recs, ps := make([]symRec, len(order)), make([]int32, len(order))
		for i, o := range order {
			recs[i], ps[i] = t.recs[o], pids[o]
		}
		t.recs, pids = recs, ps
	}
	t.pids = newPIDIndex(len(pids), func(i int) int32 { return pids[i] })
	return t
}

// Len returns the number of records.
func (t *SymbolTable) Len() int { return len(t.recs) }

// Symbols returns the records sorted by (pid, begin).
func (t *SymbolTable) Symbols() []Symbol {
	out := make([]Symbol, 0, len(t.recs))
	for k, pid := range t.pids.pids {
		for i := t.pids.start[k]; i < t.pids.start[k+1]; i++ {
			out = append(out, t.symbol(pid, i))
		}
	}
	return out
}

// symbol returns record i, of process pid.
func (t *SymbolTable) symbol(pid int32, i int) Symbol {
	r := &t.recs[i]
	return Symbol{PID: pid, Begin: r.begin, End: r.end, Name: t.strs[r.name], Tag: t.strs[r.tag]}
}

// Lookup returns the symbol of process pid containing addr (ends
// inclusive), as Sysprof's bsearch on (pid, address) does.
func (t *SymbolTable) Lookup(pid int32, addr uint64) (Symbol, bool) {
	// The last record of pid beginning at addr or below, as a binary
	// search of all records by (pid, begin) finds it.
	start, hi := t.pids.span(pid)
	lo := start
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.recs[m].begin <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == start || addr > t.recs[lo-1].end {
		return Symbol{}, false
	}
	return t.symbol(pid, lo-1), true
}
