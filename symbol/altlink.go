package symbol

import (
	"bytes"
	"context"
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"runtime"
	"sync"
	"weak"
)

// maxAltLinkSize bounds .gnu_debugaltlink and .debug_sup: a path and a
// build-id.
const maxAltLinkSize = 4096

// altLink names the supplementary file of a DWARF file: the DWARF that
// dwz -m moved out of several debug files into one they share (Debian's,
// Ubuntu's and Fedora's debug packages, and what their debuginfod
// servers serve, are made so). Their DIEs then refer into it for the
// functions inlined calls are of (DW_FORM_GNU_ref_alt, DWARF 5's
// DW_FORM_ref_sup4) and for names (DW_FORM_GNU_strp_alt,
// DW_FORM_strp_sup).
type altLink struct {
	// name is the file's path as the link gives it: absolute, or
	// relative to the directory of the file that links to it.
	name string
	// buildID is the supplementary file's build-id; nil when the link
	// gives none.
	buildID []byte
}

// altLink returns f's link to its supplementary file, from
// .gnu_debugaltlink or else DWARF 5's .debug_sup; ok is false when f has
// neither or they are malformed.
func (f *File) altLink() (l altLink, ok bool) {
	if b, err := f.section(".gnu_debugaltlink", maxAltLinkSize); err == nil && b != nil {
		return parseGNUAltLink(b)
	}
	if b, err := f.section(".debug_sup", maxAltLinkSize); err == nil && b != nil {
		if l, sup, ok := parseDebugSup(b, f.elf.ByteOrder); ok && !sup {
			return l, true
		}
	}
	return altLink{}, false
}

// altID returns what identifies f as a supplementary file: its build-id,
// else the checksum its own .debug_sup gives (dwz -5 writes no build-id
// note into the file it makes); nil when it has neither.
func (f *File) altID() []byte {
	if id := f.BuildID(); id != nil {
		return id
	}
	if b, err := f.section(".debug_sup", maxAltLinkSize); err == nil && b != nil {
		if l, sup, ok := parseDebugSup(b, f.elf.ByteOrder); ok && sup {
			return l.buildID
		}
	}
	return nil
}

// parseGNUAltLink parses .gnu_debugaltlink: the supplementary file's
// path, NUL-terminated, then its build-id.
func parseGNUAltLink(b []byte) (altLink, bool) {
	i := bytes.IndexByte(b, 0)
	if i <= 0 {
		return altLink{}, false
	}
	l := altLink{name: string(b[:i])}
	if id := b[i+1:]; len(id) > 0 {
		l.buildID = bytes.Clone(id)
	}
	return l, true
}

// parseDebugSup parses DWARF 5's .debug_sup: a version (2 bytes, 5),
// whether the file is itself supplementary (1 byte), the supplementary
// file's path NUL-terminated (empty in that file itself), and its
// checksum (a ULEB128 length, then the bytes), which dwz makes a build-id.
func parseDebugSup(b []byte, order binary.ByteOrder) (l altLink, sup, ok bool) {
	if len(b) < 4 || order.Uint16(b) != 5 || b[2] > 1 {
		return altLink{}, false, false
	}
	sup = b[2] == 1
	b = b[3:]
	i := bytes.IndexByte(b, 0)
	if i < 0 || i == 0 && !sup {
		return altLink{}, false, false
	}
	l.name = string(b[:i])
	n, k := binary.Uvarint(b[i+1:])
	if k <= 0 || n > uint64(len(b)-i-1-k) {
		return altLink{}, false, false
	}
	if n > 0 {
		l.buildID = bytes.Clone(b[i+1+k : i+1+k+int(n)])
	}
	return l, sup, true
}

// altDWARF is a supplementary file's DWARF and its .debug_str, which
// the alternate string forms index.
type altDWARF struct {
	d   *dwarf.Data
	str []byte
}

// string returns the NUL-terminated string at off of the .debug_str; ""
// when off lies outside it.
func (a *altDWARF) string(off uint64) string {
	if off >= uint64(len(a.str)) {
		return ""
	}
	s := a.str[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		return string(s[:i])
	}
	return ""
}

// readAltDWARF reads the DWARF of f, a supplementary file.
func (f *File) readAltDWARF() (a *altDWARF, err error) {
	defer recoverTo(&err, "read supplementary DWARF")
	d, err := f.dwarf()
	if err != nil {
		return nil, err
	}
	str, err := f.section(".debug_str", maxDWARFSize)
	if err != nil {
		return nil, err
	}
	return &altDWARF{d: d, str: str}, nil
}

// altFinder returns how the line table of the DWARF file at p, opened
// through open, finds its supplementary file, as GDB does: at the path
// the link gives (relative to p's directory when not absolute) through
// open, then by the link's build-id in the debug directories of open
// and of l's roots, then from l's Debuginfod. Only a file with the
// link's build-id is taken (a link without one takes the file at its
// path). l may be nil: open alone is searched.
func (l *Loader) altFinder(open Opener, p string) func(altLink) (*File, error) {
	return func(link altLink) (*File, error) {
		name := link.name
		if !path.IsAbs(name) {
			name = path.Join(path.Dir(p), name)
		}
		f, err := openFirst([]Opener{open}, []string{name}, link.buildID)
		if err == nil {
			return f, nil
		}
		if link.buildID == nil {
			return nil, fmt.Errorf("supplementary DWARF %s: %w", link.name, err)
		}
		errs := []error{err}
		dirs := []string{DefaultDebugDir}
		if l != nil {
			dirs = l.debugDirs()
		}
		var idPaths []string
		for _, d := range dirs {
			idPaths = append(idPaths, buildIDPath(d, link.buildID))
		}
		if f, err = openFirst(l.searchRoots(open), idPaths, link.buildID); err == nil {
			return f, nil
		}
		errs = append(errs, err)
		if l != nil && l.Debuginfod != nil {
			q, err := l.Debuginfod.Fetch(context.Background(), link.buildID)
			if err == nil {
				f, err = openChecked(HostOpener, q, link.buildID)
			}
			if err == nil {
				return f, nil
			}
			errs = append(errs, err)
		}
		return nil, fmt.Errorf("supplementary DWARF %s (build-id %x): %w", link.name, link.buildID, errors.Join(errs...))
	}
}

// searchRoots returns open, then l's roots; open alone when l is nil.
func (l *Loader) searchRoots(open Opener) []Opener {
	if l == nil {
		return []Opener{open}
	}
	return append([]Opener{open}, l.roots()...)
}

// openFirst opens the first of paths that one of roots has (each root
// tried for every path before the next root), checked as [openChecked]
// checks it for id.
func openFirst(roots []Opener, paths []string, id []byte) (*File, error) {
	var errs []error
	for _, root := range roots {
		for _, q := range paths {
			f, err := openChecked(root, q, id)
			if err == nil {
				return f, nil
			}
			errs = append(errs, err)
		}
	}
	return nil, errors.Join(errs...)
}

// openChecked opens the file q (a supplementary file, a .dwo) through
// open, checking that it is a regular ELF file identified by id (when id
// is not nil; see [File.altID]).
func openChecked(open Opener, q string, id []byte) (*File, error) {
	osf, err := open(q)
	if err != nil {
		return nil, err
	}
	if fi, err := osf.Stat(); err != nil || !fi.Mode().IsRegular() {
		osf.Close()
		return nil, fmt.Errorf("%s: not a regular file", q)
	}
	f, err := NewFile(osf)
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	f.closer = osf
	if id != nil && !bytes.Equal(f.altID(), id) {
		f.Close()
		return nil, fmt.Errorf("%s: build-id %x, want %x: %w", q, f.altID(), id, errMismatch)
	}
	return f, nil
}

// altData returns the supplementary file's DWARF of the file t reads,
// found and read on first use; nil when the file links to none, or it
// cannot be found or read. Names that only it gives are then missing,
// and t counts as unread ([Symbols.LinesUnread]): what it answers is no
// truth to keep.
func (t *lineTable) altData() *altDWARF {
	t.altOnce.Do(func() {
		f, err := t.openFile()
		if err != nil {
			t.unread.Store(true)
			return
		}
		link, ok := f.altLink()
		f.Close()
		if !ok {
			return
		}
		if t.findAlt == nil {
			t.unread.Store(true)
			return
		}
		if link.buildID != nil {
			if t.alt = sharedAlt(link.buildID); t.alt != nil {
				return
			}
		}
		af, err := t.findAlt(link)
		if err != nil {
			t.unread.Store(true)
			return
		}
		defer af.Close()
		if t.alt, err = af.readAltDWARF(); err != nil {
			t.unread.Store(true)
			return
		}
		if link.buildID != nil {
			shareAlt(link.buildID, t.alt)
		}
	})
	return t.alt
}

// altShared holds the supplementary files read, by the build-id their
// links gave (and which was checked), for as long as a line table keeps
// one: the debug files of one package's libraries share one, which a
// recording would otherwise read (and hold) once for each of them.
var altShared sync.Map // string(build-id) -> weak.Pointer[altDWARF]

// sharedAlt returns the supplementary file of build-id id read before
// and still held; nil if none.
func sharedAlt(id []byte) *altDWARF {
	if w, ok := altShared.Load(string(id)); ok {
		return w.(weak.Pointer[altDWARF]).Value()
	}
	return nil
}

// shareAlt keeps a, the supplementary file of build-id id, for
// [sharedAlt] while something else holds it.
func shareAlt(id []byte, a *altDWARF) {
	key := string(id)
	altShared.Store(key, weak.Make(a))
	runtime.AddCleanup(a, func(key string) {
		if w, ok := altShared.Load(key); ok && w.(weak.Pointer[altDWARF]).Value() == nil {
			altShared.CompareAndDelete(key, w)
		}
	}, key)
}

// LinksOtherFiles reports whether the DWARF s reads source frames from
// refers to other files: a supplementary file (dwz -m's), in which the
// functions of inlined calls may be named, or .dwo files (split DWARF)
// that the frames read so far went through. A reader that can open no
// other file than that DWARF's (the symbol cache's filler) would leave
// them out.
func (s *Symbols) LinksOtherFiles() bool {
	if s == nil || s.lines == nil {
		return false
	}
	if s.lines.sawSplit.Load() {
		return true
	}
	f, err := s.lines.openFile()
	if err != nil {
		return false
	}
	defer f.Close()
	_, ok := f.altLink()
	return ok
}
