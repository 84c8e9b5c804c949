package record

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"nsprof/capture"
	"nsprof/internal/unix"
)

// Ring sizes. A collector thread writes into its ring without waiting:
// libsysprof-capture 3.46 drops a frame the ring has no room for, and
// counts nothing. The ring must hold what the thread writes while the
// copier is not running: 4 MiB is 40 ms of 1 M marks a second (the
// memfd's pages are only allocated as the thread reaches them). Once the
// rings alive hold collectorRingBudget, new ones get the small size.
const (
	collectorRingBytes      = 4 << 20
	collectorSmallRingBytes = 64 << 12 // Sysprof HEAD's 63 pages, rounded up
	collectorRingBudget     = 256 << 20
	// collectorPendingMax bounds what the copier holds for the recorder
	// to write: past it, rings are left to fill (and the losses counted).
	collectorPendingMax = 64 << 20
)

// Copier pauses: short while a thread writes, longer when all are idle.
const (
	copierBusyPause = 250 * time.Microsecond
	copierIdlePause = 2 * time.Millisecond
)

// collectorRing is one thread's ring.
type collectorRing struct {
	mem    []byte // header page, then the body
	body   []byte
	size   uint32
	hostID func(int32) int32 // translates the ids of the thread's PID namespace; nil outside one

	// The copier's: the largest space the thread's collector asks for
	// as far as seen, and when the ring was last emptied (capture clock).
	need     uint32
	emptied  int64
	bad      bool // positions outside the ring: no longer copied
	unmapped bool

	// Under controlFD.mu: bytes copied out of the ring and not yet
	// written, and why the copier gave the ring up.
	in     []byte
	broken string

	// The recorder's: the batch being written, and whether the thread
	// is done (its final frame, or a frame that broke the rules), which
	// tells the copier to let go of the ring.
	out  []byte
	done atomic.Bool
}

// head and tail are the ring's positions, shared with the writer.
func (g *collectorRing) head() *uint32 { return (*uint32)(unsafe.Pointer(&g.mem[0])) }
func (g *collectorRing) tail() *uint32 { return (*uint32)(unsafe.Pointer(&g.mem[4])) }

// ringLoss counts what the rings could not take. The collector does not
// say when it drops a frame; what the copier can tell is that it found a
// ring with less room than the thread's largest frame needs, so the
// thread could not write from the moment the ring filled until the copier
// emptied it. The frames it wrote meanwhile are estimated from the rate
// it filled the ring at.
type ringLoss struct {
	// Full counts the times a ring was found too full for its thread's
	// next frame.
	Full uint64
	// Blocked is the time in all those windows, in ns: from the last
	// frame in the ring (or the ring's emptying, if the frame's time is
	// not between that and now) to the copier emptying it.
	Blocked int64
	// Estimate is how many frames the threads would have written in
	// those windows at the rate each filled its ring.
	Estimate uint64
}

// collectorRequest is the room the collector asks for to write a frame of
// type typ whose final length is n: the stack frames reserve room for 128
// addresses (3.46 and HEAD size them with the frame's struct, not the
// address: 48 or 32 bytes each), plus HEAD's 24 bytes kept for the final
// frame.
func collectorRequest(typ capture.FrameType, n uint32) uint32 {
	const reserve, depth = 24, 128
	switch typ {
	case capture.TypeAllocation:
		n = max(n, 48+48*depth)
	case capture.TypeSample, capture.TypeTrace:
		n = max(n, 32+32*depth)
	}
	return n + reserve
}

// copyRing moves what ring g holds into g.in and empties it, unless the
// recorder already has collectorPendingMax waiting. It returns how many
// bytes it copied and how full the ring was (0 to 1).
func (c *controlFD) copyRing(g *collectorRing) (int, float64) {
	head := atomic.LoadUint32(g.head())
	tail := atomic.LoadUint32(g.tail())
	if head >= g.size || tail >= g.size {
		c.giveUp(g, head, tail)
		return 0, 0
	}
	if head == tail {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	used := int((tail + g.size - head) % g.size)
	if c.pending+used > collectorPendingMax && c.pending > 0 {
		return 0, 0
	}
	start := len(g.in)
	g.in = appendRing(g.in, g.body, head, tail)
	// The thread writes on while this copies, and the copier may lose
	// the CPU anywhere: take what was written meanwhile too (a few
	// times at most), then learn how full the ring got right before
	// letting the thread write again, with nothing in between.
	end := tail
	for range 2 {
		next := atomic.LoadUint32(g.tail())
		if next == end || next >= g.size {
			break
		}
		g.in = appendRing(g.in, g.body, end, next)
		end = next
	}
	reached := atomic.LoadUint32(g.tail())
	atomic.StoreUint32(g.head(), end)
	now := capture.Now()
	if reached >= g.size {
		c.giveUpLocked(g, head, reached)
	}
	used = len(g.in) - start
	c.pending += used
	maxUsed := int((reached + g.size - head) % g.size)
	frames, lastTime, need := walkFrames(g.in[start:])
	g.need = max(g.need, need)
	if int(g.size)-maxUsed <= int(g.need) {
		c.loss.add(frames, g.emptied, lastTime, now)
	}
	g.emptied = now
	return used, float64(used) / float64(g.size)
}

// appendRing appends the bytes of ring body from position from to
// position to.
func appendRing(dst, body []byte, from, to uint32) []byte {
	if from <= to {
		return append(dst, body[from:to]...)
	}
	return append(append(dst, body[from:]...), body[:to]...)
}

// giveUp stops copying a ring whose positions are outside it.
func (c *controlFD) giveUp(g *collectorRing, head, tail uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.giveUpLocked(g, head, tail)
}

func (c *controlFD) giveUpLocked(g *collectorRing, head, tail uint32) {
	g.broken = fmt.Sprintf("ring positions %d, %d outside %d bytes", head, tail, g.size)
	g.bad = true
}

// walkFrames returns how many frames b holds, the time of the last and
// the room the largest asked for. It stops at the first frame that breaks
// the rules, which the recorder reports when it writes them.
func walkFrames(b []byte) (frames int, last int64, need uint32) {
	for len(b) >= 24 {
		n := uint32(binary.NativeEndian.Uint16(b[0:]))
		if n < 24 || n%8 != 0 || int(n) > len(b) {
			break
		}
		frames++
		last = int64(binary.NativeEndian.Uint64(b[8:]))
		need = max(need, collectorRequest(capture.FrameType(b[16]), n))
		b = b[n:]
	}
	return frames, last, need
}

// add counts a full ring: frames were copied out of it at now, written
// since it was emptied at emptied, the last at time last.
func (l *ringLoss) add(frames int, emptied, last, now int64) {
	l.Full++
	filled := last
	if filled <= emptied || filled > now {
		filled = emptied + (now-emptied)/2 // the frames' times are not the clock's
	}
	l.Blocked += now - filled
	if filled > emptied {
		l.Estimate += uint64(float64(frames) * float64(now-filled) / float64(filled-emptied))
	}
}

// copier copies the rings until stop is closed.
type copier struct {
	stop chan struct{}
	done chan struct{}
}

// startCopier runs the copier in its own goroutine.
func (c *controlFD) startCopier() {
	c.cp = &copier{stop: make(chan struct{}), done: make(chan struct{})}
	go c.copyLoop(c.cp)
}

// stopCopier waits for the copier to stop; the caller copies from then on.
func (c *controlFD) stopCopier() {
	if c.cp == nil {
		return
	}
	close(c.cp.stop)
	<-c.cp.done
	c.cp = nil
}

func (c *controlFD) copyLoop(cp *copier) {
	defer close(cp.done)
	pause := copierBusyPause
	t := time.NewTimer(pause)
	defer t.Stop()
	for {
		copied, fill := c.copyAll()
		switch {
		case fill > 0.125:
			pause = 0
		case copied > 0:
			pause = copierBusyPause
		default:
			pause = min(2*pause+copierBusyPause, copierIdlePause)
		}
		if pause == 0 {
			select {
			case <-cp.stop:
				return
			default:
			}
			continue
		}
		t.Reset(pause)
		select {
		case <-cp.stop:
			return
		case <-t.C:
		}
	}
}

// copyAll copies every live ring once and lets go of the rings whose
// thread is done. It returns the bytes copied and the fullest ring's fill.
func (c *controlFD) copyAll() (copied int, fill float64) {
	c.mu.Lock()
	rings := c.live
	c.mu.Unlock()
	for _, g := range rings {
		if g.done.Load() {
			c.letGo(g)
			continue
		}
		if g.bad {
			continue
		}
		n, f := c.copyRing(g)
		copied += n
		fill = max(fill, f)
	}
	return copied, fill
}

// letGo unmaps a ring whose thread is done.
func (c *controlFD) letGo(g *collectorRing) {
	if !g.unmapped && g.mem != nil {
		unix.Munmap(g.mem)
	}
	g.unmapped = true
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range c.live {
		if h == g {
			c.live = append(c.live[:i:i], c.live[i+1:]...)
			c.liveBytes -= int(g.size)
			break
		}
	}
}
