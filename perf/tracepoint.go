package perf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TracefsDirs are where [LookupTracepoint] looks for tracefs, in order.
var TracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// ErrNoTracefs is returned when no tracefs is mounted at [TracefsDirs].
var ErrNoTracefs = errors.New("tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)")

// Tracepoint describes a kernel tracepoint from its tracefs format file.
type Tracepoint struct {
	// Name is "subsystem:event".
	Name string
	// ID is the tracepoint's id: the perf config, and the common_type
	// field at the start of its raw data.
	ID uint16
	// Fields by name.
	Fields map[string]TracepointField
}

// TracepointField is one field of a tracepoint's raw data.
type TracepointField struct {
	Offset, Size int
	Signed       bool
}

// Int reads field name from raw tracepoint data as a signed or unsigned
// integer of its size. It reports false if the field is missing or does
// not fit in raw. A caller reading the same field of every hit can look
// it up once in Fields and use [TracepointField.Int].
func (tp *Tracepoint) Int(raw []byte, name string) (int64, bool) {
	f, ok := tp.Fields[name]
	if !ok {
		return 0, false
	}
	return f.Int(raw)
}

// Int reads the field from raw tracepoint data as a signed or unsigned
// integer of its size. It reports false if the field does not fit in raw
// or its size is not that of an integer.
func (f TracepointField) Int(raw []byte) (int64, bool) {
	if f.Offset < 0 || f.Offset+f.Size > len(raw) {
		return 0, false
	}
	b := raw[f.Offset:]
	switch f.Size {
	case 1:
		if f.Signed {
			return int64(int8(b[0])), true
		}
		return int64(b[0]), true
	case 2:
		v := binary.NativeEndian.Uint16(b)
		if f.Signed {
			return int64(int16(v)), true
		}
		return int64(v), true
	case 4:
		v := binary.NativeEndian.Uint32(b)
		if f.Signed {
			return int64(int32(v)), true
		}
		return int64(v), true
	case 8:
		return int64(binary.NativeEndian.Uint64(b)), true
	}
	return 0, false
}

// Matches reports whether raw tracepoint data comes from tp.
func (tp *Tracepoint) Matches(raw []byte) bool {
	return len(raw) >= 2 && binary.NativeEndian.Uint16(raw) == tp.ID
}

// LookupTracepoint reads the format of tracepoint name ("subsystem:event")
// from tracefs.
func LookupTracepoint(name string) (*Tracepoint, error) {
	sys, ev, ok := strings.Cut(name, ":")
	if !ok || sys == "" || ev == "" || strings.ContainsAny(name, "/.") {
		return nil, fmt.Errorf("tracepoint %q: want subsystem:event", name)
	}
	for _, dir := range TracefsDirs {
		if _, err := os.Stat(filepath.Join(dir, "events")); err != nil {
			continue
		}
		f, err := os.Open(filepath.Join(dir, "events", sys, ev, "format"))
		if err != nil {
			return nil, fmt.Errorf("tracepoint %s: %w", name, err)
		}
		defer f.Close()
		tp, err := ParseTracepointFormat(f)
		if err != nil {
			return nil, fmt.Errorf("tracepoint %s: %w", name, err)
		}
		tp.Name = name
		return tp, nil
	}
	return nil, fmt.Errorf("tracepoint %s: %w", name, ErrNoTracefs)
}

// ParseTracepointFormat parses a tracefs format file: its ID line and
// "field:TYPE NAME; offset:N; size:N; signed:N;" lines.
func ParseTracepointFormat(r io.Reader) (*Tracepoint, error) {
	tp := &Tracepoint{Fields: map[string]TracepointField{}}
	haveID := false
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(s, "ID:"); ok {
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 16)
			if err != nil {
				return nil, fmt.Errorf("format line %d: bad ID %q", line, v)
			}
			tp.ID, haveID = uint16(id), true
			continue
		}
		if !strings.HasPrefix(s, "field:") {
			continue
		}
		var name string
		var fld TracepointField
		for _, part := range strings.Split(s, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
			if !ok {
				continue
			}
			switch k {
			case "field":
				words := strings.Fields(v)
				if len(words) == 0 {
					return nil, fmt.Errorf("format line %d: empty field", line)
				}
				name = words[len(words)-1]
				if i := strings.IndexByte(name, '['); i >= 0 {
					name = name[:i]
				}
			case "offset", "size", "signed":
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("format line %d: bad %s %q", line, k, v)
				}
				switch k {
				case "offset":
					fld.Offset = n
				case "size":
					fld.Size = n
				default:
					fld.Signed = n != 0
				}
			}
		}
		if name != "" {
			tp.Fields[name] = fld
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !haveID {
		return nil, errors.New("format has no ID line")
	}
	return tp, nil
}
