package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// SymbolsBuilder makes the __symbols__ file [EncodeSymbols] makes, from
// symbols added process by process, byte for byte the same. A long
// system-wide recording bundles a million symbols or more (one per
// process and function): [EncodeSymbolsInPlace] takes them as 56-byte
// structures, each holding its strings, and writes 32-byte records
// beside them; the builder holds only the records, and each distinct
// string once.
//
// Symbols are added in order of process ID; those of one process in any
// order, without two at one address. The zero SymbolsBuilder is ready to
// use.
type SymbolsBuilder struct {
	recs []byte // the records written, name and tag offsets relative to strs
	run  []Symbol
	// strs is the string table, from its NUL at offset 0 (none);
	// index finds each string in it.
	strs  []byte
	index map[string]uint32
	n     int
	err   error
}

// Add adds s, or returns an error when s's process comes before the
// last one's, or s ends before it begins. The records of a process are
// written when the next process's first comes (or by [SymbolsBuilder.Reader]).
func (b *SymbolsBuilder) Add(s Symbol) error {
	if b.err != nil {
		return b.err
	}
	if isTerminator(s) {
		return nil
	}
	if s.End < s.Begin {
		b.err = fmt.Errorf("symbol %q: end %#x before begin %#x", s.Name, s.End, s.Begin)
		return b.err
	}
	if len(b.run) > 0 && s.PID != b.run[0].PID {
		if s.PID < b.run[0].PID {
			b.err = fmt.Errorf("symbol %q of pid %d added after pid %d", s.Name, s.PID, b.run[0].PID)
			return b.err
		}
		b.flush()
	}
	b.run = append(b.run, s)
	b.n++
	return nil
}

// Len returns the number of symbols added.
func (b *SymbolsBuilder) Len() int { return b.n }

// flush writes the current process's records, in order of address.
func (b *SymbolsBuilder) flush() {
	slices.SortFunc(b.run, func(x, y Symbol) int {
		switch {
		case x.Begin < y.Begin:
			return -1
		case x.Begin > y.Begin:
			return 1
		}
		return 0
	})
	for _, s := range b.run {
		var r [symbolRecordSize]byte
		binary.NativeEndian.PutUint64(r[0:], s.Begin)
		binary.NativeEndian.PutUint64(r[8:], s.End)
		binary.NativeEndian.PutUint32(r[16:], uint32(s.PID))
		binary.NativeEndian.PutUint32(r[20:], b.intern(s.Name))
		binary.NativeEndian.PutUint32(r[24:], b.intern(s.Tag))
		b.recs = append(b.recs, r[:]...)
	}
	clear(b.run)
	b.run = b.run[:0]
}

// intern returns str's offset in the string table, adding it; 0 for "".
// Offsets past 4 GiB are caught by Reader, which adds the table's start.
func (b *SymbolsBuilder) intern(str string) uint32 {
	if str == "" {
		return 0
	}
	if off, ok := b.index[str]; ok {
		return off
	}
	if b.index == nil {
		b.index = make(map[string]uint32)
	}
	if len(b.strs) == 0 {
		b.strs = append(b.strs, 0)
	}
	off := uint32(min(len(b.strs), 1<<32-1))
	b.strs = append(b.strs, cutNUL(str)...)
	b.strs = append(b.strs, 0)
	b.index[str] = off
	return off
}

// Reader finishes the file and returns its bytes: the records, the
// all-zero record that ends them, then the string table. The builder's
// memory is the reader's: add nothing after.
func (b *SymbolsBuilder) Reader() (io.Reader, error) {
	if b.err != nil {
		return nil, b.err
	}
	b.flush()
	if len(b.strs) == 0 {
		b.strs = append(b.strs, 0)
	}
	base := uint64(len(b.recs) + symbolRecordSize)
	if base+uint64(len(b.strs)) > 1<<32 {
		return nil, fmt.Errorf("symbol string table exceeds 4 GiB")
	}
	for r := b.recs; len(r) >= symbolRecordSize; r = r[symbolRecordSize:] {
		for _, at := range [2]int{20, 24} {
			if off := binary.NativeEndian.Uint32(r[at:]); off != 0 {
				binary.NativeEndian.PutUint32(r[at:], off+uint32(base))
			}
		}
	}
	b.index = nil
	return io.MultiReader(bytes.NewReader(b.recs), bytes.NewReader(make([]byte, symbolRecordSize)), bytes.NewReader(b.strs)), nil
}
