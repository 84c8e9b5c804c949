package symbol

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
)

// maxPerfMapLine bounds one line of a perf map; JIT names (JavaScript
// functions with their source URL) can be long.
const maxPerfMapLine = 1 << 20

// ParsePerfMap parses a JIT perf map, /tmp/perf-PID.map: one "START SIZE
// NAME" line per compiled function, START and SIZE in hexadecimal (with or
// without 0x), NAME running to the end of the line and possibly holding
// spaces. Addresses are absolute: they need no [File.Vaddr] translation.
//
// A JIT appends to the file as it compiles, and may reuse the memory of
// freed code: a later line for the same address wins. Malformed lines,
// such as a last line being written while the file is read, are skipped;
// only when no line is valid does ParsePerfMap return an error, a
// *[SyntaxError] naming the first bad line.
func ParsePerfMap(r io.Reader) (*Table, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxPerfMapLine)
	var es []entry
	var firstErr *SyntaxError
	lineNo := 0
	bad := func(line []byte, msg string) {
		if firstErr == nil {
			firstErr = syntaxError("perf map", lineNo, line, msg)
		}
	}
	for sc.Scan() {
		lineNo++
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		startB, rest, ok1 := bytes.Cut(line, []byte{' '})
		sizeB, name, ok2 := bytes.Cut(rest, []byte{' '})
		if !ok1 || !ok2 || len(name) == 0 {
			bad(line, "want START SIZE NAME")
			continue
		}
		start, err1 := parseHex(startB)
		size, err2 := parseHex(sizeB)
		if err1 != nil || err2 != nil {
			bad(line, "bad hexadecimal number")
			continue
		}
		if size == 0 || start+size < start {
			bad(line, "empty or wrapping range")
			continue
		}
		es = append(es, entry{Symbol: Symbol{Name: string(name), Addr: start, Size: size}, rank: lineNo})
	}
	if err := sc.Err(); err != nil && firstErr == nil {
		firstErr = syntaxError("perf map", lineNo+1, nil, err.Error())
	}
	if len(es) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return buildTable(es, nil), nil
}

func parseHex(b []byte) (uint64, error) {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	return strconv.ParseUint(string(b), 16, 64)
}
