package capture

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// LinesFile is the embedded file in which nsprof record stores, for each
// sampled user address, its source file and line and the functions
// inlined there, read from DWARF while the mapped files were reachable.
// Sysprof's __symbols__ bundle holds one function name per address
// range; this file adds what it cannot. The recorder writes it gzipped,
// as LinesFile + ".gz". Other readers ignore it.
const LinesFile = "__nsprof_lines__"

// linesMagic is the first line of a LinesFile.
const linesMagic = "nsprof-lines 1"

// maxSourceFrames bounds the inline chain of one address.
const maxSourceFrames = 256

// SourceFrame is one source-level frame: a function and the file and line
// reached in it.
type SourceFrame struct {
	Function string
	File     string
	Line     int
}

// AddrLines is the source view of one sampled address of one process.
type AddrLines struct {
	PID  int32
	Addr uint64
	// Frames are innermost first: the functions inlined at Addr, then
	// the function the code is in, each with its file and line. A frame
	// may lack a name (DWARF without one) or a line.
	Frames []SourceFrame
}

// EncodeLines returns the contents of a LinesFile: a header line, then a
// line per address: pid, address in hex, and a function, file and line
// per frame, tab-separated. Tabs and newlines in names become spaces.
func EncodeLines(recs []AddrLines) []byte {
	var b bytes.Buffer
	b.WriteString(linesMagic + "\n")
	clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	for _, r := range recs {
		if len(r.Frames) == 0 {
			continue
		}
		b.WriteString(strconv.FormatInt(int64(r.PID), 10))
		b.WriteByte('\t')
		b.WriteString(strconv.FormatUint(r.Addr, 16))
		for _, f := range r.Frames[:min(len(r.Frames), maxSourceFrames)] {
			b.WriteByte('\t')
			b.WriteString(clean.Replace(f.Function))
			b.WriteByte('\t')
			b.WriteString(clean.Replace(f.File))
			b.WriteByte('\t')
			b.WriteString(strconv.Itoa(max(f.Line, 0)))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// LineTable answers which source frames a process's address has.
type LineTable struct {
	recs []AddrLines // sorted by pid, then address
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
	t := &LineTable{}
	if n := bytes.Count(data, []byte{'\n'}); maxRecords >= 0 && n > maxRecords+1 {
		return t, fmt.Errorf("%s: %d records, more than the %d addresses of the capture's samples and allocations it can describe; not read", LinesFile, n-1, maxRecords)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	n := 0
	var err error
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			if line != linesMagic {
				err = fmt.Errorf("%s line 1: header %.40q, want %q", LinesFile, line, linesMagic)
				break
			}
			continue
		}
		var r AddrLines
		if r, err = parseAddrLines(line); err != nil {
			err = fmt.Errorf("%s line %d: %w", LinesFile, n, err)
			break
		}
		t.recs = append(t.recs, r)
	}
	if err == nil && n == 0 {
		err = fmt.Errorf("%s: empty", LinesFile)
	}
	slices.SortStableFunc(t.recs, func(a, b AddrLines) int {
		if c := cmp.Compare(a.PID, b.PID); c != 0 {
			return c
		}
		return cmp.Compare(a.Addr, b.Addr)
	})
	return t, err
}

func parseAddrLines(line string) (AddrLines, error) {
	f := strings.Split(line, "\t")
	if len(f) < 5 || (len(f)-2)%3 != 0 {
		return AddrLines{}, fmt.Errorf("%d fields, want pid, address and 3 per frame", len(f))
	}
	if (len(f)-2)/3 > maxSourceFrames {
		return AddrLines{}, fmt.Errorf("%d frames, at most %d", (len(f)-2)/3, maxSourceFrames)
	}
	pid, err := strconv.ParseInt(f[0], 10, 32)
	if err != nil {
		return AddrLines{}, fmt.Errorf("pid %.20q", f[0])
	}
	addr, err := strconv.ParseUint(f[1], 16, 64)
	if err != nil {
		return AddrLines{}, fmt.Errorf("address %.20q", f[1])
	}
	r := AddrLines{PID: int32(pid), Addr: addr, Frames: make([]SourceFrame, 0, (len(f)-2)/3)}
	for i := 2; i < len(f); i += 3 {
		ln, err := strconv.Atoi(f[i+2])
		if err != nil || ln < 0 {
			return AddrLines{}, fmt.Errorf("line number %.20q", f[i+2])
		}
		// As EncodeLines writes them: no carriage returns.
		fn, file := strings.ReplaceAll(f[i], "\r", " "), strings.ReplaceAll(f[i+1], "\r", " ")
		r.Frames = append(r.Frames, SourceFrame{Function: fn, File: file, Line: ln})
	}
	return r, nil
}

// Len returns the number of addresses in the table (0 for nil).
func (t *LineTable) Len() int {
	if t == nil {
		return 0
	}
	return len(t.recs)
}

// Lookup returns the source frames of address addr of process pid,
// innermost first.
func (t *LineTable) Lookup(pid int32, addr uint64) ([]SourceFrame, bool) {
	if t == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(t.recs, AddrLines{PID: pid, Addr: addr}, func(a, b AddrLines) int {
		if c := cmp.Compare(a.PID, b.PID); c != 0 {
			return c
		}
		return cmp.Compare(a.Addr, b.Addr)
	})
	if !ok {
		return nil, false
	}
	return t.recs[i].Frames, true
}
