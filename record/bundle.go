package record

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/klauspost/compress/gzip"

	"nsprof/capture"
	"nsprof/symbol"
	"nsprof/symcache"
)

// writeSymbols resolves the sampled addresses and embeds the names as
// Sysprof's __symbols__ file. It is written uncompressed: Sysprof 3.46
// reads only that, and 45+ finds either form. Source lines and inline
// frames, where the files have DWARF, follow as capture.LinesFile,
// gzipped.
func (r *recorder) writeSymbols() {
	start := time.Now()
	defer lowerGCPercent(bundleGCPercent)()
	var prog progress
	if r.status != nil {
		defer r.status.clear()
		prog = func(done, total int, name string) {
			r.status.text(fmt.Sprintf("symbolizing %d/%d %s", done, total, name))
		}
	}
	if r.opts.SymbolCache != "" {
		c, err := symcache.Open(r.opts.SymbolCache, symcache.Options{MaxBytes: r.opts.SymbolCacheMaxBytes})
		if err != nil {
			r.logf("symbols not cached: %v", err)
		} else {
			r.sym.cache = c
			defer func() {
				if n, err := c.Trim(); err != nil {
					r.logf("symbols cached, but the cache not trimmed: %v", err)
				} else if n > 0 {
					r.notef("symbol cache %s: %d least recently used entries removed to keep it under its size bound", c.Dir(), n)
				}
				c.Close()
				r.sym.cache = nil
			}()
		}
	}
	// The records are written as the bundle gives them, 32 bytes each
	// with each name once (as capture.Symbol values, 56 bytes each
	// holding its strings, a 60 s recording over a compile loop
	// allocated 97 MB as their slice grew).
	var syms capture.SymbolsBuilder
	// In a temporary file, unlinked at once: about 150 records a process
	// over a compile loop (195,711 for 1,299 processes in 40 s, 6.3 MB),
	// so some 75 MB for the 15,700 processes of a 10-minute recording;
	// in memory where no file can be made.
	if f, err := os.CreateTemp("", "nsprof-symbols-*"); err == nil {
		os.Remove(f.Name())
		defer f.Close()
		syms.KeepIn(f)
	}
	lines := r.sym.bundle(func(s capture.Symbol) { syms.Add(s) }, r.kernelTable, r.tr.nsPID, prog, r.notef)
	n := syms.Len()
	b, err := syms.Reader()
	if err != nil {
		r.logf("symbols not bundled: %v", err)
		return
	}
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	if err := r.w.AddMetadata(h.Time, capture.MetaSymbolsComplete, "1"); err != nil {
		if r.writeErr == nil {
			r.writeErr = err
		}
		return
	}
	if err := r.w.AddSymbolsReader(h, b); err != nil {
		if r.writeErr == nil {
			r.writeErr = err
		}
		return
	}
	r.symbolized = n
	if len(lines) > 0 {
		if err := r.w.AddFileGzipLevel(h, capture.LinesFile, capture.EncodeLines(lines), gzip.BestSpeed); err != nil {
			if r.writeErr == nil {
				r.writeErr = err
			}
			return
		}
	}
	r.notef("bundled %d symbols and %d source lines in %.1fs (files: %s)", n, len(lines), time.Since(start).Seconds(), r.sym.summary())
}

// bundleGCPercent is the GC percent while the symbol bundle is made. Its
// live heap is mostly the DWARF of the files being read, let go file by
// file, and the heap grows to twice the live heap under the default 100:
// that made the recorder's peak RSS at the end. With 50, a busy 10 s
// recording at 4 kHz peaked at 54-58 MB against 64-70 MB (the two run side
// by side, 4 times), for as much CPU within the noise.
const bundleGCPercent = 50

// lowerGCPercent sets the GC percent to p unless it is lower already (or
// off), and returns the function that restores it.
func lowerGCPercent(p int) func() {
	old := debug.SetGCPercent(p)
	if old <= p { // lower already, or off (-1)
		debug.SetGCPercent(old)
	}
	return func() { debug.SetGCPercent(old) }
}

// kernelTable indexes the /proc/kallsyms the recording embedded, with the
// index reports read the embedded copy with, so a kernel address gets the
// same name from the bundle and from the kallsyms. The text is inflated
// from the embedded copy here, once the sampled files' DWARF is let go.
func (r *recorder) kernelTable() (kernelTable, error) {
	if r.kallsymsGz == nil {
		return nil, errors.New("/proc/kallsyms was not recorded")
	}
	if r.kern != nil {
		return r.kern, nil
	}
	data, err := inflate(r.kallsymsGz, r.kallsymsLen)
	if err != nil {
		return nil, fmt.Errorf("embedded /proc/kallsyms: %w", err)
	}
	k, err := symbol.NewKallsyms(data)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	if r.split != nil {
		r.kern = k // one index for every capture
	}
	return k, nil
}

// inflate gunzips gz into a buffer of n bytes, the text's length.
func inflate(gz []byte, n int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	b := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	if _, err := b.ReadFrom(zr); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
