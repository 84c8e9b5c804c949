package analyze

import (
	"encoding/hex"
	"sync"
	"syscall"

	"nsprof/capture"
	"nsprof/symbol"
)

// HostSymbolizer names user addresses from the files at the paths the
// capture's MAP frames name, as they are on this machine now: the fallback
// for captures without a symbol bundle (nsprof record --no-decode, or
// other tools' captures). A file is used only if it is the mapped one: same
// build-id when the MAP frame records one, else same inode; with neither it
// is not used, since a different file may sit at the same path (a
// container's binary, another version). Lines come from DWARF when the
// file or its debug file has it. It is safe for concurrent use.
type HostSymbolizer struct {
	p      *Profile
	loader symbol.Loader

	mu    sync.Mutex
	files map[hostKey]*hostFile
}

type hostKey struct{ path, buildID string }

type hostFile struct {
	elf  *symbol.File
	syms *symbol.Symbols
}

// NewHostSymbolizer returns a symbolizer over p's mappings that loads
// symbols with l (its zero value searches the host's /usr/lib/debug).
func NewHostSymbolizer(p *Profile, l symbol.Loader) *HostSymbolizer {
	return &HostSymbolizer{p: p, loader: l, files: make(map[hostKey]*hostFile)}
}

// Symbolize implements [Symbolizer].
func (h *HostSymbolizer) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	if kernel || h == nil || h.p == nil {
		return Location{}, false
	}
	m := h.p.Mapping(pid, addr)
	if m == nil || len(m.File) == 0 || m.File[0] != '/' {
		return Location{}, false
	}
	f := h.file(m)
	if f == nil {
		return Location{}, false
	}
	va, ok := f.elf.Vaddr(addr - m.Start + m.Offset)
	if !ok {
		return Location{}, false
	}
	s, ok := f.syms.Lookup(va)
	if !ok {
		return Location{}, false
	}
	loc := Location{Function: symbol.Demangle(s.Name), DSO: m.Base()}
	if fr := f.syms.Frames(va); len(fr) > 0 {
		src := make([]capture.SourceFrame, len(fr))
		for i, x := range fr {
			src[i] = capture.SourceFrame{Function: x.Function, File: x.File, Line: x.Line}
		}
		loc.withFrames(src)
	}
	return loc, true
}

// prepare reads at once the DWARF units that the addresses of qs need
// for their inline frames and lines, file by file: asked one address at
// a time, a file's compressed .debug_info was inflated again for units
// found later.
func (h *HostSymbolizer) prepare(qs []query) {
	if h == nil || h.p == nil {
		return
	}
	vaddrs := make(map[*hostFile][]uint64)
	var files []*hostFile
	for _, q := range qs {
		if q.kernel {
			continue
		}
		m := h.p.Mapping(q.pid, q.addr)
		if m == nil || len(m.File) == 0 || m.File[0] != '/' {
			continue
		}
		f := h.file(m)
		if f == nil {
			continue
		}
		if va, ok := f.elf.Vaddr(q.addr - m.Start + m.Offset); ok {
			if _, seen := vaddrs[f]; !seen {
				files = append(files, f)
			}
			vaddrs[f] = append(vaddrs[f], va)
		}
	}
	for _, f := range files {
		f.syms.PrepareFrames(vaddrs[f])
	}
}

// String returns "host".
func (h *HostSymbolizer) String() string { return "host" }

// file returns the loaded symbols of m's file, nil if it cannot be used.
func (h *HostSymbolizer) file(m *Mapping) *hostFile {
	k := hostKey{m.File, m.BuildID}
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.files[k]; ok {
		return f
	}
	f := h.load(m)
	h.files[k] = f
	return f
}

func (h *HostSymbolizer) load(m *Mapping) *hostFile {
	if m.BuildID == "" && m.Inode == 0 {
		return nil
	}
	// Without waiting on a FIFO at a path the capture names.
	osf, err := symbol.OpenRegular(m.File)
	if err != nil {
		return nil
	}
	st, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil
	}
	e, err := symbol.NewFile(osf)
	if err != nil {
		osf.Close()
		return nil
	}
	if m.BuildID != "" {
		// A GNU build-id, or for a Go binary without one its Go
		// build-id, as nsprof record writes them.
		if hex.EncodeToString(e.BuildID()) != m.BuildID && (e.BuildID() != nil || hex.EncodeToString(e.GoBuildID()) != m.BuildID) {
			osf.Close()
			return nil
		}
	} else if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Ino != m.Inode {
		osf.Close()
		return nil
	}
	syms, err := h.loader.Load(e, m.File)
	if err != nil {
		osf.Close()
		return nil
	}
	// osf stays open: symbols and lines are read from it lazily.
	return &hostFile{elf: e, syms: syms}
}
