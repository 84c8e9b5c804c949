package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/klauspost/compress/gzip"

	"nsprof/capture"
	"nsprof/symbol"
	"nsprof/symcache"
)

// kernelSymbols is /proc/kallsyms as read at the end of a capture: its
// index names the sampled kernel addresses in the symbol bundle, and the
// addresses it named choose the lines of it the capture embeds (see
// [recorder.embedKallsyms]).
type kernelSymbols struct {
	text []byte
	k    *symbol.Kallsyms // nil when text could not be indexed (err says why)
	err  error
	// named holds the addresses looked up, with repeats.
	named []uint64
	// stable, when set, says the text came from the symbol cache: it
	// names the addresses stable covers as /proc/kallsyms would; another
	// address has it read again (see kernelCache).
	stable *kernelLayout
	// refresh reads /proc/kallsyms again.
	refresh func(*kernelSymbols)
	// mapped, when set, is the symbol cache's blob text and k are in:
	// unmapped by close.
	mapped *symcache.Mapped
}

// close lets go of the mapped text, when the text is that: ks's text and
// index must not be used after.
func (ks *kernelSymbols) close() {
	if ks.mapped != nil {
		ks.mapped.Close()
		ks.text, ks.k, ks.mapped = nil, nil, nil
	}
}

// LookupSorted implements kernelTable, noting addrs for the excerpt: the
// pages of a mapped text are let go as the walk goes.
func (ks *kernelSymbols) LookupSorted(addrs []uint64) ([]symbol.Symbol, []bool) {
	ks.named = append(ks.named, addrs...)
	for _, a := range addrs {
		ks.cover(a)
	}
	return ks.k.LookupSorted(addrs, ks.drop())
}

// drop returns what lets go of the pages of the mapped text that a walk
// through it touched; nil when the text is not mapped.
func (ks *kernelSymbols) drop() func() {
	if ks.mapped == nil {
		return nil
	}
	m := ks.mapped
	return func() { evictMapped(m) }
}

// evictMapped lets the pages of a mapped kallsyms blob go: a variable so
// that the tests of its residency can see what is resident just before
// each time they go.
var evictMapped = (*symcache.Mapped).Evict

// cover reads /proc/kallsyms again when the text came from the cache
// and addr lies outside what it names for sure.
func (ks *kernelSymbols) cover(addr uint64) {
	if ks.stable != nil && !ks.stable.holds(addr) {
		ks.stable = nil
		ks.refresh(ks)
	}
}

// kernelSymbols reads and indexes /proc/kallsyms once per capture: when
// the bundle first names a kernel address, after the sampled files' DWARF
// was let go, so that its text (5 MB and more) and index are not held at
// the recorder's peak; or when the capture embeds it.
func (r *recorder) kernelSymbols() *kernelSymbols {
	if r.kern != nil {
		return r.kern
	}
	var cache *symcache.Cache
	if r.sym != nil {
		cache = r.sym.cache // open while the bundle is made
	}
	kc := r.kernelCache(cache)
	ks := &kernelSymbols{refresh: func(ks *kernelSymbols) { r.readKallsyms(ks, kc) }}
	r.kern = ks
	if kc != nil {
		if c := kc.get(); c != nil {
			ks.text, ks.k, ks.stable, ks.mapped = c.text, c.k, c.stable, c.mapped
			return ks
		}
	}
	r.readKallsyms(ks, kc)
	return ks
}

// readKallsyms reads and indexes /proc/kallsyms into ks, and keeps it in
// the symbol cache for the next recordings of this boot.
func (r *recorder) readKallsyms(ks *kernelSymbols, kc *kernelCache) {
	path := r.opts.FS.Root + "/kallsyms"
	text, err := readProcFile(path)
	if err != nil {
		if ks.k == nil {
			ks.err = err
		}
		return
	}
	k, err := symbol.NewKallsyms(text)
	switch {
	case err != nil && ks.k != nil:
		return // read again for an address the cached text may not name: keep that one
	case errors.Is(err, symbol.ErrRestrictedKernel):
		r.logf("/proc/kallsyms shows zero addresses (kptr_restrict): kernel frames will not be named")
	case err != nil:
		err = fmt.Errorf("%s: %w", path, err)
	}
	ks.text, ks.k, ks.err = text, k, err
	if err == nil && kc != nil {
		if err := kc.put(text, k); err != nil {
			r.logf("kernel symbols not cached: %v", err)
		}
	}
}

// kernelTable returns the index that names the sampled kernel addresses:
// the one reports read the embedded kallsyms with, so a kernel address
// gets the same name from the bundle and from the kallsyms.
func (r *recorder) kernelTable() (kernelTable, error) {
	ks := r.kernelSymbols()
	if ks.k == nil {
		return nil, ks.err // not a typed nil in the interface
	}
	return ks, nil
}

// embedKallsyms stores /proc/kallsyms, compressed as Sysprof 45+ stores it,
// for naming kernel frames on another machine. With excerpt, the bundle
// has named the kernel addresses of the processes sampled: only the lines
// of the symbols that hold those and the idle task's addresses are stored,
// each with the next symbol's line, where it ends (see
// [symbol.Kallsyms.Excerpt]): a few hundred lines where the whole text is
// 5 MB (1 MB compressed, a fifth of a 2 s system capture, and 20 ms of
// compression at the end of every recording), naming each of those
// addresses as the whole text does, for nsprof's reports and for
// Sysprof's. Nothing is read or stored when no kernel address was
// sampled. Without excerpt (no bundle: --no-decode), the whole text is
// stored, for the reports to name the frames from.
func (r *recorder) embedKallsyms(excerpt bool) {
	text := r.kallsymsText(excerpt)
	if text == nil {
		return
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	zw.Write(text)
	zw.Close()
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	if err := r.w.AddFileBytes(h, capture.KallsymsFile+".gz", gz.Bytes()); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
}

// kallsymsText returns the kallsyms text embedKallsyms stores: the
// excerpt of the addresses named, or the whole text; nil for none.
func (r *recorder) kallsymsText(excerpt bool) []byte {
	var idle []uint64
	if r.sym != nil {
		idle = r.sym.idleKernelAddrs()
	}
	if excerpt && r.kern == nil && len(idle) == 0 {
		return nil
	}
	ks := r.kernelSymbols()
	if ks.text == nil {
		r.logf("kernel symbols not recorded: %v", ks.err)
		return nil
	}
	if !excerpt || ks.k == nil {
		return ks.text
	}
	// The symbol cache was closed with the bundle: a text read again
	// now is not kept.
	ks.refresh = func(ks *kernelSymbols) { r.readKallsyms(ks, nil) }
	for _, a := range idle {
		ks.cover(a)
	}
	return ks.k.ExcerptDropping(append(ks.named, idle...), ks.drop())
}

// readProcFile reads a file whose size stat does not tell, such as
// /proc/kallsyms (5 MB and more): into a buffer of procFileGuess bytes,
// doubled when it is full. os.ReadFile grows its buffer from 512 bytes as
// the data comes, and the copies it left raised the recorder's peak by
// 6 MB at the end of a recording.
func readProcFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 0, procFileGuess)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// procFileGuess is the buffer readProcFile starts with: a distribution
// kernel's /proc/kallsyms fits (5.4 MB for Debian 12's 6.x, 120 k lines).
const procFileGuess = 6 << 20
