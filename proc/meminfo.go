package proc

import (
	"io"
	"math"
	"strconv"
	"strings"
)

// Meminfo maps the keys of /proc/meminfo, such as "MemTotal" and
// "HugePages_Total", to their values. Values the kernel gives in kB are
// converted to bytes; unitless values (page counts) are kept as they are.
type Meminfo map[string]uint64

// ParseMeminfo parses the /proc/meminfo format. On error it returns nil and
// a *[SyntaxError] naming the line.
func ParseMeminfo(r io.Reader) (Meminfo, error) {
	lr := newLineReader(r, "meminfo")
	m := Meminfo{}
	for lr.Next() {
		line := lr.Text()
		if line == "" {
			continue
		}
		key, rest, ok := strings.Cut(line, ":")
		if !ok || key == "" {
			return nil, lr.Errorf(line, "missing key")
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 {
			return nil, lr.Errorf(line, "want a value and an optional unit")
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, lr.Errorf(line, "bad value")
		}
		if len(f) == 2 {
			if f[1] != "kB" {
				return nil, lr.Errorf(line, "unknown unit %q", f[1])
			}
			if n > math.MaxUint64/1024 {
				return nil, lr.Errorf(line, "value overflows bytes")
			}
			n *= 1024
		}
		m[key] = n
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// ReadMeminfo reads /proc/meminfo.
func (fs FS) ReadMeminfo() (Meminfo, error) {
	return parseFile(fs.path("meminfo"), ParseMeminfo)
}

// ReadMeminfo reads /proc/meminfo through [DefaultFS].
func ReadMeminfo() (Meminfo, error) { return DefaultFS.ReadMeminfo() }
