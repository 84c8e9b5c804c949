package capture

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// parseProcessLine decodes a line of a ProcessFile into u when the line
// is as nsprof writes them (json.Marshal of a ProcessInfo or ThreadInfo):
// one object without spaces, its keys those of the two kinds spelled
// exactly, each once, its values of their fields' types, no null. It
// reports false for any other line, which json.Unmarshal decodes then;
// for a line it accepts, u is what json.Unmarshal makes of it. Decoded
// by json.Unmarshal, the process file of a 2 s system-wide capture (835
// lines, 92 kB) took 4.3 ms, for which loading it waited at its end
// (5.5 ms of an export's main goroutine, in a runtime trace).
func parseProcessLine(b []byte, u *processLine) bool {
	p := lineParser{b: b}
	if !p.byte('{') {
		return false
	}
	var seen uint32
	for first := true; ; first = false {
		if p.byte('}') {
			return p.i == len(p.b)
		}
		if !first && !p.byte(',') {
			return false
		}
		key, ok := p.key()
		if !ok || !p.byte(':') {
			return false
		}
		f, ok := processFields[string(key)]
		if !ok || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		if !p.field(f, u) {
			return false
		}
	}
}

// The fields of a process line, numbered for parseProcessLine.
const (
	fKind = iota
	fTime
	fPID
	fPPID
	fNSpid
	fComm
	fCmdline
	fCmdlineRedacted
	fUID
	fMntNS
	fPidNS
	fUserNS
	fRoot
	fExe
	fExeDev
	fExeInode
	fCgroups
	fContainer
	fErr
	fTID
	fExited
)

// processFields are the keys of a process line, as the json tags of
// ProcessInfo and processLine spell them.
var processFields = map[string]int{
	"kind": fKind, "time": fTime, "pid": fPID, "ppid": fPPID, "nspid": fNSpid,
	"comm": fComm, "cmdline": fCmdline, "cmdline_redacted": fCmdlineRedacted,
	"uid": fUID, "mntns": fMntNS, "pidns": fPidNS, "userns": fUserNS,
	"root": fRoot, "exe": fExe, "exe_dev": fExeDev, "exe_inode": fExeInode,
	"cgroups": fCgroups, "container": fContainer, "err": fErr,
	"tid": fTID, "exited": fExited,
}

// field parses the value of field f into u.
func (p *lineParser) field(f int, u *processLine) bool {
	ok := true
	switch f {
	case fKind:
		u.Kind, ok = p.str()
	case fTime:
		u.Time, ok = p.int(math.MinInt64, math.MaxInt64)
	case fPID:
		u.PID, ok = p.intField()
	case fPPID:
		u.PPID, ok = p.intField()
	case fTID:
		u.TID, ok = p.intField()
	case fNSpid:
		u.NSpid, ok = p.ints()
	case fComm:
		u.Comm, ok = p.str()
	case fCmdline:
		u.Cmdline, ok = p.strs()
	case fCmdlineRedacted:
		u.CmdlineRedacted, ok = p.bool()
	case fExited:
		u.Exited, ok = p.bool()
	case fUID:
		var n uint64
		n, ok = p.uint(math.MaxUint32)
		u.UID = uint32(n)
	case fMntNS:
		u.MntNS, ok = p.uint(math.MaxUint64)
	case fPidNS:
		u.PidNS, ok = p.uint(math.MaxUint64)
	case fUserNS:
		u.UserNS, ok = p.uint(math.MaxUint64)
	case fExeInode:
		u.ExeInode, ok = p.uint(math.MaxUint64)
	case fRoot:
		u.Root, ok = p.str()
	case fExe:
		u.Exe, ok = p.str()
	case fExeDev:
		u.ExeDev, ok = p.str()
	case fCgroups:
		u.Cgroups, ok = p.strs()
	case fErr:
		u.Err, ok = p.str()
	case fContainer:
		u.Container = &ContainerInfo{}
		ok = p.container(u.Container)
	}
	return ok
}

// container parses a ContainerInfo object into c.
func (p *lineParser) container(c *ContainerInfo) bool {
	if !p.byte('{') {
		return false
	}
	var seen uint8
	for first := true; ; first = false {
		if p.byte('}') {
			return true
		}
		if !first && !p.byte(',') {
			return false
		}
		key, ok := p.key()
		if !ok || !p.byte(':') {
			return false
		}
		var f uint8
		var dst *string
		switch string(key) {
		case "kind":
			f, dst = 1, &c.Kind
		case "id":
			f, dst = 2, &c.ID
		case "name":
			f, dst = 4, &c.Name
		case "app_id":
			f, dst = 8, &c.AppID
		case "root":
			f, dst = 16, &c.Root
		case "rootless":
			f = 32
		default:
			return false
		}
		if seen&f != 0 {
			return false
		}
		seen |= f
		if dst != nil {
			*dst, ok = p.str()
		} else {
			c.Rootless, ok = p.bool()
		}
		if !ok {
			return false
		}
	}
}

// lineParser reads b from i.
type lineParser struct {
	b []byte
	i int
	// buf holds a string's bytes while its escapes are undone.
	buf []byte
}

// byte consumes c when it is next.
func (p *lineParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// key returns the key at i, of lowercase letters and underscores only.
func (p *lineParser) key() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c == '_' || c >= 'a' && c <= 'z':
			p.i++
		default:
			return nil, false
		}
	}
	return nil, false
}

// str returns the string at i, its escapes undone as encoding/json
// undoes them; false for a string encoding/json would change otherwise
// (a surrogate escape, bytes not UTF-8).
func (p *lineParser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return p.escaped(start)
		}
		p.i++
	}
	return "", false
}

// escaped finishes str from i, the string having begun at start.
func (p *lineParser) escaped(start int) (string, bool) {
	p.buf = append(p.buf[:0], p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(p.buf), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && n <= 1 {
				return "", false
			}
			p.buf = append(p.buf, p.b[p.i:p.i+n]...)
			p.i += n
		case c != '\\':
			p.buf = append(p.buf, c)
			p.i++
		default:
			if p.i+1 >= len(p.b) {
				return "", false
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				p.buf = append(p.buf, e)
			case 'b':
				p.buf = append(p.buf, '\b')
			case 'f':
				p.buf = append(p.buf, '\f')
			case 'n':
				p.buf = append(p.buf, '\n')
			case 'r':
				p.buf = append(p.buf, '\r')
			case 't':
				p.buf = append(p.buf, '\t')
			case 'u':
				if p.i+4 > len(p.b) {
					return "", false
				}
				r, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 16)
				if err != nil || r >= 0xd800 && r < 0xe000 {
					return "", false
				}
				p.buf = utf8.AppendRune(p.buf, rune(r))
				p.i += 4
			default:
				return "", false
			}
		}
	}
	return "", false
}

// digits returns the digits of a JSON integer at i, and whether it is
// negative; false for a number with a fraction or an exponent, or
// leading zeros.
func (p *lineParser) digits() (neg bool, d []byte, ok bool) {
	neg = p.byte('-')
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	d = p.b[start:p.i]
	if len(d) == 0 || len(d) > 1 && d[0] == '0' {
		return false, nil, false
	}
	if p.i < len(p.b) {
		if c := p.b[p.i]; c == '.' || c == 'e' || c == 'E' {
			return false, nil, false
		}
	}
	return neg, d, true
}

// uint returns the unsigned integer at i, at most max.
func (p *lineParser) uint(max uint64) (uint64, bool) {
	neg, d, ok := p.digits()
	if !ok || neg {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d), 10, 64)
	return n, err == nil && n <= max
}

// int returns the integer at i, within [min, max].
func (p *lineParser) int(min, max int64) (int64, bool) {
	neg, d, ok := p.digits()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d), 10, 64)
	if err != nil {
		return 0, false
	}
	switch {
	case !neg && n <= uint64(max):
		return int64(n), true
	case neg && n <= uint64(-(min+1))+1:
		return int64(-n), true // -n wraps to min for n = -min
	}
	return 0, false
}

// intField returns the int at i.
func (p *lineParser) intField() (int, bool) {
	n, ok := p.int(math.MinInt, math.MaxInt)
	return int(n), ok
}

// bool returns the boolean at i.
func (p *lineParser) bool() (bool, bool) {
	switch {
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	}
	return false, false
}

// literal consumes s when it is next.
func (p *lineParser) literal(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// ints returns the array of ints at i: empty, not nil, for [].
func (p *lineParser) ints() ([]int, bool) { return array(p, p.intField) }

// strs returns the array of strings at i: empty, not nil, for [].
func (p *lineParser) strs() ([]string, bool) { return array(p, p.str) }

// array returns the array at i of the values elem reads: empty, not nil,
// for [].
func array[T any](p *lineParser, elem func() (T, bool)) ([]T, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := []T{}
	for first := true; ; first = false {
		if p.byte(']') {
			return out, true
		}
		if !first && !p.byte(',') {
			return nil, false
		}
		v, ok := elem()
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
}
