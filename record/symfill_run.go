package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"nsprof/internal/unix"
	"nsprof/symbol"
	"nsprof/symcache"
)

// fillGCPercent is the filler's GC percent: its CPU is idle time, its
// memory is not. Filling a Python loop's four files (python3.11 whole:
// 10,309 functions) peaked at 176 MB with the default 100, 140 MB with
// 25 for 1.27 times the CPU (2.34 s against 1.84), 112 MB with 10 for
// twice the CPU (one run each, load 8).
const fillGCPercent = 25

// FillOptions are the arguments of FillSymbolCache, as SymbolFill.Start
// passes them on the filler's command line.
type FillOptions struct {
	// Dir is the symbol cache; MaxBytes its size bound (zero: the
	// default), kept by trimming it once the entries are filled.
	Dir      string
	MaxBytes int64
	// Files describe the files to fill, one JSON object each: the cache
	// key, the path the file was mapped at, the source of its symbols
	// and the descriptors this process inherited the file and the file
	// of its source lines at.
	Files []string
	// Budget is how long the filler may take, from its start, before it
	// gives up; zero: DefaultFillBudget.
	Budget time.Duration
}

// DefaultFillBudget is how long a filler may take. At idle priority on a
// machine whose CPUs are all busy it gets a share of about 0.3 % (CFS
// weight 3 against 1024), and filling libpython3.11's entry (2.2 s of CPU)
// would take it some 12 minutes, holding the fill lock, the files handed
// over and up to 120 MB the while. Past the budget it exits: what it did
// not fill is handed over by the next recording of it.
const DefaultFillBudget = 5 * time.Minute

// FillSymbolCache is the filler SymbolFill.Start runs: it adds to the
// cache entries of the files it was handed the frames of every address
// of their functions (wholeFunctions), at idle priority. The files are
// read only through the descriptors inherited, never opened by path:
// the recorder opened them with the traced processes' credentials and
// checked them, and a path may name another file by now, or a process's
// root that is gone. Only one filler fills a cache at a time (the
// cache's fill lock): another finds it held and leaves its files to the
// next recording of them. What goes wrong with a file is logged to the
// cache's fill log, and the next file is filled; an error is returned
// only when the cache cannot be opened.
func FillSymbolCache(opts FillOptions) error {
	c, err := symcache.Open(opts.Dir, symcache.Options{MaxBytes: opts.MaxBytes})
	if err != nil {
		return err
	}
	defer c.Close()
	var log io.Writer = io.Discard
	if f, err := c.OpenFillLog(); err == nil {
		defer f.Close()
		log = f
		unix.RedirectStderr(f) // for what the runtime writes
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(log, "%s nsprof[%d]: %s\n", time.Now().Format(time.RFC3339), os.Getpid(), fmt.Sprintf(format, args...))
	}
	specs := make([]fillSpec, 0, len(opts.Files))
	for _, js := range opts.Files {
		var sp fillSpec
		if err := json.Unmarshal([]byte(js), &sp); err != nil {
			logf("bad --file %q: %v", js, err)
			continue
		}
		specs = append(specs, sp)
	}
	unlock, ok, err := c.LockFill()
	if !ok {
		if err == nil {
			err = errors.New("another process is filling the cache")
		}
		logf("%d files not filled (left to the next recording of them): %v", len(specs), err)
		return nil
	}
	defer unlock()
	debug.SetGCPercent(fillGCPercent)
	if err := unix.SetIdlePriority(); err != nil {
		logf("idle priority not set: %v", err)
	}
	start := time.Now()
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultFillBudget
	}
	// An entry being filled has nothing written until it is whole (a
	// temporary file renamed over it): exiting in the middle loses only
	// that entry's work, and the lock goes with the process.
	spent := time.AfterFunc(budget, func() {
		logf("gave up after %s, its budget: the entry being filled is left to the next recording of its file", budget)
		os.Exit(0)
	})
	defer spent.Stop()
	filled := 0
	for i, sp := range specs {
		if time.Since(start) >= budget {
			logf("gave up after %s, its budget: %d of %d files left to the next recording of them", budget, len(specs)-i, len(specs))
			break
		}
		t := time.Now()
		n, err := fillEntry(c, sp)
		switch {
		case err != nil:
			logf("%s: %v", sp.Path, err)
		case n == 0:
			logf("%s: entry %s whole already", sp.Path, sp.Key)
		default:
			filled++
			logf("%s: entry %s: %d functions added in %.2fs", sp.Path, sp.Key, n, time.Since(t).Seconds())
		}
	}
	if _, err := c.Trim(); err != nil {
		logf("%v", err)
	}
	// Its own CPU and memory, for whoever weighs what it costs.
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	logf("%d of %d entries filled in %.2fs (CPU %.2fs, peak RSS %d MB)", filled, len(specs), time.Since(start).Seconds(),
		time.Duration(ru.Utime.Nano()+ru.Stime.Nano()).Seconds(), ru.Maxrss>>10)
	return nil
}

// fillEntry adds to the entry sp names the frames of every address of
// the functions of its file it does not cover yet, and returns how many
// functions it added.
func fillEntry(c *symcache.Cache, sp fillSpec) (int, error) {
	linesPath := sp.Path
	if p, ok := strings.CutPrefix(sp.Source, "build-id:"); ok {
		linesPath = p
	} else if p, ok := strings.CutPrefix(sp.Source, "debuglink:"); ok {
		linesPath = p
	} else if sp.Source == symbol.SourceDebuginfod {
		linesPath = sp.Path + " (debuginfod)"
	} else if sp.Source != "symtab" {
		return 0, fmt.Errorf("symbols from %q: not filled", sp.Source)
	}
	elfFile, err := inherited(sp.ELF, sp.Path)
	if err != nil {
		return 0, err
	}
	defer elfFile.Close()
	lines, err := inherited(sp.Lines, linesPath)
	if err != nil {
		return 0, err
	}
	defer lines.Close()
	e, err := c.Get(sp.Key)
	if e == nil {
		if err == nil {
			err = fmt.Errorf("no entry %s", sp.Key)
		}
		return 0, err
	}
	defer e.Close()
	if e.Source != sp.Source || e.NoLines {
		return 0, fmt.Errorf("entry %s is of symbols from %q now, not %q", sp.Key, e.Source, sp.Source)
	}
	obj, err := symbol.NewFile(elfFile)
	if err != nil {
		return 0, err
	}
	if k := symcache.Key(obj.BuildID(), obj.GoBuildID()); k != sp.Key {
		return 0, fmt.Errorf("the file handed over is build %s, not the entry's %s", k, sp.Key)
	}
	known := symbol.TableOf(e.Symbols)
	open := fileOpener(linesPath, lines)
	l := symbol.Loader{
		// Every search ends at the descriptor handed over: no other
		// file is opened.
		Roots: []symbol.Opener{open},
		Known: func(source string) *symbol.Table {
			if source == e.Source {
				return known
			}
			return nil
		},
	}
	var syms *symbol.Symbols
	if sp.Source == symbol.SourceDebuginfod {
		// The debug file the recording had from debuginfod, handed
		// over: no server is asked.
		syms, err = symbol.LoadDebugFile(obj, open, linesPath, sp.Source, l.Known(sp.Source))
	} else {
		syms, err = l.Load(obj, sp.Path)
	}
	if err != nil {
		return 0, err
	}
	if syms.Source() != e.Source {
		return 0, fmt.Errorf("symbols found at %q, the entry's at %q", syms.Source(), e.Source)
	}
	// A lines file that cannot be read gives every function no frames:
	// never cached as such.
	lf, err := syms.OpenLines()
	if err != nil {
		return 0, fmt.Errorf("source lines: %w", err)
	}
	lf.Close()
	addrs := wholeAddrs(syms, e, nil)
	if len(addrs) == 0 {
		return 0, nil
	}
	spans, runs := wholeFunctions(syms, e, addrs)
	if syms.LinesUnread() {
		// Frames without what the DWARF could not give (a supplementary
		// file not handed over): no truth to keep.
		return 0, fmt.Errorf("source lines of %s: not all read", sp.Path)
	}
	if len(spans) == 0 {
		return 0, nil
	}
	// Added to the entry as it is now: recordings may have added
	// addresses to it since it was read.
	cur, err := c.Get(sp.Key)
	if cur == nil {
		if err == nil {
			err = fmt.Errorf("entry %s removed while it was filled", sp.Key)
		}
		return 0, err
	}
	defer cur.Close()
	if cur.Source != e.Source {
		return 0, fmt.Errorf("entry %s replaced while it was filled", sp.Key)
	}
	cur.AddFunctions(spans, runs)
	if err := c.Put(sp.Key, cur); err != nil {
		return 0, err
	}
	return len(spans), nil
}

// inherited returns the file of descriptor fd, which this process
// inherited, named name; an error for a descriptor not open, or not a
// regular file (one the runtime opened itself, on a command line that
// named a descriptor not handed over, is left alone).
func inherited(fd int, name string) (*os.File, error) {
	var st syscall.Stat_t
	if fd < 3 || syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("descriptor %d (%s): not a regular file handed over", fd, name)
	}
	return os.NewFile(uintptr(fd), name), nil
}
