package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// procSpill keeps what the symbolizer knows of exited processes in a
// temporary file until the recording ends: their mappings and the
// addresses they sampled, named when the symbols are bundled. Held in
// memory, they grew the recorder by several kilobytes a process: over a
// loop of compiles (about 30 processes a second) its resident memory rose
// some 15 MB a minute. What stays in memory is where each process's
// record is (and the objects' numbers): about 8 bytes a process.
//
// The file is made by os.CreateTemp (O_EXCL: never a planted symlink)
// and removed at once; only its descriptor reaches it.
type procSpill struct {
	f    *os.File
	size int64
	at   spillIndex
	// objs numbers the objects the records name; an object numbered
	// stays open until the capture ends (nextCapture, close).
	objs  []*symObj
	objNo map[*symObj]uint64
	// failed counts the records that could not be written (their
	// processes stayed in memory) or read back (their names are lost:
	// see symbolizer.bundle's note).
	writeFailed, readFailed int
	buf                     []byte
}

// spillRef is where a process's record is in the file: its offset
// shifted left by refLenBits, or'd with its length; 0 for none.
type spillRef uint64

// refLenBits is the bits of a spillRef that hold the record's length: a
// longer record (or one past 2^40 bytes of file) is not written out.
const refLenBits = 24

func (r spillRef) off() int64 { return int64(r >> refLenBits) }
func (r spillRef) len() int   { return int(r & (1<<refLenBits - 1)) }

// spillIndex maps pids to their records' places, in pages of
// spillPageSize consecutive pids. The kernel hands out pids in order, so
// the pages of a long recording fill up: 8 bytes a process written out,
// where a map took 45 to 55 (over a long recording of processes coming
// and going, the index was the largest part of what still grew).
type spillIndex struct {
	pages map[uint32]*[spillPageSize]spillRef
	n     int
}

const spillPageSize = 1024

func (x *spillIndex) get(pid uint32) spillRef {
	if pg := x.pages[pid/spillPageSize]; pg != nil {
		return pg[pid%spillPageSize]
	}
	return 0
}

func (x *spillIndex) set(pid uint32, r spillRef) {
	if x.pages == nil {
		x.pages = make(map[uint32]*[spillPageSize]spillRef)
	}
	pg := x.pages[pid/spillPageSize]
	if pg == nil {
		pg = new([spillPageSize]spillRef)
		x.pages[pid/spillPageSize] = pg
	}
	if pg[pid%spillPageSize] == 0 {
		x.n++
	}
	pg[pid%spillPageSize] = r
}

// remove forgets pid's record, and the page it was the last of.
func (x *spillIndex) remove(pid uint32) {
	pg := x.pages[pid/spillPageSize]
	if pg == nil || pg[pid%spillPageSize] == 0 {
		return
	}
	pg[pid%spillPageSize] = 0
	x.n--
	for _, r := range pg {
		if r != 0 {
			return
		}
	}
	delete(x.pages, pid/spillPageSize)
}

// len returns the number of records.
func (x *spillIndex) len() int { return x.n }

// errSpillRecord is a record that does not decode: the file changed
// under the recorder, or a bug.
var errSpillRecord = errors.New("spilled process record damaged")

// spillable says whether p can be written out: it holds no open view of
// its files, and its addresses are packed (see symProc.pack).
func spillable(p *symProc) bool {
	if p.cp != nil || p.owns || p.kernel != nil || len(p.jit) > 0 {
		return false
	}
	for _, g := range p.gensRef() {
		if g.user != nil {
			return false
		}
	}
	return true
}

// put writes p as pid's record; false when it could not (p stays where
// it was).
func (sp *procSpill) put(pid int, p *symProc) bool {
	if sp.f == nil {
		f, err := os.CreateTemp("", "nsprof-spill-*")
		if err != nil {
			sp.writeFailed++
			return false
		}
		os.Remove(f.Name())
		sp.f, sp.objNo = f, make(map[*symObj]uint64)
	}
	b := sp.encode(sp.buf[:0], p)
	sp.buf = b
	if len(b) >= 1<<refLenBits || sp.size >= 1<<(64-refLenBits) {
		sp.writeFailed++
		return false
	}
	if _, err := sp.f.WriteAt(b, sp.size); err != nil {
		sp.writeFailed++
		return false
	}
	sp.at.set(uint32(pid), spillRef(uint64(sp.size)<<refLenBits|uint64(len(b))))
	sp.size += int64(len(b))
	return true
}

// has says whether pid has a record.
func (sp *procSpill) has(pid int) bool {
	return sp.at.get(uint32(pid)) != 0
}

// get reads pid's record back; nil if there is none, or it could not be
// read (counted).
func (sp *procSpill) get(pid int) *symProc {
	ref := sp.at.get(uint32(pid))
	if ref == 0 {
		return nil
	}
	b := make([]byte, ref.len())
	if _, err := sp.f.ReadAt(b, ref.off()); err != nil {
		sp.readFailed++
		return nil
	}
	p, err := sp.decode(b)
	if err != nil {
		sp.readFailed++
		return nil
	}
	return p
}

// take reads pid's record back and forgets it: the process is followed
// again (a late sample, or its pid reused).
func (sp *procSpill) take(pid int) *symProc {
	p := sp.get(pid)
	sp.at.remove(uint32(pid))
	return p
}

// pids returns the processes with records.
func (sp *procSpill) pids() []int {
	out := make([]int, 0, sp.at.len())
	for base, pg := range sp.at.pages {
		for i, r := range pg {
			if r != 0 {
				out = append(out, int(base*spillPageSize+uint32(i)))
			}
		}
	}
	return out
}

// reset forgets every record (the capture ended) and empties the file.
func (sp *procSpill) reset() {
	if sp.f != nil {
		sp.f.Truncate(0)
	}
	sp.size = 0
	sp.at = spillIndex{}
	clear(sp.objNo)
	clear(sp.objs)
	sp.objs = sp.objs[:0]
}

// close removes the file.
func (sp *procSpill) close() {
	if sp.f != nil {
		sp.f.Close()
		sp.f = nil
	}
	sp.at, sp.objs, sp.objNo = spillIndex{}, nil, nil
}

// Record layout (unsigned varints unless said): flags (tried, stale,
// mapsTried), nspid (signed), the exit's time (signed), the other spans
// (count, start, length each), the kernel addresses (count, then deltas
// from the previous), the images (count; each: until (signed), mappings
// (count; start, length, offset, object number (0: none), build-id
// (length, bytes)), user addresses (count, deltas), their flags (one
// byte each)).

func (sp *procSpill) encode(b []byte, p *symProc) []byte {
	u := binary.AppendUvarint
	var fl uint64
	if p.tried {
		fl |= 1
	}
	if p.stale {
		fl |= 2
	}
	if p.mapsTried {
		fl |= 4
	}
	b = u(b, fl)
	b = binary.AppendVarint(b, int64(p.nspid))
	b = binary.AppendVarint(b, p.exitAt)
	b = u(b, uint64(len(p.other)))
	for _, s := range p.other {
		b = u(u(b, s.start), s.end-s.start)
	}
	b = appendDeltas(b, p.kernelPacked)
	gens := p.gensRef()
	b = u(b, uint64(len(gens)))
	for _, g := range gens {
		b = binary.AppendVarint(b, g.until)
		b = u(b, uint64(len(g.maps)))
		for _, m := range g.maps {
			b = u(u(u(b, m.start), m.end-m.start), m.off)
			b = u(b, sp.number(m.obj))
			b = u(b, uint64(len(m.id)))
			b = append(b, m.id...)
		}
		b = appendDeltas(b, g.packed)
		fl := g.flags[:min(len(g.flags), len(g.packed))]
		b = append(b, fl...)
		for range len(g.packed) - len(fl) {
			b = append(b, 0)
		}
	}
	return b
}

// number returns o's number in the records, 0 for nil.
func (sp *procSpill) number(o *symObj) uint64 {
	if o == nil {
		return 0
	}
	n, ok := sp.objNo[o]
	if !ok {
		sp.objs = append(sp.objs, o)
		n = uint64(len(sp.objs))
		sp.objNo[o] = n
	}
	return n
}

// appendDeltas appends the count of sorted addresses a and their
// differences from the one before.
func appendDeltas(b []byte, a []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(a)))
	prev := uint64(0)
	for _, x := range a {
		b = binary.AppendUvarint(b, x-prev)
		prev = x
	}
	return b
}

// spillReader decodes a record, remembering the first error.
type spillReader struct {
	b   []byte
	err error
}

func (r *spillReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *spillReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a count of items of at least min bytes each, bounded by
// what is left.
func (r *spillReader) count(min int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)/min) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *spillReader) bytes(n int) []byte {
	if n > len(r.b) {
		r.fail()
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *spillReader) deltas() []uint64 {
	n := r.count(1)
	if n == 0 {
		return nil
	}
	out := make([]uint64, n)
	prev := uint64(0)
	for i := range out {
		prev += r.uvarint()
		out[i] = prev
	}
	return out
}

func (r *spillReader) fail() {
	if r.err == nil {
		r.err = errSpillRecord
	}
	r.b = nil
}

func (sp *procSpill) decode(b []byte) (*symProc, error) {
	r := &spillReader{b: b}
	p := &symProc{}
	fl := r.uvarint()
	p.tried, p.stale, p.mapsTried = fl&1 != 0, fl&2 != 0, fl&4 != 0
	p.nspid = int(r.varint())
	p.exitAt = r.varint()
	if n := r.count(2); n > 0 {
		p.other = make([]span, n)
		for i := range p.other {
			start := r.uvarint()
			p.other[i] = span{start, start + r.uvarint()}
		}
	}
	p.kernelPacked = r.deltas()
	gens := make([]symGen, r.count(3))
	for i := range gens {
		g := &gens[i]
		g.until = r.varint()
		if n := r.count(5); n > 0 {
			g.maps = make([]symMap, n)
			for j := range g.maps {
				m := &g.maps[j]
				m.start = r.uvarint()
				m.end = m.start + r.uvarint()
				m.off = r.uvarint()
				if no := r.uvarint(); no > 0 {
					if no > uint64(len(sp.objs)) {
						r.fail()
						break
					}
					m.obj = sp.objs[no-1]
				}
				m.id = string(r.bytes(r.count(1)))
			}
		}
		g.packed = r.deltas()
		if len(g.packed) > 0 {
			g.flags = append([]uint8(nil), r.bytes(len(g.packed))...)
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w at byte %d of %d", r.err, len(b)-len(r.b), len(b))
	}
	if n := len(gens); n > 0 {
		p.symGen = gens[n-1]
		if n > 1 {
			p.prev = gens[:n-1]
		}
	}
	if p.exitAt != 0 {
		// Written out after its exit: every mapping is the old
		// process's.
		p.exitMaps = len(p.maps)
	}
	return p, nil
}
