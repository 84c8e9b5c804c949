package capture

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"os"
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
// Symbols are best added in order of process ID (those of one process
// in any order, without two at one address): the bytes are then
// EncodeSymbols'. Processes out of order are put in order when the file
// is finished, at the cost of a copy of the records. The zero
// SymbolsBuilder is ready to use; [SymbolsBuilder.KeepIn] moves its
// records to a file.
type SymbolsBuilder struct {
	recs []byte // the records written, name and tag offsets relative to strs
	// file, when set, holds the records instead of recs: fileSize bytes.
	file     *os.File
	fileSize int64
	scratch  []byte
	run      []Symbol
	// runs are the processes' records in recs, in the order added;
	// sorted says their pids only grew.
	runs     []symbolsRun
	unsorted bool
	// strs is the string table, from its NUL at offset 0 (none);
	// index finds each string in it.
	strs  []byte
	index map[string]uint32
	n     int
	err   error
}

// symbolsRun is one process's records: recs[off:off+n*symbolRecordSize]
// (or those bytes of the file).
type symbolsRun struct {
	pid    int32
	off, n int
}

// KeepIn has the builder write its records to f, a file it then owns
// (closing it is the caller's, after the file is read): a system-wide
// recording over a compile loop bundles about 150 a process (195,711
// for 1,299 processes in 40 s), some 75 MB for the 15,700 processes of
// ten minutes, that stayed in memory until the end. When f cannot be written, the records
// go back to memory (or, those written unreadable, the file is refused).
func (b *SymbolsBuilder) KeepIn(f *os.File) {
	if b.file != nil || len(b.recs) > 0 || b.n > 0 {
		return // only from the start
	}
	b.file = f
}

// size returns the bytes of records written.
func (b *SymbolsBuilder) size() int {
	if b.file != nil {
		return int(b.fileSize)
	}
	return len(b.recs)
}

// write appends encoded records to the file or to recs.
func (b *SymbolsBuilder) write(recs []byte) {
	if b.file != nil {
		if _, err := b.file.WriteAt(recs, b.fileSize); err == nil {
			b.fileSize += int64(len(recs))
			return
		}
		// Back to memory, with what the file holds.
		b.recs = make([]byte, b.fileSize, b.fileSize+int64(len(recs)))
		if _, err := b.file.ReadAt(b.recs, 0); err != nil {
			b.err = fmt.Errorf("symbol records: %w", err)
		}
		b.file, b.fileSize = nil, 0
	}
	b.recs = append(b.recs, recs...)
}

// Add adds s, or returns an error when s ends before it begins (the
// file is then refused). The records of a process are written when
// another process's first comes (or by [SymbolsBuilder.Reader]).
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
	if len(b.run) == 0 {
		return
	}
	pid := b.run[0].PID
	if k := len(b.runs); k > 0 && b.runs[k-1].pid >= pid {
		b.unsorted = true
	}
	b.runs = append(b.runs, symbolsRun{pid: pid, off: b.size(), n: len(b.run)})
	slices.SortFunc(b.run, func(x, y Symbol) int { return cmp.Compare(x.Begin, y.Begin) })
	out := b.scratch[:0]
	for _, s := range b.run {
		var r [symbolRecordSize]byte
		binary.NativeEndian.PutUint64(r[0:], s.Begin)
		binary.NativeEndian.PutUint64(r[8:], s.End)
		binary.NativeEndian.PutUint32(r[16:], uint32(s.PID))
		binary.NativeEndian.PutUint32(r[20:], b.intern(s.Name))
		binary.NativeEndian.PutUint32(r[24:], b.intern(s.Tag))
		out = append(out, r[:]...)
	}
	b.write(out)
	b.scratch = out[:0]
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
// memory (and file) is the reader's: add nothing after.
func (b *SymbolsBuilder) Reader() (io.Reader, error) {
	if b.err != nil {
		return nil, b.err
	}
	b.flush()
	if b.err != nil {
		return nil, b.err
	}
	if b.unsorted && b.file != nil {
		// Put in order in memory: records out of order are rare (a pid
		// read as an int past 2^31).
		b.recs = make([]byte, b.fileSize)
		if _, err := b.file.ReadAt(b.recs, 0); err != nil {
			return nil, fmt.Errorf("symbol records: %w", err)
		}
		b.file, b.fileSize = nil, 0
	}
	if b.unsorted {
		b.recs = b.ordered()
	}
	if len(b.strs) == 0 {
		b.strs = append(b.strs, 0)
	}
	base := uint64(b.size() + symbolRecordSize)
	if base+uint64(len(b.strs)) > 1<<32 {
		return nil, fmt.Errorf("symbol string table exceeds 4 GiB")
	}
	b.index = nil
	tail := io.MultiReader(bytes.NewReader(make([]byte, symbolRecordSize)), bytes.NewReader(b.strs))
	if b.file != nil {
		return io.MultiReader(&rebasing{r: io.NewSectionReader(b.file, 0, b.fileSize), base: uint32(base)}, tail), nil
	}
	rebase(b.recs, uint32(base))
	return io.MultiReader(bytes.NewReader(b.recs), tail), nil
}

// rebase adds base, the string table's offset in the file, to the name
// and tag offsets of recs (whole records) that are not 0 (none).
func rebase(recs []byte, base uint32) {
	for r := recs; len(r) >= symbolRecordSize; r = r[symbolRecordSize:] {
		for _, at := range [2]int{20, 24} {
			if off := binary.NativeEndian.Uint32(r[at:]); off != 0 {
				binary.NativeEndian.PutUint32(r[at:], off+base)
			}
		}
	}
}

// rebasing reads records from r, rebased (see rebase) a buffer of whole
// records at a time.
type rebasing struct {
	r    io.Reader
	base uint32
	buf  []byte
	pend []byte // rebased bytes not read yet
}

func (x *rebasing) Read(p []byte) (int, error) {
	if len(x.pend) == 0 {
		if x.buf == nil {
			x.buf = make([]byte, 2048*symbolRecordSize)
		}
		n, err := io.ReadFull(x.r, x.buf)
		n -= n % symbolRecordSize
		if n == 0 {
			if err == io.ErrUnexpectedEOF {
				err = io.EOF // a partial record cannot be: the file holds whole ones
			}
			return 0, err
		}
		rebase(x.buf[:n], x.base)
		x.pend = x.buf[:n]
	}
	n := copy(p, x.pend)
	x.pend = x.pend[n:]
	return n, nil
}

// ordered returns the records in order of (pid, begin): the runs of
// each process in turn, a process added in several runs merged.
func (b *SymbolsBuilder) ordered() []byte {
	slices.SortStableFunc(b.runs, func(x, y symbolsRun) int { return cmp.Compare(x.pid, y.pid) })
	out := make([]byte, 0, len(b.recs))
	for i := 0; i < len(b.runs); {
		j := i + 1
		for j < len(b.runs) && b.runs[j].pid == b.runs[i].pid {
			j++
		}
		start := len(out)
		for _, r := range b.runs[i:j] {
			out = append(out, b.recs[r.off:r.off+r.n*symbolRecordSize]...)
		}
		if j-i > 1 {
			sortRecords(out[start:])
		}
		i = j
	}
	return out
}

// sortRecords sorts encoded records by begin address, stably.
func sortRecords(recs []byte) {
	n := len(recs) / symbolRecordSize
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	begin := func(i int) uint64 { return binary.NativeEndian.Uint64(recs[i*symbolRecordSize:]) }
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(begin(x), begin(y)) })
	sorted := make([]byte, 0, len(recs))
	for _, i := range idx {
		sorted = append(sorted, recs[i*symbolRecordSize:(i+1)*symbolRecordSize]...)
	}
	copy(recs, sorted)
}
