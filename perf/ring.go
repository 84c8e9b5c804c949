package perf

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"nsprof/internal/unix"
)

// maxRecord is the largest record: perf_event_header.size is a u16.
const maxRecord = 1<<16 - 1

// ring reads the records of one CPU's perf ring buffer: a metadata page
// followed by a power-of-two data area the kernel writes as a circular
// buffer. The kernel advances data_head after writing records; we advance
// data_tail after reading them, which lets the kernel reuse the space.
type ring struct {
	cpu  int
	mem  []byte // the whole mapping, unmapped by close; nil for fake rings
	meta []byte // the metadata page (struct perf_event_mmap_page)
	data []byte
	mask uint64
	head uint64 // data_head as last loaded; records before it are complete
	tail uint64 // our read position
	// published is data_tail as last stored: tail, once the records
	// of the head snapshot are read, or every publishEvery bytes.
	published uint64
}

// newRing wraps a metadata page and data area. The data area's size must
// be a power of two and meta must be 8-byte aligned.
func newRing(cpu int, meta, data []byte) (*ring, error) {
	if len(meta) < metaMinSize || uintptr(unsafe.Pointer(&meta[0]))%8 != 0 {
		return nil, fmt.Errorf("cpu %d: metadata page of %d bytes is too small or unaligned", cpu, len(meta))
	}
	n := uint64(len(data))
	if n < headerSize || n&(n-1) != 0 {
		return nil, fmt.Errorf("cpu %d: data area of %d bytes is not a power of two", cpu, n)
	}
	r := &ring{cpu: cpu, meta: meta, data: data, mask: n - 1}
	r.tail = atomic.LoadUint64(r.word(metaDataTail))
	r.head, r.published = r.tail, r.tail
	return r, nil
}

// mapRing maps the ring buffer of perf event fd with dataPages data pages.
func mapRing(cpu, fd, pageSize, dataPages int) (*ring, error) {
	mem, err := unix.Mmap(fd, (1+dataPages)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d pages for cpu %d: %w", 1+dataPages, cpu, err)
	}
	off := binary.NativeEndian.Uint64(mem[metaDataOffset:])
	size := binary.NativeEndian.Uint64(mem[metaDataSize:])
	if off == 0 { // kernels before 4.1 leave these zero
		off, size = uint64(pageSize), uint64(dataPages*pageSize)
	}
	if off > uint64(len(mem)) || size > uint64(len(mem))-off {
		unix.Munmap(mem)
		return nil, fmt.Errorf("cpu %d: data area %d+%d outside the %d-byte mapping", cpu, off, size, len(mem))
	}
	r, err := newRing(cpu, mem[:pageSize], mem[off:off+size])
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	r.mem = mem
	return r, nil
}

func (r *ring) word(off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&r.meta[off]))
}

// loadHead refreshes the head snapshot and reports whether records are
// waiting. The atomic load orders the reads of the records after it.
func (r *ring) loadHead() bool {
	r.head = atomic.LoadUint64(r.word(metaDataHead))
	return r.head != r.tail
}

// peek returns the next record below the head snapshot, or nil when there
// is none. A record that wraps around the end of the data area is copied
// into scratch (at least maxRecord bytes); otherwise the result aliases
// the ring and is valid until consume. off is the record's offset in the
// data area. A malformed header yields a *FormatError.
func (r *ring) peek(scratch []byte) (rec []byte, off uint64, err *FormatError) {
	avail := r.head - r.tail
	off = r.tail & r.mask
	if avail == 0 {
		return nil, off, nil
	}
	if avail > uint64(len(r.data)) || avail < headerSize {
		return nil, off, &FormatError{CPU: r.cpu, Offset: off,
			Msg: fmt.Sprintf("%d bytes between tail %d and head %d in a %d-byte ring", avail, r.tail, r.head, len(r.data))}
	}
	hdr := r.span(scratch, off, headerSize)
	size := uint64(binary.NativeEndian.Uint16(hdr[6:]))
	if size < headerSize || size > avail {
		return nil, off, &FormatError{CPU: r.cpu, Offset: off, Type: RecordType(binary.NativeEndian.Uint32(hdr)),
			Msg: fmt.Sprintf("record size %d outside [%d, %d available]", size, headerSize, avail)}
	}
	return r.span(scratch, off, size), off, nil
}

// span returns n bytes of the data area from off, copying them into
// scratch when they wrap around the end.
func (r *ring) span(scratch []byte, off, n uint64) []byte {
	if end := off + n; end <= uint64(len(r.data)) {
		return r.data[off:end]
	}
	k := copy(scratch[:n], r.data[off:])
	copy(scratch[k:n], r.data)
	return scratch[:n]
}

// consume releases n bytes, read, to the kernel: it is told (data_tail)
// once the records up to the head snapshot are read, or a sixteenth of
// the ring was read since it was last told, not at every record. The
// kernel writes data_head, on the same cache line, at every record it
// writes, on the CPU of the task it records: a store per record moved
// that line from CPU to CPU twice a record, a cost on both sides (as
// perf does, who tells the kernel once per chunk copied out). The
// atomic store keeps the reads of the bytes released before it, as the
// kernel requires.
func (r *ring) consume(n uint64) {
	r.tail += n
	if r.tail == r.head || r.tail-r.published >= uint64(len(r.data))/publishParts {
		atomic.StoreUint64(r.word(metaDataTail), r.tail)
		r.published = r.tail
	}
}

// publishParts is the fraction of the ring (1/publishParts) that may be
// read and not yet released to the kernel.
const publishParts = 16

// discard drops everything up to the head snapshot: after a malformed
// header the record boundaries are lost.
func (r *ring) discard() {
	r.consume(r.head - r.tail)
}

// close unmaps the ring.
func (r *ring) close() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem, r.meta, r.data = nil, nil, nil
	if err != nil {
		return fmt.Errorf("munmap ring of cpu %d: %w", r.cpu, err)
	}
	return nil
}
