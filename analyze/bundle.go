package analyze

import (
	"fmt"

	"nsprof/capture"
)

// bundleFiles are the decoded symbol bundle and lines file of a capture,
// with the warnings about them.
type bundleFiles struct {
	table    *capture.SymbolTable
	lines    *capture.LineTable
	warnings []string
	// procs, threads and procErr are what capture.ReadProcessFile
	// returned, when procsRead says the process file was read here.
	procs     []capture.ProcessInfo
	threads   []capture.ThreadInfo
	procErr   error
	procsRead bool
}

// decodeBundle decodes the [capture.SymbolsFile] and [capture.LinesFile]
// fs holds (either gzipped), the lines file refused beyond maxLines
// records (see [capture.DecodeLinesMax]). Damage keeps the records before
// it, with a warning.
func decodeBundle(fs *capture.Files, maxLines int) *bundleFiles {
	d := &bundleFiles{}
	d.decodeSymbols(fs)
	d.decodeLines(fs, maxLines)
	return d
}

// hasFile reports whether fs holds path, either gzipped.
func hasFile(fs *capture.Files, path string) bool { return fs.Has(path) || fs.Has(path+".gz") }

// decodeSymbols decodes the [capture.SymbolsFile] of fs, when there is one.
func (d *bundleFiles) decodeSymbols(fs *capture.Files) {
	if data, err := fs.Lookup(capture.SymbolsFile); err == nil {
		t, err := capture.DecodeSymbols(data)
		if err != nil {
			d.warnings = append(d.warnings, fmt.Sprintf("%s: %v (using the %d records before the damage)", capture.SymbolsFile, err, t.Len()))
		}
		if t.Len() > 0 {
			d.table = t
		}
	} else if hasFile(fs, capture.SymbolsFile) {
		d.warnings = append(d.warnings, err.Error())
	}
}

// decodeLines decodes the [capture.LinesFile] of fs, when there is one.
func (d *bundleFiles) decodeLines(fs *capture.Files, maxLines int) {
	if hasFile(fs, capture.LinesFile) {
		var t *capture.LineTable
		data, err := fs.Lookup(capture.LinesFile + ".gz") // as stored
		if !fs.Has(capture.LinesFile) && err == nil {
			// Parsed as it is inflated: the text is as large as the table.
			t, err = capture.DecodeLinesGzip(capture.LinesFile+".gz", data, maxLines)
		} else {
			data, err = fs.Lookup(capture.LinesFile)
			if err == nil {
				t, err = capture.DecodeLinesMax(data, maxLines)
			}
		}
		if err != nil && t.Len() > 0 {
			d.warnings = append(d.warnings, fmt.Sprintf("%v (using the %d addresses before the damage)", err, t.Len()))
		} else if err != nil {
			d.warnings = append(d.warnings, err.Error())
		}
		if t.Len() > 0 {
			d.lines = t
		}
	}
}

// bundlePaths are the stored names of the files decodeBundle reads, and
// the process file, which startBundle's goroutine reads too.
var bundlePaths = []string{capture.SymbolsFile, capture.SymbolsFile + ".gz", capture.LinesFile, capture.LinesFile + ".gz", capture.ProcessFile, capture.ProcessFile + ".gz"}

// isBundlePath reports whether a FILE_CHUNK of path is one of bundlePaths.
func isBundlePath(path string) bool {
	for _, p := range bundlePaths {
		if path == p {
			return true
		}
	}
	return false
}

// earlyBundle decodes a capture's bundle on goroutines of their own while
// the frames before it are read: the bundle is written last, but a
// capture held in memory can be looked ahead in. The symbols and the
// process file are waited for apart from the lines (see
// [earlyBundle.waitLines]).
type earlyBundle struct {
	done chan struct{}
	d    *bundleFiles
	// lines is closed once linesOf holds the decoded lines file.
	lines   chan struct{}
	linesOf *bundleFiles
}

// startBundle copies the bundle files of fs, views of a capture held in
// memory (which only the calling goroutine may read: see
// [capture.ReadMapped]), and decodes the copies on new goroutines.
func startBundle(fs *capture.Files, maxLines int) *earlyBundle {
	own := &capture.Files{}
	for _, p := range bundlePaths {
		if b, ok, err := fs.ReadOwned(p); ok && err == nil {
			own.AddView(&capture.FileChunk{Path: p, Data: b, IsLast: true})
		}
	}
	e := &earlyBundle{done: make(chan struct{}), lines: make(chan struct{})}
	// The lines on a goroutine of their own: on a small capture, their
	// decoding was the longest of the work done while frames are read,
	// and loading goes on without them up to the frames' merge.
	go func() {
		defer close(e.lines)
		e.linesOf = &bundleFiles{}
		e.linesOf.decodeLines(own, maxLines)
	}()
	go func() {
		defer close(e.done)
		e.d = &bundleFiles{}
		e.d.decodeSymbols(own)
		// The process file too (a JSON line per process and thread:
		// 0.06 s for the 460 processes of a 60 s system capture),
		// while the frames are read.
		if own.Has(capture.ProcessFile) || own.Has(capture.ProcessFile+".gz") {
			e.d.procs, e.d.threads, e.d.procErr = capture.ReadProcessFile(own)
			e.d.procsRead = true
		}
	}()
	return e
}

// wait returns the symbols and the process file, decoded; the lines are
// waited for by waitLines.
func (e *earlyBundle) wait() *bundleFiles {
	<-e.done
	return e.d
}

// waitLines returns the decoded lines file, with its warnings.
func (e *earlyBundle) waitLines() *bundleFiles {
	<-e.lines
	return e.linesOf
}
