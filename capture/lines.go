package capture

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"nsprof/internal/procfmt"
)

// LinesFile is the embedded file in which nsprof record stores, for each
// sampled user address, its source file and line and the functions
// inlined there, read from DWARF while the mapped files were reachable.
// Sysprof's __symbols__ bundle holds one function name per address
// range; this file adds what it cannot. The recorder writes it gzipped,
// as LinesFile + ".gz". Other readers ignore it.
const LinesFile = "__nsprof_lines__"

// linesMagic is the first line of a LinesFile as [EncodeLines] writes
// it when a record is about a file (see [AddrLines.Object]);
// linesMagicV2 that of one whose records are all about processes, as
// every file was before version 3 (and older readers still read it);
// linesMagicV1 that of files written before records could refer to an
// earlier record's frames. All three are read.
const (
	linesMagic   = "nsprof-lines 3"
	linesMagicV2 = "nsprof-lines 2"
	linesMagicV1 = "nsprof-lines 1"
)

// linesVersion returns the version of a LinesFile whose header is line,
// or 0 when it is none.
func linesVersion(line []byte) int {
	switch string(line) {
	case linesMagic:
		return 3
	case linesMagicV2:
		return 2
	case linesMagicV1:
		return 1
	}
	return 0
}

// isLinesMagic reports whether line is the header of a LinesFile of
// any version.
func isLinesMagic(line []byte) bool { return linesVersion(line) != 0 }

// maxSourceFrames bounds the inline chain of one address.
const maxSourceFrames = 256

// maxObjectID bounds the build-id of a record about a file, in hex
// digits: GNU build-ids are 40, Go's (which the recorder falls back to)
// some 170.
const maxObjectID = 512

// SourceFrame is one source-level frame: a function and the file and line
// reached in it.
type SourceFrame struct {
	Function string
	File     string
	Line     int
}

// AddrLines is the source view of one sampled address of one process, or
// of one offset of one file.
type AddrLines struct {
	PID int32
	// Object, when set, is the lowercase hex build-id of a mapped file,
	// as the MAP frames of the processes mapping it carry it: Addr is
	// then an offset in the file and PID is unused. One such record
	// serves every process that maps the file, at whatever address: a
	// system-wide recording of a build, whose hundreds of processes run
	// the same compilers, describes each of their addresses once rather
	// than once per process.
	Object string
	Addr   uint64
	// Frames are innermost first: the functions inlined at Addr, then
	// the function the code is in, each with its file and line. A frame
	// may lack a name (DWARF without one) or a line.
	Frames []SourceFrame
}

// EncodeLines returns the contents of a LinesFile: a header line, then a
// line per address: pid, address in hex, and a function, file and line
// per frame, tab-separated; a record about a file has "@" and its
// build-id in place of the pid, and a file offset as address. Tabs and
// newlines in names become spaces. A file without such records has
// version 2's header, which older readers read.
//
// A record whose Frames is the very slice (same first element and length)
// of an earlier record's is written as pid, address and "^N", N counting
// records back to the one that spells the frames out: the recorder gives
// every process mapping a file the same frames for the same address, and
// a system-wide recording of short-lived processes running the same
// binaries would otherwise write each chain once per process.
func EncodeLines(recs []AddrLines) []byte {
	var b bytes.Buffer
	writeLines(&b, recs)
	return b.Bytes()
}

// linesWriter is what writeLines writes to: a bytes.Buffer, or a
// bufio.Writer in front of a compressor.
type linesWriter interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}

// writeLines writes the contents of a LinesFile of recs (see
// EncodeLines) to b; what it returns is b's first error (those of a
// bytes.Buffer are none).
func writeLines(b linesWriter, recs []AddrLines) error {
	head := linesMagicV2
	for i := range recs {
		if recs[i].Object != "" {
			head = linesMagic
			break
		}
	}
	b.WriteString(head + "\n")
	type chain struct {
		first *SourceFrame
		n     int
	}
	// The record number spelling each chain out, sized for all at once:
	// grown record by record, it cost 2-4 ms more of the 30 that a 10 s
	// recording's 31.7 k records took.
	written := make(map[chain]int, len(recs))
	n := 0
	// Records come by object: its build-id lowered once for those in a
	// row.
	var obj, lowObj string
	// Numbers are formatted into num, not into strings of their own: a
	// string for each address and line was two allocations a record.
	var num [24]byte
	writeInt := func(v int64, base int) { b.Write(strconv.AppendInt(num[:0], v, base)) }
	for _, r := range recs {
		if len(r.Frames) == 0 {
			continue
		}
		if r.Object != "" {
			if r.Object != obj || lowObj == "" {
				obj, lowObj = r.Object, strings.ToLower(r.Object)
			}
			b.WriteByte('@')
			b.WriteString(lowObj)
		} else {
			writeInt(int64(r.PID), 10)
		}
		b.WriteByte('\t')
		b.Write(strconv.AppendUint(num[:0], r.Addr, 16))
		k := chain{&r.Frames[0], min(len(r.Frames), maxSourceFrames)}
		if at, ok := written[k]; ok {
			b.WriteString("\t^")
			writeInt(int64(n-at), 10)
			b.WriteByte('\n')
			n++
			continue
		}
		written[k] = n
		n++
		for _, f := range r.Frames[:k.n] {
			b.WriteByte('\t')
			writeField(b, f.Function)
			b.WriteByte('\t')
			writeField(b, f.File)
			b.WriteByte('\t')
			writeInt(int64(max(f.Line, 0)), 10)
		}
		if err := b.WriteByte('\n'); err != nil {
			return err
		}
	}
	return nil
}

// writeField writes s to b, a tab, newline or carriage return in it
// written as a space: they separate the fields and records of a
// LinesFile. Names hold none of them but by accident: each byte is
// compared with a space, the lowest above them, and only a name with a
// byte below it is written byte by byte. (A strings.Replacer's table
// lookup for every byte was an eighth of writing a recording's lines.)
func writeField(b linesWriter, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' {
			for k := 0; k < len(s); k++ {
				switch c := s[k]; c {
				case '\t', '\n', '\r':
					b.WriteByte(' ')
				default:
					b.WriteByte(c)
				}
			}
			return
		}
	}
	b.WriteString(s)
}

// LineTable answers which source frames a process's address, or a file's
// offset, has.
type LineTable struct {
	recs []lineRec // of processes, sorted by pid, then address
	// pids are the records of each process (see [pidIndex]).
	pids pidIndex
	// objRecs are the records of files, sorted by file, then offset;
	// objIdx indexes them as pids does recs. objs numbers the files by
	// build-id, files names them by number.
	objRecs []lineRec
	objs    map[string]int32
	files   []string
	objIdx  pidIndex
	// fileCalls counts the inlined calls of objRecs, counted as they
	// are sorted out ([LineTable.FileInlineFrames]).
	fileCalls int
}

// lineRec is a decoded record: 40 bytes, where an [AddrLines] with its
// Object string takes 56, for each of the half a million records of a
// large capture's older lines files.
type lineRec struct {
	addr   uint64
	frames []SourceFrame
	// key is the record's pid, or when file is set the number of its
	// file (see LineTable.files).
	key  int32
	file bool
}

// records returns the table's records, those of processes first.
func (t *LineTable) records() []AddrLines {
	var out []AddrLines
	for _, r := range t.recs {
		out = append(out, AddrLines{PID: r.key, Addr: r.addr, Frames: r.frames})
	}
	for _, r := range t.objRecs {
		out = append(out, AddrLines{Object: t.files[r.key], Addr: r.addr, Frames: r.frames})
	}
	return out
}

// DecodeLines parses a LinesFile. On malformed input it returns the
// records before the damage and an error naming the line.
func DecodeLines(data []byte) (*LineTable, error) {
	return DecodeLinesMax(data, -1)
}

// DecodeLinesMax is [DecodeLines] refusing, before decoding any, more
// than maxRecords records (when maxRecords >= 0). A reader passes the
// number of addresses its capture's SAMPLE and ALLOCATION frames hold, as
// nsprof record writes a record for at most each of those: a decoded
// record costs some 100 bytes however short its line (9 bytes at least),
// so this bounds the table's memory by about 13 times the size of those
// frames rather than by what a small gzip of short lines inflates to.
func DecodeLinesMax(data []byte, maxRecords int) (*LineTable, error) {
	nl := bytes.Count(data, []byte{'\n'})
	if maxRecords >= 0 {
		nl = min(nl, maxRecords+1)
	}
	p := newLinesParser(nl)
	var err error
	for rest := data; len(rest) > 0 && err == nil; {
		// Lines as bufio.ScanLines splits them: a last line without its
		// newline counts, a carriage return before the newline does not.
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		err = p.line(line)
		if err == nil && maxRecords >= 0 && len(p.t.recs) > maxRecords {
			// Refused as DecodeLinesGzip refuses it, damage before
			// the bound first: the rest counted, for the message.
			n := len(p.t.recs) + bytes.Count(rest, []byte{'\n'})
			if len(rest) > 0 && rest[len(rest)-1] != '\n' {
				n++
			}
			return &LineTable{}, tooManyLines(n, maxRecords)
		}
	}
	return p.finish(err)
}

// DecodeLinesGzip is [DecodeLinesMax] over z, the gzip data of a LinesFile
// stored at path (with its ".gz"), decompressed as it is parsed: the
// file's text is never held whole, only the table. Decompression is
// bounded as [Inflate] bounds it, with an [*InflateError].
func DecodeLinesGzip(path string, z []byte, maxRecords int) (*LineTable, error) {
	limit := MaxInflated(path, len(z))
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return &LineTable{}, fmt.Errorf("embedded file %s: %w", path, err)
	}
	br := bufio.NewReaderSize(io.LimitReader(zr, limit+1), 64<<10)
	p := newLinesParser(0)
	read := int64(0)
	var long []byte // a line longer than br's buffer
	for err == nil {
		var chunk []byte
		chunk, err = br.ReadSlice('\n')
		read += int64(len(chunk))
		if read > limit {
			return &LineTable{}, &InflateError{Path: path, Stored: len(z), Limit: limit}
		}
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			err = nil
			continue
		}
		line := chunk
		if len(long) > 0 {
			line = append(long, chunk...)
			long = long[:0]
		}
		if err == io.EOF && len(line) == 0 {
			err = nil
			break
		}
		if err != nil && err != io.EOF {
			err = fmt.Errorf("embedded file %s: %w", path, err)
			break
		}
		eof := err == io.EOF
		if err = p.line(bytes.TrimSuffix(line, []byte{'\n'})); err != nil {
			break
		}
		if len(p.t.recs) == 1024 && len(z) >= 4 {
			// Room for the records the text holds, as its first ones
			// and the gzip trailer's size tell, so that the table is
			// not copied as it grows.
			size := int64(binary.LittleEndian.Uint32(z[len(z)-4:]))
			n := min(size/max(read/1024, 1)*21/20, limit/9)
			if maxRecords >= 0 {
				n = min(n, int64(maxRecords))
			}
			// The estimate may be under the records read (a bound
			// below them, a trailer that lies): nothing to reserve.
			if more := int(n) - len(p.t.recs); more > 0 {
				p.t.recs = slices.Grow(p.t.recs, more)
				p.d.reserve(int(n))
			}
		}
		if maxRecords >= 0 && len(p.t.recs) > maxRecords {
			// Count the rest, for the message, within the bound.
			n := len(p.t.recs)
			for !eof {
				chunk, rerr := br.ReadSlice('\n')
				read += int64(len(chunk))
				if read > limit {
					return &LineTable{}, &InflateError{Path: path, Stored: len(z), Limit: limit}
				}
				if rerr == nil || (rerr == io.EOF && len(chunk) > 0) {
					n++
				}
				if rerr != nil && rerr != bufio.ErrBufferFull {
					break
				}
			}
			return &LineTable{}, tooManyLines(n, maxRecords)
		}
		if eof {
			break
		}
	}
	return p.finish(err)
}

// tooManyLines is the error of a LinesFile of n records when at most max
// may be read.
func tooManyLines(n, max int) error {
	return fmt.Errorf("%s: %d records, more than the %d addresses of the capture's samples and allocations it can describe; not read", LinesFile, n, max)
}

// linesParser builds a LineTable line by line.
type linesParser struct {
	t *LineTable
	d linesDecoder
	n int // lines seen
	// v is the file's version: 1's records all spell out their frames,
	// 3's may be about files.
	v int
}

// newLinesParser returns a parser for a file of about n lines.
func newLinesParser(n int) *linesParser {
	p := &linesParser{t: &LineTable{recs: make([]lineRec, 0, n)}, d: linesDecoder{names: make(map[string]string), objs: make(map[string]int32)}}
	p.d.reserve(n)
	return p
}

// reserve makes room in d's table of names for those of about n records:
// rehashing it as it grew was a tenth of decoding. A file's distinct
// names are about a quarter of its records (9.9 k for 42 k), and the
// estimate of a gzipped file's records runs high, so room is made for an
// eighth.
func (d *linesDecoder) reserve(n int) {
	if n /= 8; n > 2*len(d.names) {
		m := make(map[string]string, n)
		maps.Copy(m, d.names)
		d.names = m
	}
}

// line parses one line (without its newline).
func (p *linesParser) line(line []byte) error {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	p.n++
	if p.n == 1 {
		if p.v = linesVersion(line); p.v == 0 {
			return fmt.Errorf("%s line 1: header %.40q, want %q", LinesFile, line, linesMagic)
		}
		return nil
	}
	r, err := p.d.parse(line, p.t.recs, p.v)
	if err != nil {
		return fmt.Errorf("%s line %d: %w", LinesFile, p.n, err)
	}
	p.t.recs = append(p.t.recs, r)
	return nil
}

// finish sorts and indexes the records parsed, and returns the table with
// err, or the error of a file of no line.
func (p *linesParser) finish(err error) (*LineTable, error) {
	t := p.t
	if err == nil && p.n == 0 {
		err = fmt.Errorf("%s: empty", LinesFile)
	}
	byAddr := func(a, b lineRec) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.addr, b.addr)
	}
	if len(p.d.files) > 0 {
		// The records of files go to a table of their own: they stay
		// where they were parsed, moved down over those of processes
		// (few, in a file of version 3), which are copied out.
		t.objs, t.files = p.d.objs, p.d.files
		all := t.recs
		n := 0
		for i := range all {
			if !all[i].file {
				n++
			}
		}
		t.recs = make([]lineRec, 0, n)
		k := 0
		for _, r := range all {
			if !r.file {
				t.recs = append(t.recs, r)
				continue
			}
			all[k] = r
			k++
			t.fileCalls += max(0, len(r.frames)-1)
		}
		clear(all[k:])
		t.objRecs = all[:k]
		if cap(all) > k+k/4 {
			// Room reserved for more records than the file held.
			t.objRecs = slices.Clone(t.objRecs)
		}
		if !slices.IsSortedFunc(t.objRecs, byAddr) {
			slices.SortStableFunc(t.objRecs, byAddr)
		}
		t.objIdx = newPIDIndex(len(t.objRecs), func(i int) int32 { return t.objRecs[i].key })
	}
	if !slices.IsSortedFunc(t.recs, byAddr) { // nsprof record writes them sorted
		slices.SortStableFunc(t.recs, byAddr)
	}
	t.pids = newPIDIndex(len(t.recs), func(i int) int32 { return t.recs[i].key })
	return t, err
}

// linesDecoder parses the records of a LinesFile. Function and file
// names repeat from address to address: each distinct one is kept once,
// and the frames are cut from shared blocks, so that the table holds
// neither the file's text nor a string or slice per frame.
type linesDecoder struct {
	names  map[string]string
	frames []SourceFrame // the free part of the current block
	prev   []SourceFrame // the frames of the last record with frames
	// lastID and lastObj are the last build-id parsed and its number.
	lastID  []byte
	lastObj int32
	// objs numbers the files records are about, in order of first
	// record, by build-id; files are their build-ids by number.
	objs  map[string]int32
	files []string
}

// name returns b with carriage returns made spaces (as EncodeLines
// writes names), as a string shared by every equal name.
func (d *linesDecoder) name(b []byte) string {
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	s := strings.ReplaceAll(string(b), "\r", " ")
	d.names[string(b)] = s
	return s
}

// parse parses one record line of a file of version v; prev are the
// records before it, which a line of version 2 on may refer to for its
// frames.
func (d *linesDecoder) parse(line []byte, prev []lineRec, v int) (lineRec, error) {
	nf := bytes.Count(line, []byte{'\t'}) + 1
	if nf == 3 && v >= 2 {
		return d.parseRef(line, prev, v)
	}
	if nf < 5 || (nf-2)%3 != 0 {
		return lineRec{}, fmt.Errorf("%d fields, want pid, address and 3 per frame", nf)
	}
	if (nf-2)/3 > maxSourceFrames {
		return lineRec{}, fmt.Errorf("%d frames, at most %d", (nf-2)/3, maxSourceFrames)
	}
	field := func() []byte {
		f, rest, _ := bytes.Cut(line, []byte{'\t'})
		line = rest
		return f
	}
	r, err := d.key(field(), v)
	if err != nil {
		return lineRec{}, err
	}
	f := field()
	addr, ok := procfmt.ParseHex(f)
	if !ok {
		return lineRec{}, fmt.Errorf("address %.20q", f)
	}
	k := (nf - 2) / 3
	if len(d.frames) < k {
		d.frames = make([]SourceFrame, max(k, 4096))
	}
	frames := d.frames[:0:k]
	for j := range k {
		fn, file, l := field(), field(), field()
		ln, ok := parseCount(l)
		if !ok {
			return lineRec{}, fmt.Errorf("line number %.20q", l)
		}
		// The records of one function's offsets follow each other:
		// most names are those of the record before at the same depth
		// (compared without a copy; a map lookup hashes them).
		f := SourceFrame{Line: ln}
		if j < len(d.prev) && string(fn) == d.prev[j].Function {
			f.Function = d.prev[j].Function
		} else {
			f.Function = d.name(fn)
		}
		if j < len(d.prev) && string(file) == d.prev[j].File {
			f.File = d.prev[j].File
		} else {
			f.File = d.name(file)
		}
		frames = append(frames, f)
	}
	d.frames = d.frames[k:]
	d.prev = frames
	r.addr, r.frames = addr, frames
	return r, nil
}

// key parses the first field of a record of a file of version v: a pid,
// or from version 3 on "@" and a build-id.
func (d *linesDecoder) key(f []byte, v int) (lineRec, error) {
	if id, ok := bytes.CutPrefix(f, []byte{'@'}); ok && v >= 3 {
		if d.lastID != nil && bytes.Equal(id, d.lastID) {
			return lineRec{key: d.lastObj, file: true}, nil // a file's records follow each other
		}
		if len(id) == 0 || len(id) > maxObjectID || !isHex(id) {
			return lineRec{}, fmt.Errorf("build-id %.20q", f)
		}
		obj := d.name(bytes.ToLower(id))
		n, ok := d.objs[obj]
		if !ok {
			n = int32(len(d.files))
			d.objs[obj] = n
			d.files = append(d.files, obj)
		}
		d.lastID, d.lastObj = append(d.lastID[:0], id...), n
		return lineRec{key: n, file: true}, nil
	}
	pid, ok := parsePID(f)
	if !ok {
		return lineRec{}, fmt.Errorf("pid %.20q", f)
	}
	return lineRec{key: pid}, nil
}

// parseRef parses a record line "pid, address, ^N" (or "@build-id,
// offset, ^N") whose frames are those of the record N before it, the last
// of prev being 1 before.
func (d *linesDecoder) parseRef(line []byte, prev []lineRec, v int) (lineRec, error) {
	f0, rest, _ := bytes.Cut(line, []byte{'\t'})
	f1, f2, _ := bytes.Cut(rest, []byte{'\t'})
	r, err := d.key(f0, v)
	if err != nil {
		return lineRec{}, err
	}
	addr, ok := procfmt.ParseHex(f1)
	if !ok {
		return lineRec{}, fmt.Errorf("address %.20q", f1)
	}
	ref, ok := bytes.CutPrefix(f2, []byte{'^'})
	if !ok {
		return lineRec{}, fmt.Errorf("3 fields, want pid, address and 3 per frame, or a reference ^N to an earlier record")
	}
	n, ok := parseCount(ref)
	if !ok || n < 1 || n > len(prev) {
		return lineRec{}, fmt.Errorf("reference %.20q: not one of the %d records before", f2, len(prev))
	}
	r.addr, r.frames = addr, prev[len(prev)-n].frames
	return r, nil
}

// InlineFrames returns the number of inlined calls the table's records of
// processes describe: their frames other than the last of each address (0
// for nil). Those of files ([AddrLines.Object]) are left out: how many
// processes' frames each serves is not the table's to know.
func (t *LineTable) InlineFrames() int {
	if t == nil {
		return 0
	}
	n := 0
	for i := range t.recs {
		n += max(0, len(t.recs[i].frames)-1)
	}
	return n
}

// FileInlineFrames returns the number of inlined calls the table's
// records of files describe, as [LineTable.InlineFrames] counts them, and
// the number of those records (0, 0 for nil).
func (t *LineTable) FileInlineFrames() (calls, records int) {
	if t == nil {
		return 0, 0
	}
	return t.fileCalls, len(t.objRecs)
}

// Len returns the number of records in the table, of processes and of
// files (0 for nil).
func (t *LineTable) Len() int {
	if t == nil {
		return 0
	}
	return len(t.recs) + len(t.objRecs)
}

// Files returns the number of files the table has records of (0 for
// nil): see [AddrLines.Object].
func (t *LineTable) Files() int {
	if t == nil {
		return 0
	}
	return len(t.objs)
}

// LookupObject returns the source frames at offset off of the file with
// build-id buildID (lowercase hex), innermost first.
func (t *LineTable) LookupObject(buildID string, off uint64) ([]SourceFrame, bool) {
	if t == nil || len(t.objs) == 0 {
		return nil, false
	}
	id, ok := t.objs[buildID]
	if !ok {
		return nil, false
	}
	lo, hi := t.objIdx.span(id)
	return search(t.objRecs, lo, hi, off)
}

// Lookup returns the source frames of address addr of process pid,
// innermost first.
func (t *LineTable) Lookup(pid int32, addr uint64) ([]SourceFrame, bool) {
	if t == nil {
		return nil, false
	}
	lo, hi := t.pids.span(pid)
	return search(t.recs, lo, hi, addr)
}

// search returns the frames of the record at addr among recs[lo:hi],
// sorted by address.
func search(recs []lineRec, lo, hi int, addr uint64) ([]SourceFrame, bool) {
	end := hi
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if recs[m].addr < addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo >= end || recs[lo].addr != addr {
		return nil, false
	}
	return recs[lo].frames, true
}

// parsePID parses a pid of a LinesFile record as strconv.ParseInt(b, 10,
// 32) does, sign included, without the string it needs: the fields of
// half a million records were a third of the time of reading the file.
func parsePID(b []byte) (int32, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, b = b[0] == '-', b[1:]
	}
	n, ok := parseCount(b)
	if !ok || n > math.MaxInt32+b2i(neg) {
		return 0, false
	}
	if neg {
		return int32(-n), true
	}
	return int32(n), true
}

// parseCount parses up to 18 unsigned decimal digits (line numbers,
// back-references), as strconv.Atoi does them.
func parseCount(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// AddLinesFile embeds the LinesFile of recs gzip-compressed at level, as
// AddFileGzipLevel(h, LinesFile, EncodeLines(recs), level) does, without
// the file held uncompressed: the 8 MB of a compile loop's source lines,
// grown by doubling, were some 16 MB allocated as a recording ended.
func (w *Writer) AddLinesFile(h FrameHeader, recs []AddrLines, level int) error {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		return fmt.Errorf("embedded file %s: %w", LinesFile, err)
	}
	bw := bufio.NewWriterSize(zw, 64<<10)
	if err := writeLines(bw, recs); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return w.AddFile(h, LinesFile+".gz", &b)
}
