package symbol

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// Opener opens an absolute path as seen from some root: a process's root
// directory, or the host's. It returns an error wrapping fs.ErrNotExist
// when the file is absent.
type Opener func(path string) (*os.File, error)

// HostOpener opens path in the host's (the calling process's) file
// system, for reading. The open does not wait (O_NONBLOCK): a FIFO at a
// path searched for debug files, which the user of the process profiled
// may choose, would block it until something wrote to it (the callers
// then refuse what is not a regular file).
func HostOpener(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// OpenRegular opens path with [HostOpener] if it is a regular file.
func OpenRegular(path string) (*os.File, error) {
	f, err := HostOpener(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return f, nil
}

// RootOpener returns an Opener that opens paths inside the directory dir
// (for example /proc/PID/root, or an unpacked image) through an [os.Root]:
// symbolic links are followed only while they stay inside dir, so an
// absolute link (resolved against the host by the kernel) fails.
func RootOpener(dir string) Opener {
	return func(p string) (*os.File, error) {
		r, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		rel := strings.TrimLeft(path.Clean("/"+p), "/")
		if rel == "" {
			rel = "."
		}
		return r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0) // as HostOpener
	}
}

// DefaultDebugDir is where distributions install separate debug files.
const DefaultDebugDir = "/usr/lib/debug"

// flatpakDebugDir is where Flatpak runtimes and apps keep debug files; it
// is searched in every root after the configured directories.
const flatpakDebugDir = "/app/lib/debug"

// Loader finds the best symbols for an object file. The zero value searches
// the host's /usr/lib/debug and uses no network. A Loader may be used
// concurrently as long as its fields are not modified.
type Loader struct {
	// Roots are the file systems searched, in order: the process's root
	// first, the host last. nil means the host only.
	Roots []Opener
	// DebugDirs are the debug directories, searched inside each root.
	// nil means []string{"/usr/lib/debug"}. Flatpak's /app/lib/debug is
	// searched after them.
	DebugDirs []string
	// Debuginfod, when not nil, is asked by build-id when no local
	// debug file was found and the object has no MiniDebugInfo or Go
	// line table. nil means no network.
	Debuginfod *Debuginfod
	// Known, when not nil, gives the symbol table an earlier load of the
	// same object (by build-id) found from a source ([Symbols.Source]),
	// nil if none: a load that finds its symbols at that source takes
	// that table instead of reading them again, and reads only the
	// source lines there (a symbol cache's).
	Known func(source string) *Table
}

// known returns the table Known gives for source, nil without one.
func (l *Loader) known(source string) *Table {
	if l.Known == nil {
		return nil
	}
	return l.Known(source)
}

// Symbols is the result of [Loader.Load]: the symbols of one object, at its
// link-time addresses. It is immutable and safe for concurrent use.
type Symbols struct {
	table  *Table
	source string
	lines  *lineTable
	// golines answers Frames for the Go code of a Go binary, before
	// (and instead of reading) its DWARF.
	golines *goLineTable
	// plt are the object's PLT sections, linker-made stubs no
	// compilation unit covers: Frames answers nothing there without
	// asking the DWARF, which would read all of it looking for a unit.
	plt []addrRange
}

// SymbolsOf returns the Symbols of a table loaded before (kept in a
// cache), with the Source the load gave. They name addresses but have no
// source lines: Frames and Line find none.
func SymbolsOf(t *Table, source string) *Symbols {
	return &Symbols{table: t, source: source}
}

// HasLines says whether s has source lines to give: DWARF, or a Go line
// table. Without them, Frames and Line find nothing at any address.
func (s *Symbols) HasLines() bool {
	return s != nil && (s.lines != nil || s.golines != nil)
}

// Lookup returns the symbol covering the link-time address vaddr.
func (s *Symbols) Lookup(vaddr uint64) (Symbol, bool) {
	if s == nil {
		return Symbol{}, false
	}
	return s.table.Lookup(vaddr)
}

// Table returns all the symbols.
func (s *Symbols) Table() *Table { return s.table }

// Source says where the names came from: "symtab" (the object's own
// .symtab), "build-id:PATH" or "debuglink:PATH" (a separate debug file,
// PATH as seen from the root it was found in), "debuginfod",
// "minidebuginfo", "gopclntab", "dynsym" (only the exported symbols), or
// "plt" (only the NAME@plt entries of the PLT).
func (s *Symbols) Source() string { return s.source }

// Load returns symbols for obj, the object mapped at path (the path as the
// process sees it). It is [Loader.LoadContext] without a deadline other than
// the Debuginfod timeout.
func (l *Loader) Load(obj *File, path string) (*Symbols, error) {
	return l.LoadContext(context.Background(), obj, path)
}

// LoadContext returns symbols for obj, the object mapped at path. It uses
// the object's own .symtab when there is one. Otherwise it searches each
// root, in order, for a separate debug file, as GDB does:
// DEBUGDIR/.build-id/xx/rest.debug for each debug directory and
// /app/lib/debug; then the .gnu_debuglink name in dir(path),
// dir(path)/.debug and DEBUGDIR/dir(path), with the link's CRC32 checked.
// A debug file whose build-id differs from obj's is rejected. Failing that,
// it uses obj's MiniDebugInfo or Go line table, then asks Debuginfod by
// build-id, and finally settles for .dynsym. The names of a debug file are
// merged with obj's .dynsym and PLT. Debug files that cannot be read are
// skipped; an error (wrapping [ErrNoSymbols]) is returned only when no
// symbols were found at all. ctx bounds the Debuginfod request.
func (l *Loader) LoadContext(ctx context.Context, obj *File, path string) (*Symbols, error) {
	if obj.hasSection(elf.SHT_SYMTAB) {
		if t := l.known("symtab"); t != nil {
			return &Symbols{table: t, source: "symtab", lines: l.ownLineTable(obj, path), golines: obj.goLinesOrNil(), plt: obj.pltRanges()}, nil
		}
		if t, err := obj.Symbols(); err == nil && t.Len() > 0 {
			return &Symbols{table: t, source: "symtab", lines: l.ownLineTable(obj, path), golines: obj.goLinesOrNil(), plt: obj.pltRanges()}, nil
		}
	}
	if s := l.findDebugFile(obj, path); s != nil {
		return s, nil
	}
	own, ownErr := obj.Symbols()
	if ownErr == nil && (strings.Contains(obj.symsFrom, "minidebuginfo") || strings.Contains(obj.symsFrom, "gopclntab")) {
		src := "minidebuginfo"
		if strings.Contains(obj.symsFrom, "gopclntab") {
			src = "gopclntab"
		}
		return &Symbols{table: own, source: src, golines: obj.goLinesOrNil()}, nil
	}
	var dErr error
	if l.Debuginfod != nil && obj.BuildID() != nil {
		var p string
		p, dErr = l.Debuginfod.Fetch(ctx, obj.BuildID())
		if dErr == nil {
			if s, err := l.useDebugFile(obj, HostOpener, p, SourceDebuginfod, nil, l.known(SourceDebuginfod)); err == nil {
				return s, nil
			} else {
				dErr = err
			}
		}
	}
	if ownErr == nil {
		return &Symbols{table: own, source: obj.symsFrom}, nil
	}
	return nil, fmt.Errorf("%s: %w", path, errors.Join(ownErr, dErr))
}

// roots returns the roots to search.
func (l *Loader) roots() []Opener {
	if len(l.Roots) == 0 {
		return []Opener{HostOpener}
	}
	return l.Roots
}

// debugDirs returns the debug directories to search, Flatpak's last.
func (l *Loader) debugDirs() []string {
	dirs := l.DebugDirs
	if dirs == nil {
		dirs = []string{DefaultDebugDir}
	}
	if !slices.Contains(dirs, flatpakDebugDir) {
		dirs = append(slices.Clip(dirs), flatpakDebugDir)
	}
	return dirs
}

// findDebugFile searches the roots for a separate debug file of obj.
func (l *Loader) findDebugFile(obj *File, objPath string) *Symbols {
	id := obj.BuildID()
	name, crc, hasLink := obj.DebugLink()
	dirs := l.debugDirs()
	for _, open := range l.roots() {
		if id != nil {
			for _, d := range dirs {
				p := buildIDPath(d, id)
				if s, err := l.useDebugFile(obj, open, p, "build-id:"+p, nil, l.known("build-id:"+p)); err == nil {
					return s
				}
			}
		}
		if hasLink && path.IsAbs(objPath) {
			for _, p := range debugLinkPaths(objPath, name, dirs) {
				if s, err := l.useDebugFile(obj, open, p, "debuglink:"+p, &crc, l.known("debuglink:"+p)); err == nil {
					return s
				}
			}
		}
	}
	return nil
}

// OpenDebugFile searches the roots for a separate debug file of obj, the
// object mapped at objPath, as [Loader.LoadContext] does (build-id
// directories, then .gnu_debuglink with its CRC checked), and returns it
// open with the path it was found at. Unlike LoadContext it takes a debug
// file without a .symtab: the unwinder wants its .debug_frame. It never
// asks Debuginfod.
func (l *Loader) OpenDebugFile(obj *File, objPath string) (*os.File, string, error) {
	id := obj.BuildID()
	name, crc, hasLink := obj.DebugLink()
	dirs := l.debugDirs()
	var errs []error
	for _, open := range l.roots() {
		var paths []string
		if id != nil {
			for _, d := range dirs {
				paths = append(paths, buildIDPath(d, id))
			}
		}
		nID := len(paths)
		if hasLink && path.IsAbs(objPath) {
			paths = append(paths, debugLinkPaths(objPath, name, dirs)...)
		}
		for i, p := range paths {
			var check *uint32
			if i >= nID {
				check = &crc
			}
			osf, _, err := openDebugFile(obj, open, p, check)
			if err == nil {
				return osf, p, nil
			}
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil, "", fmt.Errorf("%s: no build-id and no debug link", objPath)
	}
	return nil, "", errors.Join(errs...)
}

// errMismatch rejects a debug file that belongs to another build.
var errMismatch = errors.New("debug file does not match the object")

// openDebugFile opens the debug file p through open and checks that it
// belongs to obj: a regular file, the same CRC32 when crc is not nil, the
// same build-id when both have one (and always without a CRC).
func openDebugFile(obj *File, open Opener, p string, crc *uint32) (_ *os.File, _ *File, err error) {
	osf, err := open(p)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			osf.Close()
		}
	}()
	if fi, err := osf.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: not a regular file", p)
	}
	if crc != nil {
		got, err := DebugLinkCRC(osf)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		if got != *crc {
			return nil, nil, fmt.Errorf("%s: CRC32 %#08x, want %#08x: %w", p, got, *crc, errMismatch)
		}
	}
	df, err := NewFile(osf)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p, err)
	}
	if obj.BuildID() != nil && df.BuildID() != nil && !bytes.Equal(obj.BuildID(), df.BuildID()) {
		return nil, nil, fmt.Errorf("%s: build-id %x, want %x: %w", p, df.BuildID(), obj.BuildID(), errMismatch)
	}
	if crc == nil && !bytes.Equal(obj.BuildID(), df.BuildID()) {
		return nil, nil, fmt.Errorf("%s: build-id %x, want %x: %w", p, df.BuildID(), obj.BuildID(), errMismatch)
	}
	return osf, df, nil
}

// SourceDebuginfod is the [Symbols.Source] of symbols from a debug file
// a debuginfod server served.
const SourceDebuginfod = "debuginfod"

// LoadDebugFile returns the symbols of obj from the debug file at p,
// opened through open (and only through it, its lines too), as
// [Loader.Load] returns those of a debug file it found: checked to carry
// obj's build-id, merged with obj's .dynsym and PLT, with source as
// [Symbols.Source]. known, when not nil, is that table as read before:
// only the file's lines are read. For a process that was handed a debug
// file another found (nsprof's symbol cache filler is handed those
// debuginfod served).
func LoadDebugFile(obj *File, open Opener, p, source string, known *Table) (*Symbols, error) {
	return (*Loader)(nil).useDebugFile(obj, open, p, source, nil, known)
}

// useDebugFile opens the debug file p through open and, if it matches obj
// (same build-id when both have one; same CRC32 when crc is not nil) and
// has a .symtab, returns its symbols merged with obj's .dynsym and PLT;
// known, when not nil, is that table as read before, and only the
// file's lines are read. The supplementary file its DWARF may link to is
// searched through open, then as l says (l may be nil).
func (l *Loader) useDebugFile(obj *File, open Opener, p, source string, crc *uint32, known *Table) (*Symbols, error) {
	osf, df, err := openDebugFile(obj, open, p, crc)
	if err != nil {
		return nil, err
	}
	defer osf.Close()
	if known != nil {
		return &Symbols{table: known, source: source, lines: l.debugLines(df, open, p), plt: obj.pltRanges()}, nil
	}
	es, err := df.symtab(elf.SHT_SYMTAB)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if dyn, err := obj.symtab(elf.SHT_DYNSYM); err == nil {
		es = append(es, dyn...)
	}
	// A debug file keeps no PLT contents (its .plt is NOBITS): the
	// object's own PLT names them.
	es = append(es, obj.pltSymbols(es)...)
	if len(es) == 0 {
		return nil, fmt.Errorf("%s: %w", p, ErrNoSymbols)
	}
	return &Symbols{table: buildTable(es, obj.bounds()), source: source, lines: l.debugLines(df, open, p), plt: obj.pltRanges()}, nil
}

// debugLines returns the line table of the debug file df, opened at p
// through open; nil when it has no DWARF.
func (l *Loader) debugLines(df *File, open Opener, p string) *lineTable {
	if !df.hasDebugInfo() {
		return nil
	}
	t := newLineTable(func() (*os.File, error) { return open(p) }, df.BuildID())
	t.findAlt = l.altFinder(open, p)
	t.findDWO, t.findDWP = l.dwoFinder(open, p), l.dwpFinder(open, p)
	return t
}
