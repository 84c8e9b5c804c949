package record

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"slices"
	"time"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/perf"
	"nsprof/proc"
	"nsprof/symbol"
	"nsprof/unwind"
)

// unwindCacheBytes bounds the CFI tables kept in memory (libc's is about
// 0.7 MB).
const unwindCacheBytes = 64 << 20

// maxUnwindFrames bounds an unwound user chain, as perf's default
// kernel.perf_event_max_stack bounds a callchain.
const maxUnwindFrames = 127

// dwarfRingPages sizes each CPU's ring to hold about a second of samples
// with stack copies (within 2 to 16 MiB): the start of a system-wide
// recording, which scans every process and opens its files before it
// reads a record, and the first use of a large binary's CFI, must not
// make the kernel drop samples. The leaf step (leafCallers) reads CFI
// too, and its rings are sized the same way.
func dwarfRingPages(freq, stack int) int {
	want := freq * (stack + 512) / os.Getpagesize()
	pages := perf.DefaultStackRingPages
	for pages*2 <= want && pages < 4096 {
		pages *= 2
	}
	return pages
}

// dwarfUnwinder turns each sample's user registers and stack copy into the
// user part of its callchain while recording, through the files the
// symbolizer opened (so containers' files are read through the process).
type dwarfUnwinder struct {
	sym    *symbolizer
	fs     proc.FS
	format perf.Format
	cache  *unwind.Cache
	mapper unwindMapper
	chain  []uint64
	// truncated is the JIT address of truncatedName, appended to stacks
	// the stack copy cut short; 0 leaves them unmarked.
	truncated uint64

	samples uint64
	stops   [unwind.StopDepth + 1]uint64
	spent   time.Duration
	// loading is the part of spent that went into reading tables.
	loading time.Duration
	// jitUnwindReads counts the tables made of jitdumps' call frame
	// information; jitUnwindDropped the codes left out of them for
	// maxJITUnwindBytes.
	jitUnwindReads, jitUnwindDropped uint64
	// jitMissed is the first address of JIT code its process's jitdumps
	// do not describe yet that the last stack unwound went through, 0
	// when none; stop is how its unwinding stopped.
	jitMissed uint64
	stop      unwind.Stop
	// goTables keeps Go binaries' tables in the symbol cache; nil
	// without one.
	goTables *goTables
}

// truncatedName names the frame that ends a user stack whose callers lie
// beyond the copied stack bytes.
const truncatedName = "[stack truncated]"

func newDWARFUnwinder(sym *symbolizer, fs proc.FS, f perf.Format) *dwarfUnwinder {
	u := &dwarfUnwinder{sym: sym, fs: fs, format: f, cache: unwind.NewCache(unwindCacheBytes)}
	u.mapper.u = u
	return u
}

// callchain returns the sample's callchain: the kernel part of perf's,
// then the user part unwound from the registers and stack. It reuses its
// buffer: the result is valid until the next call. jitMissed then says
// whether the stack went through JIT code not described yet, and where.
func (u *dwarfUnwinder) callchain(s *perf.Sample) []uint64 {
	out := u.chain[:0]
	for _, a := range s.Callchain {
		if a == capture.ContextUser {
			break
		}
		if a != 0 {
			out = append(out, a)
		}
	}
	u.jitMissed = 0
	ip, ok1 := u.format.UserReg(s, perf.RegX86IP)
	sp, ok2 := u.format.UserReg(s, perf.RegX86SP)
	bp, _ := u.format.UserReg(s, perf.RegX86BP)
	if !ok1 || !ok2 {
		u.chain = out
		return out // a kernel thread: no user part
	}
	out, u.stop = u.user(out, int(s.PID), int64(s.Time), unwind.Regs{IP: ip, SP: sp, BP: bp}, s.Stack)
	u.samples++
	u.chain = out
	return out
}

// user appends to out the user part of a stack of process pid sampled at
// time at, unwound from regs and the stack copy, and counts and returns
// how it stopped.
func (u *dwarfUnwinder) user(out []uint64, pid int, at int64, regs unwind.Regs, stack []byte) ([]uint64, unwind.Stop) {
	start := time.Now()
	u.mapper.use(pid, at)
	out = append(out, capture.ContextUser)
	var stop unwind.Stop
	out, stop = unwind.Unwind(out, regs, stack, &u.mapper, maxUnwindFrames)
	if stop == unwind.StopTruncated && u.truncated != 0 {
		out = append(out, u.truncated)
	}
	u.spent += time.Since(start)
	u.stops[stop]++
	return out, stop
}

// procMaps returns what the symbolizer knows of pid's mappings. Rings
// are read CPU by CPU, so a new process's first samples may come before
// the FORK or MMAP records that describe it: then its own maps are read
// now, or, when it is gone, its parent's are taken (a child that exited
// before anything looked most often ran its parent's image). The own maps
// come first: a process that exec'd (a container's program, below its
// runtime's init) runs none of its parent's code, and given its parent's
// mappings the leaf step found no CFI for any of its samples.
func (u *dwarfUnwinder) procMaps(pid int) *symProc {
	p := u.sym.lookup(pid)
	if p != nil && (len(p.maps) > 0 || p.mapsTried) {
		return p
	}
	p = u.sym.proc(pid)
	p.mapsTried = true
	if maps, err := u.fs.ReadMaps(pid); err == nil && slices.ContainsFunc(maps, isExec) {
		for _, m := range maps {
			if isExec(m) {
				u.sym.mapped(pid, container.MappingFromProc(m))
			}
		}
		return p
	}
	if st, err := u.fs.ReadStatus(pid); err == nil {
		if pp := u.sym.lookup(st.PPid); pp != nil && len(pp.maps) > 0 {
			u.sym.forked(st.PPid, pid, 0)
		}
	}
	return p
}

// summary describes the unwinds, for the log.
func (u *dwarfUnwinder) summary(stackSize uint32) string {
	if u.samples == 0 {
		return "dwarf unwinding: no user stacks sampled"
	}
	pct := func(n uint64) float64 { return 100 * float64(n) / float64(u.samples) }
	used, loads, evictions := u.cache.Stats()
	s := fmt.Sprintf("dwarf unwinding: %d user stacks, %.1f%% to the outermost frame, %.1f%% truncated by the %d-byte stack copy (--call-graph dwarf,SIZE), %.1f%% stopped at a bad frame; %.2f us per sample; %d CFI tables read in %.2fs (%s%.1f MB held",
		u.samples, pct(u.stops[unwind.StopEnd]), pct(u.stops[unwind.StopTruncated]), stackSize,
		pct(u.stops[unwind.StopBadFrame]+u.stops[unwind.StopUnsupported]),
		float64((u.spent-u.loading).Nanoseconds())/1e3/float64(u.samples), loads, u.loading.Seconds(), u.goTables.summary(), float64(used)/1e6)
	if evictions > 0 {
		s += fmt.Sprintf(", %d dropped", evictions)
	}
	if u.jitUnwindReads > 0 {
		s += fmt.Sprintf("; JIT code's CFI from jitdumps read %d times", u.jitUnwindReads)
		if u.jitUnwindDropped > 0 {
			s += fmt.Sprintf(", %d codes beyond its bound left to frame pointers", u.jitUnwindDropped)
		}
	}
	return s + ")"
}

// unwindMapper finds the module at an address of one process, from the
// symbolizer's mappings, remembering the last few it found. What it
// remembers stays from one sample to the next of the same process while
// no mapping changes (symbolizer.mapsGen): a context-switch-heavy program
// has most of its samples in one process, and looking the module and its
// table up again for each (a map lookup by the table's key, under the
// cache's lock) was a third of the leaf step's time.
type unwindMapper struct {
	u    *dwarfUnwinder
	p    *symProc
	pid  int
	gen  uint64 // u.sym.mapsGen when p was taken
	memo [4]struct {
		m *symMap
		// lo and hi bound the addresses m is the latest mapping of
		// (later mappings over part of it replace it there).
		lo, hi uint64
		mod    unwind.Module
	}
	n int
	// resolved counts the lookups the memo did not answer.
	resolved uint64
	// at is the time of the sample unwound (perf's clock, ns): when
	// the jitdumps are read again (see jitModule) is told by it rather
	// than by reading the clock for each frame of JIT code.
	at int64
}

// use makes the mapper find the modules of process pid for its sample at
// time at, keeping what it remembers when that is the process of the last
// use and no mapping changed since.
func (m *unwindMapper) use(pid int, at int64) {
	m.at = at
	s := m.u.sym
	if m.p != nil && pid == m.pid && m.gen == s.mapsGen {
		return
	}
	p := m.u.procMaps(pid) // may read pid's mappings, a change
	m.p, m.pid, m.gen, m.n = p, pid, s.mapsGen, 0
}

// Find implements unwind.Mapper.
func (m *unwindMapper) Find(pc uint64) (unwind.Module, bool) {
	for i := range m.n {
		e := &m.memo[i]
		if pc >= e.lo && pc < e.hi {
			return e.mod, true
		}
	}
	if m.p == nil {
		return unwind.Module{}, false
	}
	m.resolved++
	sm, lo, hi := latestMapping(m.p.maps, pc)
	if sm == nil {
		// Anonymous memory: JIT code, which its jitdump may describe.
		// Not remembered: the dump's codes are small and grow.
		return m.u.jitModule(m.p, pc, m.at)
	}
	mod := unwind.Module{}
	if t := m.u.table(sm.obj); t != nil {
		if bias, ok := t.Bias(sm.start, sm.off); ok {
			mod = unwind.Module{Table: t, Bias: bias}
		}
	}
	i := m.n
	if i == len(m.memo) {
		i = int(pc>>4) % len(m.memo)
	} else {
		m.n++
	}
	m.memo[i].m, m.memo[i].lo, m.memo[i].hi, m.memo[i].mod = sm, lo, hi, mod
	return mod, true
}

// latestMapping returns the mapping of maps holding address a, the
// latest (later mappings of a range replace earlier ones), as
// symProc.find does, and the range around a it is the latest of: the
// part of it no later mapping covers.
func latestMapping(maps []symMap, a uint64) (sm *symMap, lo, hi uint64) {
	for k := len(maps) - 1; k >= 0; k-- {
		if m := &maps[k]; a >= m.start && a < m.end {
			lo, hi = m.start, m.end
			for _, l := range maps[k+1:] { // none of them holds a
				switch {
				case l.end <= a:
					lo = max(lo, l.end)
				case l.start > a:
					hi = min(hi, l.start)
				}
			}
			return m, lo, hi
		}
	}
	return nil, 0, 0
}

// table returns o's CFI table, read on first use from the file the
// symbolizer opened, and nil when o has none.
func (u *dwarfUnwinder) table(o *symObj) *unwind.Table {
	if o.vdso {
		if o.image == nil {
			return nil
		}
		t, _ := u.cache.Get(o.key, func() (*unwind.Table, error) {
			defer u.timeLoad(time.Now())
			return unwind.Load(bytes.NewReader(o.image), nil)
		})
		return t
	}
	if o.f == nil {
		return nil
	}
	t, _ := u.cache.Get(o.key, func() (*unwind.Table, error) {
		defer u.timeLoad(time.Now())
		return u.goTables.load(o, func() (*unwind.Table, error) {
			// A table is kept even if some FDEs could not be read.
			if dbg := debugFrameFile(o); dbg != nil {
				defer dbg.Close()
				return unwind.Load(o.f, dbg)
			}
			return unwind.Load(o.f, nil)
		})
	})
	return t
}

// debugFrameFile opens the separate debug file of o when o has no
// .debug_frame of its own: code built without unwind tables
// (-fno-asynchronous-unwind-tables) has its CFI only there, and a
// stripped binary's went to its debug file. It is searched as symbols
// are, inside the process's root first; nil when there is none.
func debugFrameFile(o *symObj) *os.File {
	ef, err := elf.NewFile(o.f)
	if err != nil {
		return nil
	}
	if s := ef.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
		return nil
	}
	obj, err := symbol.NewFile(o.f)
	if err != nil {
		return nil
	}
	l := o.loader()
	f, _, err := l.OpenDebugFile(obj, o.path)
	if err != nil {
		return nil
	}
	return f
}

// release drops the CFI tables read so far: once the recording has
// stopped no sample is left to unwind, and symbol bundling, which reads
// the same files' symbol tables, need not find the tables still in the
// heap (tens of megabytes for the Go toolchain's binaries). A later call
// reads them again.
func (u *dwarfUnwinder) release() {
	u.goTables.close()
	u.cache = unwind.NewCache(unwindCacheBytes)
	u.mapper = unwindMapper{u: u}
}

func (u *dwarfUnwinder) timeLoad(start time.Time) { u.loading += time.Since(start) }
