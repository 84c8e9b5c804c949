package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"nsprof/capture"
	"nsprof/internal/unix"
)

// controlFD serves Sysprof's SYSPROF_CONTROL_FD to a spawned command:
// the collector in libsysprof-capture (its sysprof_collector_* API, used
// by GLib and GTK, and its LD_PRELOAD libraries such as
// libsysprof-memory-4.so) asks for a shared ring per thread by writing
// "CreatRing\0" on the socket; we answer with a memfd whose first page
// holds the ring header {head, tail, offset, size} and the rest the ring.
// A copier goroutine empties the rings as the threads fill them, and the
// recorder writes the frames it copied into the capture.
type controlFD struct {
	ours   int      // our end, non-blocking, with the writers' credentials
	theirs *os.File // the command's end
	req    []byte   // a partial request
	reqPID int32    // host pid of the process that wrote it
	oob    []byte   // room for the credentials of a read
	rings  []*collectorRing
	closed bool // every writer of the socket is gone
	cp     *copier
	w      *watcher // without perf events

	mu        sync.Mutex
	live      []*collectorRing // the rings the copier copies
	liveBytes int              // their size
	pending   int              // bytes copied and not yet written
	loss      ringLoss

	// frames counts the frames written, rejected those the capture could
	// not hold, and broken the rings given up for breaking the rules.
	frames, rejected, broken uint64
}

// creatRing is the collector's request for a ring.
const creatRing = "CreatRing\x00"

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

// poll answers pending requests and writes what the copier copied.
func (c *controlFD) poll(r *recorder) {
	c.accept(r)
	for _, g := range c.rings {
		if !g.done.Load() {
			c.write(r, g)
		}
	}
}

// finish stops the copier, copies and writes what the rings still hold,
// and reports what was written and what was lost, in the log and in the
// capture.
func (c *controlFD) finish(r *recorder) {
	c.accept(r)
	c.stopCopier()
	c.copyAll()
	for _, g := range c.rings {
		if !g.done.Load() {
			c.write(r, g)
		}
	}
	if len(c.rings) == 0 {
		return
	}
	msg := fmt.Sprintf("SYSPROF_CONTROL_FD: %d frames from %d rings", c.frames, len(c.rings))
	if c.rejected > 0 {
		msg += fmt.Sprintf(", %d frames the capture cannot hold left out", c.rejected)
	}
	if c.broken > 0 {
		msg += fmt.Sprintf(", %d rings given up for breaking the protocol", c.broken)
	}
	if c.rejected > 0 || c.broken > 0 {
		r.logf("%s", msg)
	} else {
		r.notef("%s", msg)
	}
	if r.writeErr != nil {
		return
	}
	// The totals, as analyze.Timeline.Collector reads them: frames
	// written, times a ring was found too full for its thread's next
	// frame, the time the threads could not write (ns) and the frames
	// estimated lost meanwhile.
	now := r.now()
	for _, kv := range [][2]string{
		{capture.MetaCollectorFrames, strconv.FormatUint(c.frames, 10)},
		{capture.MetaCollectorFull, strconv.FormatUint(c.loss.Full, 10)},
		{capture.MetaCollectorBlockedNs, strconv.FormatInt(c.loss.Blocked, 10)},
		{capture.MetaCollectorLostEstimate, strconv.FormatUint(c.loss.Estimate, 10)},
	} {
		if err := r.w.AddMetadata(now, kv[0], kv[1]); err != nil {
			r.writeErr = err
			return
		}
	}
	if c.loss.Full == 0 {
		return
	}
	warn := c.loss.String()
	r.logf("%s", warn)
	if err := r.w.AddLog(now, -1, capture.LogWarning, "nsprof", warn); err != nil {
		r.writeErr = err
	}
}

// String says what the rings could not take.
func (l ringLoss) String() string {
	return fmt.Sprintf("SYSPROF_CONTROL_FD: rings found full: %d, for %.1f ms in all; the application's collector drops the frames it has no room for without counting them: about %d frames lost (estimated from each thread's rate)",
		l.Full, float64(l.Blocked)/1e6, l.Estimate)
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
	c.mu.Lock()
	body := collectorRingBytes
	if c.liveBytes+body > collectorRingBudget {
		body = collectorSmallRingBytes
	}
	c.mu.Unlock()
	body = (body + page - 1) / page * page
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
	g := &collectorRing{mem: mem, body: mem[page:], size: uint32(body), hostID: hostID, emptied: capture.Now()}
	if err := unix.SendFD(c.ours, []byte{0}, fd); err != nil {
		unix.Munmap(mem)
		return err
	}
	c.rings = append(c.rings, g)
	c.mu.Lock()
	c.live = append(c.live, g)
	c.liveBytes += body
	c.mu.Unlock()
	if c.cp == nil {
		c.startCopier() // with the first ring
	}
	return nil
}

// write writes the frames the copier took out of ring g into the capture.
// A frame that breaks the rules (shorter than a header, longer than what
// was written, of an unknown type) ends the ring: what follows cannot be
// trusted.
func (c *controlFD) write(r *recorder, g *collectorRing) {
	c.mu.Lock()
	g.in, g.out = g.out[:0], g.in
	c.pending -= len(g.out)
	broken := g.broken
	c.mu.Unlock()
	b := g.out
	if cap(g.out) > 2*collectorRingBytes {
		g.out = nil // a backlog's buffer, not kept for the next batch
	}
	for len(b) > 0 && !g.done.Load() {
		if len(b) < 24 {
			c.fail(r, g, fmt.Sprintf("%d bytes left, less than a frame header", len(b)))
			return
		}
		n := int(binary.NativeEndian.Uint16(b[0:]))
		typ := b[16]
		if n < 24 || n > len(b) || n%8 != 0 {
			c.fail(r, g, fmt.Sprintf("frame of %d bytes with %d written", n, len(b)))
			return
		}
		if typ == collectorFinal {
			g.done.Store(true)
			return
		}
		f, err := capture.DecodeFrame(b[:n])
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
		b = b[n:]
	}
	if broken != "" && !g.done.Load() {
		c.fail(r, g, broken)
	}
}

// fail stops reading a ring that broke the protocol.
func (c *controlFD) fail(r *recorder, g *collectorRing, why string) {
	c.broken++
	g.done.Store(true)
	r.logf("SYSPROF_CONTROL_FD ring given up: %s", why)
}

// release stops the copier, unmaps the rings and closes the socket.
func (c *controlFD) release() {
	c.stopCopier()
	for _, g := range c.rings {
		if !g.unmapped {
			unix.Munmap(g.mem)
			g.unmapped = true
		}
	}
	c.rings, c.live = nil, nil
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
