package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"nsprof/capture"
	"nsprof/internal/unix"
	"nsprof/proc"
)

// MemprofLibName is the file name of the memprof LD_PRELOAD library that
// `make build` puts next to the nsprof binary.
const MemprofLibName = "libnsprof-memprof.so"

// MemprofLibEnv names the environment variable that overrides where
// [FindMemprofLib] looks for the library.
const MemprofLibEnv = "NSPROF_MEMPROF_LIB"

// memprofPoll is how often the rings are drained while recording, at
// most; while a drain finds a ring less than an eighth full the interval
// doubles, up to memprofIdlePoll (memprofIdleCalls when only call
// counts, which threads write every 100 ms, are recorded), and the next
// busier drain brings it back. Drained every 2 ms, an idle recording
// cost the recorder 5 % of a CPU.
const (
	memprofPoll      = 2 * time.Millisecond
	memprofIdlePoll  = 16 * time.Millisecond
	memprofIdleCalls = 64 * time.Millisecond
)

// FindMemprofLib returns the absolute path of the memprof library: the
// file $NSPROF_MEMPROF_LIB names, else libnsprof-memprof.so next to the
// running executable or in ../lib/nsprof beside it.
func FindMemprofLib() (string, error) {
	return findPreloadLib(MemprofLibName, MemprofLibEnv)
}

// findPreloadLib returns the absolute path of the preload library name:
// the file $env names, else name next to the running executable or in
// ../lib/nsprof beside it.
func findPreloadLib(name, env string) (string, error) {
	if p := os.Getenv(env); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("%s: %w", env, err)
		}
		return abs, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", name, err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	dir := filepath.Dir(exe)
	for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, "..", "lib", "nsprof", name)} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found next to %s (build it with make, or set %s)", name, exe, env)
}

// memprof receives the rings of the processes the preload library is
// loaded into and turns their records into ALLOCATION frames (--memprof)
// and records of capture.CallsFile (--calls).
type memprof struct {
	lib    string
	sample int64
	// allocs and calls say what the preload records.
	allocs, calls bool
	// callFile holds the call records not yet written; arcs and
	// nCalls count those written, callsLost and untimed what the rings
	// counted as not recorded and as counted without their time.
	callFile                         []byte
	arcs, nCalls, callsLost, untimed uint64
	// recv is the recorder's end of the registration socket; send is
	// the command's, closed once it is spawned.
	recv, send *os.File
	rings      []*memRing
	buf, oob   []byte
	// batch gathers the frames of one chunk of a ring.
	batch frameBatch
	// stacks holds, per host pid, the hashes of the stacks already
	// handed to the symbolizer.
	stacks map[int32]map[uint64]struct{}
	// rescan lists processes whose mappings to re-read for the symbolizer
	// when perf does not report new mappings.
	rescan map[int32]bool

	nAllocs, frees, lost, untracked uint64
	// sigDropped counts the events of signal handlers that found
	// their thread's side slots taken (preload/memprof.c, "signal
	// handlers").
	sigDropped uint64
	// tscTimes counts the events whose time the preload extrapolated
	// from the TSC, by ring.
	tscTimes            uint64
	registered, refused int
	errNoted            bool
	drained             time.Time
	// every is the interval between drains (see memprofPoll).
	every time.Duration
}

// memRing is the recorder's view of one thread's ring. Its walker's
// pid and tid are the thread's host ids.
type memRing struct {
	ringWalker
	mem      []byte
	data     []byte
	lost     uint64
	untrack  uint64
	tsc      uint64
	sigDrop  uint64
	callLost uint64
	untimed  uint64
	// stacks is the process's set of stacks handed to the symbolizer.
	stacks map[uint64]struct{}
}

func (g *memRing) word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&g.mem[off])) }

func (g *memRing) isClosed() bool {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&g.mem[ringOffClosed]))) != 0
}

func newMemprof(o *Options) (*memprof, error) {
	lib := o.MemprofLib
	if lib == "" {
		var err error
		if lib, err = FindMemprofLib(); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(lib); err != nil {
		return nil, fmt.Errorf("memprof library: %w", err)
	}
	recv, send, err := unix.SeqpacketPair()
	if err != nil {
		return nil, fmt.Errorf("memprof socket: %w", err)
	}
	return &memprof{
		lib: lib, sample: o.MemprofSample, recv: recv, send: send, allocs: o.Memprof, calls: o.Calls,
		buf: make([]byte, 256), oob: make([]byte, unix.OOBSpace(4)),
		stacks: make(map[int32]map[uint64]struct{}), rescan: make(map[int32]bool),
	}, nil
}

// pass returns the descriptor and variables handed to the command. The
// hold script moves NSPROF_MEMPROF_PRELOAD into LD_PRELOAD just before
// its exec, so the shell itself is not profiled.
func (m *memprof) pass() passFile {
	extra := []string{"NSPROF_MEMPROF_PRELOAD=" + m.lib}
	if m.sample > 0 {
		extra = append(extra, "NSPROF_MEMPROF_SAMPLE="+strconv.FormatInt(m.sample, 10))
	}
	if m.calls {
		extra = append(extra, "NSPROF_CALLS=1")
	}
	if !m.allocs {
		extra = append(extra, "NSPROF_MEMPROF_ALLOCS=0")
	}
	return passFile{name: "NSPROF_MEMPROF_FD", file: m.send, extra: extra}
}

// metadata describes the memprof settings for the capture.
func (m *memprof) metadata() [][2]string {
	var md [][2]string
	if m.allocs {
		md = append(md, [2]string{capture.MetaMemprof, "1"}, [2]string{capture.MetaMemprofSampleBytes, strconv.FormatInt(m.sample, 10)})
	}
	if m.calls {
		md = append(md, [2]string{capture.MetaCalls, "1"})
	}
	return md
}

// poll accepts new rings and drains every ring.
func (r *recorder) pollMemprof(now time.Time) {
	m := r.mp
	m.drained = now
	m.accept(r)
	busy := m.drainAll(r)
	idle := memprofIdlePoll
	if !m.allocs {
		idle = memprofIdleCalls
	}
	switch {
	case busy || m.every == 0:
		m.every = memprofPoll
	case m.every < idle:
		m.every = min(2*m.every, idle)
	}
	if r.opts.NoPerf && r.sym != nil && len(m.rescan) > 0 {
		// Without perf no MMAP records say what was mapped since the
		// process registered: read its maps again, at most every tick.
		for pid := range m.rescan {
			r.tr.rescanMaps(int(pid), capture.Now())
			delete(m.rescan, pid)
		}
	}
}

// accept receives pending ring registrations.
func (m *memprof) accept(r *recorder) {
	fd := int(m.recv.Fd())
	for {
		msg, err := unix.RecvFDs(fd, m.buf, m.oob)
		if err != nil {
			if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
				m.note(r, "memprof registration: %v", err)
			}
			return
		}
		if msg.N == 0 && len(msg.FDs) == 0 {
			return
		}
		m.register(r, msg)
	}
}

func (m *memprof) note(r *recorder, format string, args ...any) {
	if !m.errNoted {
		m.errNoted = true
		r.logf(format, args...)
	}
}

// register maps the ring a thread sent, after checking it is one.
func (m *memprof) register(r *recorder, msg unix.Message) {
	defer func() {
		for _, fd := range msg.FDs {
			unix.Close(fd)
		}
	}()
	h, err := parseHello(m.buf[:msg.N])
	// A process's first ring comes with the write end of a pipe its
	// thread waits on until the deferred close: by then its mappings are
	// read.
	if err == nil && (len(msg.FDs) < 1 || len(msg.FDs) > 2 || msg.Truncated) {
		err = fmt.Errorf("memprof registration with %d descriptors", len(msg.FDs))
	}
	if err == nil {
		err = checkRingSize(h.RingSize)
	}
	var size int64
	if err == nil {
		size, err = unix.FileSize(msg.FDs[0])
		if err == nil && uint64(size) != h.RingSize {
			err = fmt.Errorf("memprof ring of %d bytes, registered as %d", size, h.RingSize)
		}
	}
	var mem []byte
	if err == nil {
		mem, err = unix.MmapShared(msg.FDs[0], int(size))
	}
	if err != nil {
		m.refused++
		m.note(r, "refusing a memprof ring: %v", err)
		return
	}
	g := &memRing{mem: mem, data: mem[ringHeaderSize:]}
	if *(*uint32)(unsafe.Pointer(&mem[0])) != ringMagic || *g.word(ringOffSize) != uint64(len(g.data)) {
		unix.Munmap(mem)
		m.refused++
		m.note(r, "refusing a memprof ring: bad header")
		return
	}
	g.pid = msg.PID
	if g.pid <= 0 {
		g.pid = h.PID
	}
	now := capture.Now()
	r.tr.scan(int(g.pid), now)
	g.tid = r.hostTID(g.pid, h.PID, h.TID)
	m.rings = append(m.rings, g)
	m.registered++
	if r.opts.NoPerf {
		m.rescan[g.pid] = true
	}
}

// checkRingSize accepts a header page plus a power-of-two data area of
// 4 KiB to 1 GiB.
func checkRingSize(n uint64) error {
	d := n - ringHeaderSize
	if n <= ringHeaderSize || d < 4096 || d > 1<<30 || d&(d-1) != 0 {
		return fmt.Errorf("memprof ring of %d bytes", n)
	}
	return nil
}

// hostTID returns the host id of the thread known as nstid inside the PID
// namespace of host process pid (which calls itself nspid): the same id
// outside a namespace, else from the PID-namespace map, else from the
// threads' NSpid lines. An id that cannot be translated is kept.
func (r *recorder) hostTID(pid, nspid, nstid int32) int32 {
	if pid == nspid {
		return nstid
	}
	if nstid == nspid {
		return pid
	}
	ps := r.tr.procs[int(pid)]
	if ns := r.tr.pidNS(int(pid)); ns != 0 {
		if h, ok := r.tr.pm.inner[ns][int(nstid)]; ok {
			return int32(h)
		}
	}
	ths, err := r.opts.FS.ThreadNSpids(int(pid))
	if err == nil {
		for _, th := range ths {
			if th.NSTID == int(nstid) {
				if ps != nil {
					r.tr.thread(int(pid), th.TID, ps, capture.Now())
				}
				return int32(th.TID)
			}
		}
	}
	return nstid
}

// memprofChunk is how many bytes of a ring a drain walks before it
// writes them: the walk brings them into the recorder's CPU cache (the
// program's threads wrote them on other CPUs), and the write copies them
// from there while they are still in it (a quarter of L2 here). Walking
// every ring first and then writing them all doubled the kernel's copy
// time.
const memprofChunk = 256 << 10

// drainAll drains every ring once, dropping those whose thread exited,
// and reports whether a ring was an eighth full or more.
func (m *memprof) drainAll(r *recorder) (busy bool) {
	keep := m.rings[:0]
	for _, g := range m.rings {
		tail := atomic.LoadUint64(g.word(ringOffTail))
		if head := atomic.LoadUint64(g.word(ringOffHead)); (tail-head)*8 >= uint64(len(g.data)) {
			busy = true
		}
		if m.drain(r, g) {
			keep = append(keep, g)
		} else {
			unix.Munmap(g.mem)
		}
	}
	for i := len(keep); i < len(m.rings); i++ {
		m.rings[i] = nil
	}
	m.rings = keep
	return busy
}

// writeBatch writes the frames a walk gathered.
func (m *memprof) writeBatch(r *recorder) {
	b := &m.batch
	if len(b.segs) == 0 || r == nil || r.writeErr != nil {
		return
	}
	m.nAllocs += b.allocs
	m.frees += b.frees
	if err := r.w.AddAllocationFrames(b.segs, int(b.allocs+b.frees), b.last); err != nil {
		r.writeErr = err
	}
}

// drain writes a ring's new records, memprofChunk bytes at a time, each
// chunk's frames as they lie in the ring, and moves the ring's head past
// each chunk once it is written; it reports whether to keep the ring.
func (m *memprof) drain(r *recorder, g *memRing) bool {
	// closed is read before tail: a closed ring's tail is final.
	closed := g.isClosed()
	head := atomic.LoadUint64(g.word(ringOffHead))
	tail := atomic.LoadUint64(g.word(ringOffTail))
	var err error
	for head < tail && err == nil {
		m.batch.reset()
		var next uint64
		next, err = g.walk(g.data, head, tail, memprofChunk, &m.batch, ringUser{m, r, g})
		m.writeBatch(r)
		head = next
		atomic.StoreUint64(g.word(ringOffHead), head)
	}
	if lost := atomic.LoadUint64(g.word(ringOffLost)); lost > g.lost {
		m.lost += lost - g.lost
		g.lost = lost
	}
	if u := atomic.LoadUint64(g.word(ringOffUntracked)); u > g.untrack {
		m.untracked += u - g.untrack
		g.untrack = u
	}
	if n := atomic.LoadUint64(g.word(ringOffSigDrop)); n > g.sigDrop {
		m.sigDropped += n - g.sigDrop
		g.sigDrop = n
	}
	if n := atomic.LoadUint64(g.word(ringOffCallsLost)); n > g.callLost {
		m.callsLost += n - g.callLost
		g.callLost = n
	}
	if n := atomic.LoadUint64(g.word(ringOffUntimed)); n > g.untimed {
		m.untimed += n - g.untimed
		g.untimed = n
	}
	if n := atomic.LoadUint64(g.word(ringOffTSCTimes)); n > g.tsc {
		m.tscTimes += n - g.tsc
		g.tsc = n
	}
	if err != nil {
		m.note(r, "dropping memprof ring of thread %d: %v", g.tid, err)
		return false
	}
	return !closed
}

// ringUser is what a drain does with the records of ring g besides
// writing its frames.
type ringUser struct {
	m *memprof
	r *recorder
	g *memRing
}

func (u ringUser) call(time int64, c *ringCall) {
	if u.r != nil && u.r.writeErr == nil {
		u.m.writeCall(u.r, u.g, time, c)
	}
}

func (u ringUser) stack(addrs []uint64, time int64) int {
	if u.r == nil || u.r.sym == nil {
		return len(addrs)
	}
	return u.m.symbolize(u.r, u.g, addrs, time)
}

// symbolize returns how much of a stack to keep (trimReturns) and hands
// those addresses to the symbolizer the first time the process shows
// them, so they are named in the symbol bundle.
func (m *memprof) symbolize(r *recorder, g *memRing, addrs []uint64, t int64) int {
	addrs = r.sym.trimReturns(int(g.pid), addrs)
	keep := len(addrs)
	h := uint64(14695981039346656037)
	for _, a := range addrs {
		h ^= a
		h *= 1099511628211
	}
	if g.stacks == nil {
		g.stacks = m.stacks[g.pid]
		if g.stacks == nil {
			g.stacks = make(map[uint64]struct{})
			m.stacks[g.pid] = g.stacks
		}
	}
	if _, ok := g.stacks[h]; ok {
		return keep
	}
	g.stacks[h] = struct{}{}
	r.sym.sampled(int(g.pid), addrs, true, t)
	if r.opts.NoPerf {
		m.rescan[g.pid] = true
	}
	return keep
}

// finishMemprof takes the last registrations and records, and notes what
// was lost.
func (r *recorder) finishMemprof() {
	m := r.mp
	m.accept(r)
	m.drainAll(r)
	if r.opts.NoPerf && r.sym != nil {
		for pid := range m.rescan {
			r.tr.rescanMaps(int(pid), r.now())
		}
	}
	for _, g := range m.rings {
		unix.Munmap(g.mem)
	}
	m.rings = nil
	m.recv.Close()
	// How many event times came from the TSC rather than the clock
	// (preload/memprof.c, "event times"), and how many events were not
	// recorded: zero counts too, so a report can say none were.
	m.finishCalls(r)
	if r.writeErr == nil && (m.nAllocs+m.frees > 0 || m.lost+m.sigDropped > 0) {
		for _, kv := range [][2]string{
			{capture.MetaMemprofTSCTimes, strconv.FormatUint(m.tscTimes, 10)},
			{capture.MetaMemprofLost, strconv.FormatUint(m.lost, 10)},
			{capture.MetaMemprofSignalDropped, strconv.FormatUint(m.sigDropped, 10)},
		} {
			if err := r.w.AddMetadata(r.now(), kv[0], kv[1]); err != nil {
				r.writeErr = err
				break
			}
		}
	}
	if m.lost > 0 || m.sigDropped > 0 || m.untracked > 0 {
		msg := fmt.Sprintf("memprof: %d events lost (%d with rings full, %d in signal handlers with no room), %d sampled blocks whose free was not tracked",
			m.lost+m.sigDropped, m.lost, m.sigDropped, m.untracked)
		r.logf("%s", msg)
		if r.writeErr == nil {
			if err := r.w.AddLog(r.now(), -1, capture.LogWarning, "nsprof", msg); err != nil {
				r.writeErr = err
			}
		}
	}
	if m.registered == 0 {
		r.logf("memprof: no thread of the command registered (a static binary, or LD_PRELOAD dropped)")
	}
}

// rescanMaps adds the executable mappings pid has now, for processes
// recorded without perf's MMAP records.
func (t *tracker) rescanMaps(pid int, now int64) {
	ps := t.procs[pid]
	if ps == nil || !ps.described {
		return
	}
	maps, err := t.fs.ReadMaps(pid)
	if err != nil {
		return
	}
	for _, m := range maps {
		if m.Perms&proc.PermExec == 0 {
			continue
		}
		if _, seen := ps.have[mapKey{m.Start, m.End, m.Offset, procMapName(m, ps.root)}]; seen {
			continue
		}
		t.addProcMap(pid, ps, m, now)
	}
}

// close releases what a recording that failed early still holds.
func (m *memprof) close() {
	for _, g := range m.rings {
		unix.Munmap(g.mem)
	}
	m.rings = nil
	m.recv.Close()
	m.send.Close()
}
