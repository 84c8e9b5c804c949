package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"nsprof/capture"
	"nsprof/internal/unix"
)

// controlFD serves Sysprof's SYSPROF_CONTROL_FD to a spawned command:
// the collector in libsysprof-capture (its sysprof_collector_* API, used
// by GLib and GTK, and its LD_PRELOAD libraries such as
// libsysprof-memory-4.so) asks for a shared ring per thread by writing
// "CreatRing\0" on the socket; we answer with a memfd whose first page
// holds the ring header {head, tail, offset, size} and the rest the ring,
// and copy the capture frames the thread writes there into the capture.
type controlFD struct {
	ours   int      // our end, non-blocking, with the writers' credentials
	theirs *os.File // the command's end
	req    []byte   // a partial request
	reqPID int32    // host pid of the process that wrote it
	oob    []byte   // room for the credentials of a read
	rings  []*collectorRing
	closed bool // every writer of the socket is gone

	frames, rejected uint64
}

// collectorBodyPages is the size of each ring: Sysprof HEAD's 63 pages
// rounded up as its shared-memory colour rounding does.
const collectorBodyPages = 64

// creatRing is the collector's request for a ring.
const creatRing = "CreatRing\x00"

// collectorRing is one thread's ring.
type collectorRing struct {
	mem     []byte // header page, then the body
	body    []byte
	size    uint32
	done    bool   // the thread wrote its final frame
	scratch []byte // a frame that wraps, put back together
	// hostID translates the ids the process writes in its frames (its
	// own PID namespace's) into host ids; nil outside a namespace.
	hostID func(int32) int32
}

// collectorFinal is the type of the frame a thread writes when it exits.
const collectorFinal = 0xFF

func newControlFD() (*controlFD, error) {
	ours, theirs, err := unix.StreamPair()
	if err != nil {
		return nil, fmt.Errorf("SYSPROF_CONTROL_FD: %w", err)
	}
	return &controlFD{ours: ours, theirs: theirs}, nil
}

// pass hands the command its end as SYSPROF_CONTROL_FD.
func (c *controlFD) pass() passFile {
	return passFile{name: "SYSPROF_CONTROL_FD", file: c.theirs}
}

// poll answers pending requests and copies what the rings hold.
func (c *controlFD) poll(r *recorder) {
	c.accept(r)
	for _, g := range c.rings {
		if !g.done {
			c.drain(r, g)
		}
	}
}

// accept reads ring requests and answers each with a new ring.
func (c *controlFD) accept(r *recorder) {
	if c.closed {
		return
	}
	var buf [256]byte
	if c.oob == nil {
		c.oob = make([]byte, unix.OOBSpace(0))
	}
	for {
		// A read returns what one process wrote: the kernel does not
		// join data sent with different credentials.
		m, err := unix.RecvFDs(c.ours, buf[:], c.oob)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			break
		}
		if err != nil || m.N == 0 {
			c.closed = true // every process holding the other end exited
			break
		}
		for _, fd := range m.FDs {
			unix.Close(fd) // not part of the protocol
		}
		c.req = append(c.req, buf[:m.N]...)
		if m.PID > 0 {
			c.reqPID = m.PID
		}
		for len(c.req) >= len(creatRing) {
			if string(c.req[:len(creatRing)]) != creatRing {
				r.logf("SYSPROF_CONTROL_FD: unknown request %q, ignored", c.req[:len(creatRing)])
			} else if err := c.newRing(r.collectorIDs(c.reqPID)); err != nil {
				r.logf("SYSPROF_CONTROL_FD: %v", err)
			}
			c.req = c.req[len(creatRing):]
		}
	}
}

// collectorIDs returns the translation of the ids host process pid writes
// in its frames, which are those of its own PID namespace: nil when that
// is ours (or pid is unknown).
func (r *recorder) collectorIDs(pid int32) func(int32) int32 {
	if pid <= 0 {
		return nil
	}
	st, err := r.opts.FS.ReadStatus(int(pid))
	if err != nil {
		return nil
	}
	nspid := int32(st.InnermostPid())
	if nspid <= 0 || nspid == pid {
		return nil
	}
	// The threads now, the one asking for the ring among them: a ring's
	// last frames may be read after its thread is gone.
	known := map[int32]int32{nspid: pid}
	if ths, err := r.opts.FS.ThreadNSpids(int(pid)); err == nil {
		for _, th := range ths {
			known[int32(th.NSTID)] = int32(th.TID)
		}
	}
	return func(id int32) int32 {
		h, ok := known[id]
		if !ok {
			h = r.hostTID(pid, nspid, id)
			known[id] = h
		}
		return h
	}
}

// newRing creates a ring and sends it to the requesting thread, whose
// frames' ids hostID translates (nil: kept).
func (c *controlFD) newRing(hostID func(int32) int32) error {
	page := unix.Getpagesize()
	body := collectorBodyPages * page
	fd, err := unix.MemfdCreate("[sysprof-ring-buffer]", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(page+body)); err != nil {
		return fmt.Errorf("ring size: %w", err)
	}
	mem, err := unix.MmapShared(fd, page+body)
	if err != nil {
		return err
	}
	binary.NativeEndian.PutUint32(mem[8:], uint32(page)) // offset
	binary.NativeEndian.PutUint32(mem[12:], uint32(body))
	if err := unix.SendFD(c.ours, []byte{0}, fd); err != nil {
		unix.Munmap(mem)
		return err
	}
	c.rings = append(c.rings, &collectorRing{mem: mem, body: mem[page:], size: uint32(body), hostID: hostID})
	return nil
}

// head and tail are the ring's positions, shared with the writer.
func (g *collectorRing) head() *uint32 { return (*uint32)(unsafe.Pointer(&g.mem[0])) }
func (g *collectorRing) tail() *uint32 { return (*uint32)(unsafe.Pointer(&g.mem[4])) }

// drain copies the ring's frames into the capture. A frame that breaks
// the rules (shorter than a header, longer than what was written, of an
// unknown type) ends the ring: what follows cannot be trusted.
func (c *controlFD) drain(r *recorder, g *collectorRing) {
	head := atomic.LoadUint32(g.head())
	tail := atomic.LoadUint32(g.tail())
	if head >= g.size || tail >= g.size {
		c.fail(r, g, fmt.Sprintf("ring positions %d, %d outside %d bytes", head, tail, g.size))
		return
	}
	for head != tail {
		avail := (tail + g.size - head) % g.size
		fr := g.frame(head, min(avail, 24))
		if len(fr) < 24 {
			c.fail(r, g, fmt.Sprintf("%d bytes left, less than a frame header", avail))
			return
		}
		n := uint32(binary.NativeEndian.Uint16(fr[0:]))
		typ := fr[16]
		if n < 24 || n > avail || n%8 != 0 {
			c.fail(r, g, fmt.Sprintf("frame of %d bytes with %d written", n, avail))
			return
		}
		if typ == collectorFinal {
			g.done = true
			atomic.StoreUint32(g.head(), (head+n)%g.size)
			return
		}
		f, err := capture.DecodeFrame(g.frame(head, n))
		if err != nil {
			c.fail(r, g, err.Error())
			return
		}
		if g.hostID != nil {
			capture.MapIDs(f, g.hostID)
		}
		if err := r.w.WriteFrame(f); err != nil {
			if isWriteErr(err) {
				if r.writeErr == nil {
					r.writeErr = err
				}
				return
			}
			c.rejected++ // a frame the capture cannot hold
		} else {
			c.frames++
		}
		head = (head + n) % g.size
		atomic.StoreUint32(g.head(), head)
	}
}

// frame returns n bytes at pos, put together in scratch if they wrap.
func (g *collectorRing) frame(pos, n uint32) []byte {
	if pos+n <= g.size {
		return g.body[pos : pos+n]
	}
	g.scratch = append(append(g.scratch[:0], g.body[pos:]...), g.body[:pos+n-g.size]...)
	return g.scratch
}

// fail stops reading a ring that broke the protocol.
func (c *controlFD) fail(r *recorder, g *collectorRing, why string) {
	c.rejected++
	g.done = true
	r.logf("SYSPROF_CONTROL_FD ring dropped: %s", why)
}

// release unmaps the rings and closes the socket.
func (c *controlFD) release() {
	for _, g := range c.rings {
		unix.Munmap(g.mem)
	}
	c.rings = nil
	if c.ours >= 0 {
		unix.Close(c.ours)
		c.ours = -1
	}
	c.theirs.Close()
}

// SysprofMemprofLibName is Sysprof's allocation collector library.
const SysprofMemprofLibName = "libsysprof-memory-4.so"

// FindSysprofMemprofLib returns the path of Sysprof's allocation
// collector in the usual library directories (Debian's sysprof package
// installs it in /usr/lib/<triplet>).
func FindSysprofMemprofLib() (string, error) {
	dirs := []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"}
	for _, d := range dirs {
		p := d + "/" + SysprofMemprofLibName
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %v (install sysprof)", SysprofMemprofLibName, dirs)
}
