package proc

import (
	"io"
	"math"
	"strconv"
	"strings"
)

// MappingMemory is one mapping of /proc/PID/smaps: the maps line and the
// memory the process holds in it, in bytes.
type MappingMemory struct {
	Mapping
	// Rss is the mapping's resident memory (Rss).
	Rss uint64
	// Anonymous is its resident memory that no file holds (Anonymous):
	// in a private file mapping, the pages the process wrote, such as
	// those a dynamic loader relocated before making them read-only.
	Anonymous uint64
	// Swap is its anonymous memory swapped out (Swap).
	Swap uint64
}

// ParseSmaps parses the /proc/PID/smaps format: each mapping's maps line
// followed by "Key: value" lines, of which Rss, Anonymous and Swap are
// kept (the others, which kernels add over time, are skipped). On error it
// returns nil and a *[SyntaxError] naming the line.
func ParseSmaps(r io.Reader) ([]MappingMemory, error) {
	lr := newLineReader(r, "smaps")
	var out []MappingMemory
	for lr.Next() {
		line := lr.Text()
		if line == "" {
			continue
		}
		key, value, ok := smapsField(line)
		if !ok {
			m, msg := parseMapping(line)
			if msg != "" {
				return nil, lr.Errorf(line, "%s", msg)
			}
			out = append(out, MappingMemory{Mapping: m})
			continue
		}
		if len(out) == 0 {
			return nil, lr.Errorf(line, "field before the first mapping")
		}
		var dst *uint64
		switch m := &out[len(out)-1]; key {
		case "Rss":
			dst = &m.Rss
		case "Anonymous":
			dst = &m.Anonymous
		case "Swap":
			dst = &m.Swap
		default:
			continue
		}
		n, msg := parseKB(value)
		if msg != "" {
			return nil, lr.Errorf(line, "%s: %s", key, msg)
		}
		*dst = n
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// smapsField splits a "Key: value" line of smaps. A mapping's line never
// has a colon in its first word (its address range).
func smapsField(line string) (key, value string, ok bool) {
	first, _, _ := strings.Cut(line, " ")
	key, ok = strings.CutSuffix(first, ":")
	if !ok {
		return "", "", false
	}
	return key, strings.TrimSpace(line[len(first):]), true
}

// parseKB parses "N kB" into bytes, returning a message on failure.
func parseKB(s string) (uint64, string) {
	num, unit, _ := strings.Cut(s, " ")
	if strings.TrimSpace(unit) != "kB" {
		return 0, "want a value in kB"
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, "bad value"
	}
	if n > math.MaxUint64/1024 {
		return 0, "value overflows bytes"
	}
	return n * 1024, ""
}

// ReadSmaps reads /proc/PID/smaps.
func (fs FS) ReadSmaps(pid int) ([]MappingMemory, error) {
	return parseFile(fs.pidPath(pid, "smaps"), ParseSmaps)
}

// ReadSmaps reads /proc/PID/smaps through [DefaultFS].
func ReadSmaps(pid int) ([]MappingMemory, error) { return DefaultFS.ReadSmaps(pid) }
