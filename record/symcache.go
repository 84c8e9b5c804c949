package record

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/symbol"
	"nsprof/symcache"
)

// noLinesTrust is how long an entry of symbols without source lines
// answers addresses new to it without the file being read: a debug file
// installed since is found when it is read again.
const noLinesTrust = 24 * time.Hour

// maxCachedAddrs bounds the addresses whose frames one cache entry keeps;
// beyond it, addresses are resolved each recording.
const maxCachedAddrs = 1 << 20

// resolve loads o and returns the source frames of the file offsets offs,
// by link-time address; nil when o has no symbols.
//
// With a cache, an object known by its build-id is read from it first:
// its symbol table, and the frames of the addresses earlier recordings
// resolved. The object's own tables and DWARF are read only when the
// entry is missing or lacks some of the addresses, which are then added
// to it (appended to its file where only addresses are added); an entry of symbols without source lines (a stripped library)
// answers new addresses too, for a day after the file was read. A file
// with DWARF read so, whose entry does not hold all its functions yet,
// is left open in o.fill, for the filler the recording starts once its
// capture is written to cache them whole (see SymbolFill).
// The use it made of the cache is returned.
func (o *symObj) resolve(offs []uint64, c *symcache.Cache, logf func(string, ...any)) (map[uint64][]capture.SourceFrame, cacheUse) {
	if o.loaded && o.linesDropped {
		// Resolved before, its line tables let go since: read again.
		o.elf.Close()
		o.loaded, o.linesDropped, o.elf, o.syms = false, false, nil, nil
	}
	if o.loaded {
		if o.syms == nil {
			return nil, cacheNone
		}
		return o.frames(o.vaddrs(offs), logf), cacheNone
	}
	o.loaded = true
	if !o.openELF(logf) {
		return nil, cacheNone
	}
	vas := o.vaddrs(offs)
	key := ""
	var e *symcache.Entry
	if c != nil {
		key = symcache.Key(o.elf.BuildID(), o.elf.GoBuildID())
	}
	if key != "" {
		var err error
		if e, err = c.Get(key); err != nil {
			logf("%s: %v (ignored)", o.path, err)
		}
		if e != nil {
			defer e.Close() // once written back: its file is mapped
		}
	}
	out := make(map[uint64][]capture.SourceFrame, len(vas))
	var missing []uint64
	// The entry's symbol table names the object's addresses, and stands
	// for the file's when the file is read for its lines (from the same
	// source): parsing a Go toolchain binary's was most of that read.
	var known *symbol.Table
	fromEntry := func() *symbol.Symbols {
		if known == nil {
			known = symbol.TableOf(e.Symbols)
		}
		return symbol.SymbolsOf(known, e.Source)
	}
	if e != nil {
		// Runs share frame lists: each is converted once.
		conv := make(map[*symbol.Frame][]capture.SourceFrame)
		for _, va := range vas {
			if fr, ok := e.FramesAt(va); ok {
				if len(fr) > 0 {
					sf, ok := conv[&fr[0]]
					if !ok {
						sf = sourceFrames(fr)
						conv[&fr[0]] = sf
					}
					out[va] = sf
				} else {
					out[va] = nil
				}
			} else {
				missing = append(missing, va)
			}
		}
		if len(missing) == 0 {
			o.syms = fromEntry()
			return out, cacheAll
		}
		if e.NoLines && time.Since(time.Unix(e.LoadedAt, 0)) < noLinesTrust {
			o.syms = fromEntry()
			// Symbols without source lines give no address frames:
			// the file need not be read to learn that again.
			for _, va := range missing {
				out[va] = nil
			}
			return out, cacheAll
		}
	}
	var loaded *symbol.Symbols
	if e != nil {
		loaded = fromEntry()
	}
	if !o.loadSymbols(loaded, logf) {
		if e == nil {
			return nil, cacheNone
		}
		o.syms = fromEntry() // the file's tables fail now: names from the cache, no more frames
		return out, cachePart
	}
	use := cachePart
	if e == nil {
		use = cacheNone
	}
	if e != nil && o.syms.Source() != e.Source {
		// Other symbols than the entry's (a debug file installed since):
		// its frames may be stale too.
		e, missing = nil, nil
		clear(out)
	}
	if e == nil {
		missing = vas
	}
	fresh := o.frames(missing, logf)
	maps.Copy(out, fresh)
	if key == "" {
		return out, use
	}
	if o.syms.LinesUnread() {
		// Frames without the source lines a failure left out would
		// stand for the file's in every later recording.
		logf("%s: symbols not cached: its source lines could not be read", o.path)
		return out, use
	}
	if why := o.untrusted(); why != "" {
		// What a user could have written is not kept for the
		// recordings of others: a file forging the build-id of a
		// library would name that library's code.
		logf("%s: symbols not cached: %s", o.path, why)
		return out, use | cacheUntrusted
	}
	// The entry read (of the same source) is written back, its
	// frames and runs kept, with what was read of the file added.
	next := e
	if next == nil {
		next = &symcache.Entry{}
	}
	if next.Frames == nil {
		next.Frames = make(map[uint64][]symbol.Frame)
	}
	hadLines := e != nil && !e.NoLines
	next.Source, next.NoLines, next.LoadedAt = o.syms.Source(), !o.syms.HasLines(), time.Now().Unix()
	next.Symbols = o.syms.Table().All()
	add := make(map[uint64][]symbol.Frame, len(fresh))
	for va, fr := range fresh {
		if next.NumAddrs()+len(add) >= maxCachedAddrs {
			break
		}
		if _, ok := next.FramesAt(va); !ok {
			add[va] = symbolFrames(fr)
		}
	}
	var err error
	if hadLines && !next.NoLines {
		// Only addresses added: appended to the entry's file, not the
		// entry written whole again.
		err = c.AddFrames(key, next, add)
	} else {
		maps.Copy(next.Frames, add)
		err = c.Put(key, next)
	}
	if err != nil {
		logf("%s: %v", o.path, err)
		return out, use
	}
	if len(wholeAddrs(o.syms, next, sortedKeys(fresh))) > 0 {
		// Functions left to cache whole: by a process of their own
		// once the capture is written (see SymbolFill), not here.
		o.fill = o.fillFile(key, len(vas), logf)
	}
	return out, use
}

// Bounds on the runs of frames (symbol.FrameRange) an entry keeps.
const (
	// maxRunsPerFunction: a function of more runs keeps only the
	// frames of its addresses resolved.
	maxRunsPerFunction = 1 << 16
	// maxCachedRuns: beyond it, functions newly sampled keep only the
	// frames of their addresses resolved.
	maxCachedRuns = 1 << 22
	// maxWholeFunctions: an object of more functions keeps only those
	// sampled (libc has 3,761, python3.11 10,309).
	maxWholeFunctions = 1 << 15
)

// wholeAddrs returns the link-time addresses, one in each, of the
// functions of syms whose frames e is to keep whole and does not cover
// yet (see wholeFunctions): every function of a file of at most
// maxWholeFunctions, else those holding the addresses resolved (those
// of e when nil; sorted). None for
// symbols without source lines (NoLines says every address has none),
// nor for a Go binary's: it is read again from its line table for new
// addresses. Its few functions outside the table (assembly, cgo's C)
// cached whole read its whole DWARF and walked its 40 k symbols at
// every recording of it: a warm 10 s record -a, the nsprof binary among
// its processes, took 0.24 CPU-s where the cache before it took 0.14.
// Filled whole in the background from their line tables (a scratch
// change, 2026-11-27), Go binaries made entries each recording read and
// held: the Go compiler's 20 k functions 707 k runs in 10.4 MB, the
// nsprof binary's 18.6 k 432 k runs in 7.1 MB; over the compile loop the
// recorder's CPU was unchanged at 1 kHz and 6 % lower at 4 kHz, its peak
// RSS 6-7 MB higher, also over two busy loops (bench/record-system.sh,
// OLD_CACHE=1, three rounds). Only their functions sampled filled (the
// same day), the recorder's CPU over the compile loop was 0.45 and 0.73
// CPU-s at 1 and 4 kHz against 0.47 and 0.77 (medians of three, as much
// memory), but each recording handed the compiler to the filler again
// (new functions sampled), which spent 0.46-0.60 CPU-s filling it.
func wholeAddrs(syms *symbol.Symbols, e *symcache.Entry, resolved []uint64) []uint64 {
	if !syms.HasLines() || syms.HasGoLineTable() {
		return nil
	}
	var addrs []uint64
	if all := syms.Table().All(); len(all) <= maxWholeFunctions {
		for _, sym := range all {
			if !overlaps(e.Covered, sym.Addr, sym.Addr+sym.Size) {
				addrs = append(addrs, sym.Addr)
			}
		}
		return addrs
	}
	if resolved == nil {
		resolved = e.Addrs()
	}
	for _, va := range resolved {
		if sym, ok := syms.Lookup(va); ok && sym.Size > 0 && !overlaps(e.Covered, va, va+1) {
			addrs = append(addrs, va)
		}
	}
	return addrs
}

// wholeFunctions returns the frames of every address of the functions
// of syms holding addrs (wholeAddrs) that e does not cover, as runs of
// addresses with the same frames ([symbol.Symbols.FrameRanges]), with
// the spans of those functions, for e.AddFunctions: a file recorded
// once is likely to be recorded again, and each recording samples some
// functions none before did (a compile loop's, or a Python loop's
// start-up and exit: 30-40 of python3.11's 3,400 sampled addresses each
// time), so that caching only the functions sampled still read the file
// every time.
//
// It is the work of the process that fills entries in the background
// (SymbolFill): done by the recording that read a file a second time, it
// took that recording three times the first's (a Python loop: 1.06 s
// against 0.33, 73 MB more at its peak).
func wholeFunctions(syms *symbol.Symbols, e *symcache.Entry, addrs []uint64) ([]symcache.Span, []symbol.FrameRange) {
	// Their DWARF in one pass: reading it for each unit made it again
	// for each. Then a unit at a time, read and let go after: all of
	// python3.11's units held together made the peak RSS 263 MB
	// instead of 100, and batches of functions read its units (of
	// thousands of functions each, from link-time optimization) again
	// for each batch.
	syms.PrepareDWARF(addrs)
	var spans []symcache.Span
	var runs []symbol.FrameRange
	seen := make(map[uint64]bool)
	for _, unit := range syms.ByUnit(addrs) {
		syms.PrepareFrames(unit)
		spans, runs = addFunctions(syms, e, unit, seen, spans, runs)
		syms.ForgetUnits()
	}
	return spans, runs
}

// addFunctions appends to spans and runs the frames of the functions
// (symbols) of syms holding the link-time addresses addrs that e does
// not cover and seen (by their addresses) holds none of, up to the
// bounds on runs.
func addFunctions(syms *symbol.Symbols, e *symcache.Entry, addrs []uint64, seen map[uint64]bool, spans []symcache.Span, runs []symbol.FrameRange) ([]symcache.Span, []symbol.FrameRange) {
	for _, va := range addrs {
		sym, ok := syms.Lookup(va)
		if !ok || sym.Size == 0 || seen[sym.Addr] || e.NumRuns()+len(runs) >= maxCachedRuns {
			continue
		}
		seen[sym.Addr] = true
		lo, hi := sym.Addr, sym.Addr+sym.Size
		if hi < lo || overlaps(e.Covered, lo, hi) {
			continue
		}
		rs, ok := syms.FrameRanges(lo, hi, maxRunsPerFunction)
		if !ok {
			continue
		}
		spans = append(spans, symcache.Span{Lo: lo, Hi: hi})
		runs = append(runs, rs...)
	}
	return spans, runs
}

// overlaps reports whether [lo, hi) overlaps a span of sorted spans.
func overlaps(spans []symcache.Span, lo, hi uint64) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].Hi > lo })
	return i < len(spans) && spans[i].Lo < hi
}

// dropLines lets go of o's line tables (a Go binary's pclntab, DWARF
// units), keeping its symbol table: the bundle names addresses from the
// symbol table after every object is resolved, but needs no more source
// frames than those resolve returned. Done as each object is resolved, it
// keeps a recording of many large binaries from holding all their line
// tables at once.
func (o *symObj) dropLines() {
	if o.syms == nil || !o.syms.HasLines() {
		return
	}
	o.syms = symbol.SymbolsOf(o.syms.Table(), o.syms.Source())
	o.linesDropped = true
}

// cacheUse says what resolving an object took from the symbol cache.
type cacheUse int

const (
	cacheNone cacheUse = iota // nothing: the file was read
	cachePart                 // its symbols and some frames; the file was read for the others
	cacheAll                  // all it needed: the file was not read

	// cacheUntrusted, or'ed in, says what was read was not written to
	// the cache (see symObj.untrusted).
	cacheUntrusted cacheUse = 4
)

// untrusted says why o's symbols are not to be cached, "" when they may
// be: they must come from a file only root or the recording user can
// write (or the vdso, which the kernel gives), and debug files found
// inside a process's own root only when that root is the host's.
func (o *symObj) untrusted() string {
	if o.vdso {
		return ""
	}
	if o.f == nil {
		return "no file"
	}
	if why := fileUntrusted(o.f); why != "" {
		return why
	}
	src := o.syms.Source()
	fromDebugFile := strings.HasPrefix(src, "build-id:") || strings.HasPrefix(src, "debuglink:")
	if fromDebugFile && o.root != nil && o.root.Identity().Kind != container.KindHost {
		return "debug file found inside a " + o.root.Identity().Kind + " root"
	}
	return ""
}

// vaddrs returns the link-time addresses of the file offsets offs that
// o's segments map, sorted, each once: the bundle gives the offsets of
// every process, and over a compile loop the compiler's 110 k were a few
// thousand addresses, each looked up in its cache entry again for every
// process that sampled it.
func (o *symObj) vaddrs(offs []uint64) []uint64 {
	vas := make([]uint64, 0, len(offs))
	for _, off := range offs {
		if va, ok := o.elf.Vaddr(off); ok {
			vas = append(vas, va)
		}
	}
	slices.Sort(vas)
	return slices.Compact(vas)
}

// frames returns the source frames of the link-time addresses vas, from
// o's DWARF; an address without any maps to nil.
func (o *symObj) frames(vas []uint64, logf func(string, ...any)) map[uint64][]capture.SourceFrame {
	o.syms.PrepareFrames(vas)
	out := make(map[uint64][]capture.SourceFrame, len(vas))
	unnamed := 0
	// In address order: a Go binary's line table is read from the file
	// in pages as its functions are looked up (a bounded number kept),
	// and the functions, their records and their pcvalue tables lie in
	// address order; in sample order a few thousand addresses read the
	// same pages again and again.
	for _, va := range slices.Sorted(slices.Values(vas)) {
		if _, ok := out[va]; ok {
			continue
		}
		var sf []capture.SourceFrame
		if fr := o.syms.Frames(va); len(fr) > 0 {
			sf = make([]capture.SourceFrame, len(fr))
			for i, f := range fr {
				sf[i] = capture.SourceFrame{Function: f.Function, File: f.File, Line: f.Line}
				if f.Function == "" && i < len(fr)-1 {
					unnamed++
				}
			}
		}
		out[va] = sf
	}
	if unnamed > 0 {
		logf("%s: %d inlined calls at sampled addresses have no function name in its DWARF (%s); reports charge them to the function they are inlined in", o.path, unnamed, o.syms.Source())
	}
	if n := o.syms.SplitUnitsMissing(); n > 0 {
		logf("%s: the .dwo files of %d compilation units (split DWARF) were not found; their inlined calls are left out", o.path, n)
	}
	return out
}

func sourceFrames(fr []symbol.Frame) []capture.SourceFrame {
	if len(fr) == 0 {
		return nil
	}
	out := make([]capture.SourceFrame, len(fr))
	for i, f := range fr {
		out[i] = capture.SourceFrame{Function: f.Function, File: f.File, Line: f.Line}
	}
	return out
}

func symbolFrames(fr []capture.SourceFrame) []symbol.Frame {
	out := make([]symbol.Frame, len(fr))
	for i, f := range fr {
		out[i] = symbol.Frame{Function: f.Function, File: f.File, Line: f.Line}
	}
	return out
}

// openELF parses the headers of o's file, which map file offsets to
// link-time addresses and give its build-id; false when it has no file or
// they cannot be read.
func (o *symObj) openELF(logf func(string, ...any)) bool {
	r := o.reader()
	if r == nil {
		if o.err != nil {
			logf("%s: not symbolized: %v", o.path, o.err)
		}
		return false
	}
	elf, err := symbol.NewFile(r)
	if err != nil {
		logf("%s: %v", o.path, err)
		return false
	}
	o.elf = elf
	return true
}

// loadSymbols reads o's symbols: its own tables, or debug files found
// inside the owning process's root first, then on the host, then
// debuginfod. Where they come from the source of known (a cache
// entry's), its table is taken, and only the lines are read.
func (o *symObj) loadSymbols(known *symbol.Symbols, logf func(string, ...any)) bool {
	l := o.loader()
	l.Debuginfod = symbol.DebuginfodFromEnv()
	if known != nil {
		l.Known = func(source string) *symbol.Table {
			if source == known.Source() {
				return known.Table()
			}
			return nil
		}
	}
	syms, err := l.Load(o.elf, o.path)
	if err != nil {
		logf("%s: no symbols: %v", o.path, err)
		return false
	}
	o.syms = syms
	return true
}
