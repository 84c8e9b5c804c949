package symbol

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
)

// maxKallsymsLine bounds one line of /proc/kallsyms (a kernel symbol name
// is at most 512 bytes, KSYM_NAME_LEN).
const maxKallsymsLine = 64 << 10

// ParseKallsyms parses /proc/kallsyms ("ADDR TYPE NAME [MODULE]") into a
// table of the kernel's text symbols (types t, T, w and W). A symbol of a
// module is named "name [module]", as perf prints it; [SplitModule] splits
// it again. Zero-size symbols extend to the next symbol, at most 1 MiB.
//
// When every address reads as zero, the kernel hides them from this reader
// (kernel.kptr_restrict), and ParseKallsyms returns [ErrRestrictedKernel].
// A malformed line is returned as a *[SyntaxError].
func ParseKallsyms(r io.Reader) (*Table, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxKallsymsLine)
	var es []entry
	lineNo, nonzero, text := 0, false, 0
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		addrB, rest, ok1 := bytes.Cut(line, []byte{' '})
		typB, rest, ok2 := bytes.Cut(rest, []byte{' '})
		if !ok1 || !ok2 || len(typB) != 1 || len(rest) == 0 {
			return nil, syntaxError("kallsyms", lineNo, line, "want ADDR TYPE NAME")
		}
		addr, err := strconv.ParseUint(string(addrB), 16, 64)
		if err != nil {
			return nil, syntaxError("kallsyms", lineNo, line, "bad address")
		}
		switch typB[0] {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		text++
		if addr == 0 {
			continue
		}
		nonzero = true
		name, mod, hasMod := bytes.Cut(rest, []byte{'\t'})
		var n string
		if hasMod {
			mod = bytes.TrimSpace(mod)
			n = string(name) + " " + string(mod)
		} else {
			n = string(bytes.TrimRight(name, " \t"))
		}
		if n == "" {
			return nil, syntaxError("kallsyms", lineNo, line, "empty name")
		}
		rank := rankGlobal
		if typB[0] == 't' {
			rank = rankLocal
		} else if typB[0] == 'w' || typB[0] == 'W' {
			rank = rankWeak
		}
		es = append(es, entry{Symbol: Symbol{Name: n, Addr: addr}, rank: rank})
	}
	if err := sc.Err(); err != nil {
		return nil, syntaxError("kallsyms", lineNo+1, nil, err.Error())
	}
	if text > 0 && !nonzero {
		return nil, ErrRestrictedKernel
	}
	return buildTable(es, nil), nil
}

// SplitModule splits a kernel symbol name from [ParseKallsyms] into the
// function name and the module ("" for the kernel image).
func SplitModule(name string) (sym, module string) {
	if i := strings.LastIndex(name, " ["); i >= 0 && strings.HasSuffix(name, "]") {
		return name[:i], name[i+2 : len(name)-1]
	}
	return name, ""
}
