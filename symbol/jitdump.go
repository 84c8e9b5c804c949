package symbol

import (
	"bytes"
	"encoding/binary"
	"io"
	"path"
	"strconv"
	"strings"

	"nsprof/internal/pageread"
)

// A jitdump (jit-PID.dump) is the binary file in which a JIT describes the
// code it generates, for perf inject --jit: V8's --perf-prof (Node.js),
// the JVM's perf agent, .NET, Wasmtime and Python 3.13's -X perf_jit write
// one. The JIT maps the file executable so that a profiler sees it among
// the process's mappings, then appends a record per event: code loaded
// (its address, size and name, then the code itself), code moved, debug
// information, unwinding information (the code's .eh_frame), the file
// closed. The layout is
// perf's (tools/perf/util/jitdump.h): a header, then records that each
// start with an id, their total size and a timestamp, in the byte order
// of the machine that wrote them.
const (
	jitMagic            uint32 = 0x4A695444 // "JiTD" as a native uint32
	jitHeaderSize              = 40         // magic .. flags
	jitPrefixSize              = 16         // id, total size, timestamp
	jitLoadFixed               = jitPrefixSize + 40
	jitMoveSize                = jitPrefixSize + 48
	jitUnwindFixed             = jitPrefixSize + 24
	jitRecCodeLoad             = 0
	jitRecCodeMove             = 1
	jitRecUnwindingInfo        = 4
	jitMaxNameBytes            = maxPerfMapLine
	// jitMaxEHFrame bounds the call frame information of one code load
	// that ParseJITDumpUnwind keeps: Python 3.13's is 48 bytes (a CIE
	// and an FDE).
	jitMaxEHFrame = 64 << 10
)

// IsJITDumpPath reports whether a mapping's path names a jitdump, as perf
// recognizes one: a file named jit-PID.dump.
func IsJITDumpPath(name string) bool {
	b := path.Base(name)
	digits, ok := strings.CutPrefix(b, "jit-")
	if !ok {
		return false
	}
	digits, ok = strings.CutSuffix(digits, ".dump")
	if !ok || digits == "" {
		return false
	}
	_, err := strconv.ParseUint(digits, 10, 32)
	return err == nil
}

// ParseJITDump reads the names of the code a jitdump describes, from its
// first size bytes: each code-load record's name over the code's address
// range, and a moved code's name over its new range. Addresses are
// absolute, as in a perf map. A later record for the same address wins,
// as the JIT may reuse the memory of freed code. The code bytes, debug and
// unwinding records are not parsed: the file is read in 64 KiB pages, so
// they are read only as the pages around the records hold them.
//
// The file may still be written as it is read: a last record that runs
// past size ends the table without an error. A header that is not a
// jitdump's, or a record that cannot be one (shorter than its own fixed
// fields, a code name not terminated within it), is a *[FormatError]
// naming its offset; the names read before the bad record are returned
// with it.
func ParseJITDump(r io.ReaderAt, size int64) (*Table, error) {
	p, err := parseJITDump(r, size, 0, false)
	if p == nil {
		return nil, err
	}
	return p.table(), err
}

// JITUnwind is what a jitdump says of one code load or move for an
// unwinder: the code at [Start, End), and the .eh_frame bytes (CIEs and
// FDEs) of the unwinding record that came before the code-load record,
// nil when none did (the code is known, without call frame information).
// The FDEs' addresses are as the JIT encoded them, relative to where perf
// inject places the bytes after the code; the first FDE is for the code's
// first byte.
type JITUnwind struct {
	Start, End uint64
	EHFrame    []byte
}

// ParseJITDumpUnwind reads the code a jitdump describes and the call frame
// information it gives, from the record at offset from (0: the first) to
// size bytes, in the file's order: each code load, with the .eh_frame of
// the unwinding record before it when there is one (Python 3.13's -X
// perf_jit writes one before each code load, V8 with
// --perf-prof-unwinding-info), and each code move, without. An unwinding
// record of more than 64 KiB of .eh_frame is skipped, its code given
// without. Damage and a record still being written end it as they end
// [ParseJITDump]. next is where to go on from once the JIT has written
// more: the first record not read, or an unwinding record whose code load
// was not there yet.
func ParseJITDumpUnwind(r io.ReaderAt, size, from int64) (codes []JITUnwind, next int64, err error) {
	p, err := parseJITDump(r, size, from, true)
	if p == nil {
		return nil, from, err
	}
	if p.pending != nil {
		p.next = p.pendingAt
	}
	return p.unwind, p.next, err
}

// parseJITDump walks the records of a jitdump from offset from (0: the
// first), collecting names, or call frame information when unwind is
// set. The parser is nil when the header is bad.
func parseJITDump(r io.ReaderAt, size, from int64, unwind bool) (*jitParser, error) {
	var h [jitHeaderSize]byte
	if size < jitHeaderSize {
		return nil, &FormatError{Off: 0, Msg: "jitdump: shorter than its header", Val: size}
	}
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, &FormatError{Off: 0, Msg: "jitdump: reading the header: " + err.Error()}
	}
	var bo binary.ByteOrder = binary.LittleEndian
	switch jitMagic {
	case binary.LittleEndian.Uint32(h[:]):
	case binary.BigEndian.Uint32(h[:]):
		bo = binary.BigEndian
	default:
		return nil, &FormatError{Off: 0, Msg: "jitdump: bad magic", Val: binary.LittleEndian.Uint32(h[:])}
	}
	if v := bo.Uint32(h[4:]); v != 1 {
		return nil, &FormatError{Off: 4, Msg: "jitdump: unsupported version", Val: v}
	}
	off := int64(bo.Uint32(h[8:])) // the header's own size
	if off < jitHeaderSize || off > size {
		return nil, &FormatError{Off: 8, Msg: "jitdump: bad header size", Val: off}
	}
	src := pageread.File(r, 0, uint64(size), jitPageSize, jitPages)
	src.ReusePages()
	p := &jitParser{src: src, bo: bo, size: size, names: make(map[uint64]string), unwinding: unwind}
	off = max(off, from)
	p.next = off
	for off+jitPrefixSize <= size {
		n, err := p.record(off)
		if err != nil {
			return p, err
		}
		if n == 0 {
			break // the last record, still being written
		}
		off += n
		p.next = off
	}
	return p, nil
}

// jitParser collects the names of a jitdump's records.
type jitParser struct {
	bo   binary.ByteOrder
	size int64
	es   []entry
	// names holds the name of each code index loaded, for the records
	// that move the code.
	names map[uint64]string
	src   *pageread.Source
	// unwinding says the call frame information is collected rather
	// than the names: into unwind, pending holding an unwinding
	// record's .eh_frame until the code load it comes before.
	unwinding bool
	unwind    []JITUnwind
	pending   []byte
	pendingAt int64 // the offset of pending's record
	// next is the offset of the first record not read.
	next int64
}

// record reads the record at off and returns its size, 0 when it runs
// past the end of what is written.
func (p *jitParser) record(off int64) (int64, error) {
	pre, err := p.at(off, jitPrefixSize)
	if err != nil {
		return 0, nil
	}
	id, n := p.bo.Uint32(pre), int64(p.bo.Uint32(pre[4:]))
	if n < jitPrefixSize {
		return 0, &FormatError{Off: off + 4, Msg: "jitdump: record shorter than its prefix", Val: n}
	}
	if off+n > p.size {
		return 0, nil
	}
	switch id {
	case jitRecCodeLoad:
		if n < jitLoadFixed+1 {
			return 0, &FormatError{Off: off + 4, Msg: "jitdump: code load record too short", Val: n}
		}
		// The fixed fields and the start of the name, up to its NUL or
		// the bound on names; not the code after it.
		want := min(n, jitLoadFixed+jitMaxNameBytes+1)
		b, err := p.at(off, want)
		if err != nil {
			return 0, nil
		}
		name, _, ok := bytes.Cut(b[jitLoadFixed:], []byte{0})
		if !ok {
			if want < n {
				return 0, &FormatError{Off: off + jitLoadFixed, Msg: "jitdump: code name longer than the bound", Val: jitMaxNameBytes}
			}
			return 0, &FormatError{Off: off + jitLoadFixed, Msg: "jitdump: code name not terminated in its record"}
		}
		addr, codeSize, index := p.bo.Uint64(b[32:]), p.bo.Uint64(b[40:]), p.bo.Uint64(b[48:])
		if p.unwinding {
			if codeSize != 0 && addr+codeSize > addr {
				p.unwind = append(p.unwind, JITUnwind{Start: addr, End: addr + codeSize, EHFrame: p.pending})
			}
			p.pending = nil
			break
		}
		s := string(name)
		p.names[index] = s
		p.add(s, addr, codeSize)
	case jitRecCodeMove:
		if n < jitMoveSize {
			return 0, &FormatError{Off: off + 4, Msg: "jitdump: code move record too short", Val: n}
		}
		b, err := p.at(off, jitMoveSize)
		if err != nil {
			return 0, nil
		}
		addr, codeSize, index := p.bo.Uint64(b[40:]), p.bo.Uint64(b[48:]), p.bo.Uint64(b[56:])
		if p.unwinding {
			if codeSize != 0 && addr+codeSize > addr {
				p.unwind = append(p.unwind, JITUnwind{Start: addr, End: addr + codeSize})
			}
			break
		}
		if s, ok := p.names[index]; ok {
			p.add(s, addr, codeSize)
		}
	case jitRecUnwindingInfo:
		if !p.unwinding {
			break
		}
		p.pendingAt = off
		return n, p.unwindingInfo(off, n)
	}
	return n, nil
}

// unwindingInfo keeps the .eh_frame of the unwinding record at off, n
// bytes long, for the code load that follows: its unwinding data is the
// .eh_frame, then the .eh_frame_hdr perf inject writes after it.
func (p *jitParser) unwindingInfo(off, n int64) error {
	p.pending = nil
	if n < jitUnwindFixed {
		return &FormatError{Off: off + 4, Msg: "jitdump: unwinding record too short", Val: n}
	}
	b, err := p.at(off, jitUnwindFixed)
	if err != nil {
		return nil
	}
	size, hdr := p.bo.Uint64(b[16:]), p.bo.Uint64(b[24:])
	if size > uint64(n-jitUnwindFixed) || hdr > size {
		return &FormatError{Off: off + 16, Msg: "jitdump: unwinding data larger than its record", Val: size}
	}
	eh := int64(size - hdr)
	if eh == 0 || eh > jitMaxEHFrame {
		return nil
	}
	data, err := p.at(off+jitUnwindFixed, eh)
	if err != nil {
		return nil
	}
	p.pending = bytes.Clone(data)
	return nil
}

// jitPageSize is how much of a jitdump one read takes in, jitPages of
// them kept: its records are read in order, most of them a few hundred
// bytes of which the code is skipped. Read record by record, the 1.9 MB
// dump of a two-second Node.js script took 6,631 pread calls; 35 in
// pages (strace -c).
const (
	jitPageSize = 64 << 10
	jitPages    = 2
)

// at returns the n bytes at off, which end within the parsed size, valid
// until the next call.
func (p *jitParser) at(off, n int64) ([]byte, error) {
	b := p.src.At(uint64(off), uint64(n))
	if int64(len(b)) < n {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

// add names the code at [addr, addr+size), unless the range is empty or
// wraps.
func (p *jitParser) add(name string, addr, size uint64) {
	if size == 0 || addr+size < addr || name == "" {
		return
	}
	p.es = append(p.es, entry{Symbol: Symbol{Name: name, Addr: addr, Size: size}, rank: len(p.es)})
}

// table returns the names added, sorted.
func (p *jitParser) table() *Table { return buildTable(p.es, nil) }

// Merge returns a table of the symbols of a and b; where both name the
// same address, a's symbol wins.
func Merge(a, b *Table) *Table {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return merge(a, b)
}
