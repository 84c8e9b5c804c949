package proc

import (
	"io"
	"strconv"
	"strings"

	"nsprof/internal/procfmt"
)

// Perms are the access bits of a memory mapping.
type Perms uint8

// Permission bits of a [Mapping].
const (
	PermRead   Perms = 1 << iota // 'r'
	PermWrite                    // 'w'
	PermExec                     // 'x'
	PermShared                   // 's' (shared) rather than 'p' (private)
)

// String formats p the way maps does, for example "r-xp".
func (p Perms) String() string {
	b := []byte("---p")
	if p&PermRead != 0 {
		b[0] = 'r'
	}
	if p&PermWrite != 0 {
		b[1] = 'w'
	}
	if p&PermExec != 0 {
		b[2] = 'x'
	}
	if p&PermShared != 0 {
		b[3] = 's'
	}
	return string(b)
}

// Dev is a device number split into its major and minor parts.
type Dev = procfmt.Dev

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64 // address range [Start, End)
	Perms      Perms
	Offset     uint64 // file offset of Start
	Dev        Dev    // device of the mapped file; 0:0 for anonymous memory
	Inode      uint64 // inode of the mapped file; 0 for anonymous memory
	// Path is the mapped file as the kernel resolved it in the process's
	// mount namespace, a pseudo-path such as "[heap]", "[vdso]" or
	// "[anon:name]", or "" for anonymous memory. A newline in a file name,
	// which the kernel writes as \012, is decoded.
	Path string
	// Deleted reports that the file was unlinked; the kernel's " (deleted)"
	// suffix is removed from Path. A file really named "x (deleted)" cannot
	// be told apart.
	Deleted bool
}

// IsAnonymous reports whether m maps no file and has no pseudo-path.
func (m Mapping) IsAnonymous() bool { return m.Path == "" }

// IsPseudo reports whether Path is a kernel pseudo-path such as "[heap]",
// "[stack]", "[vdso]", "[vvar]" or "[anon:name]" rather than a file.
func (m Mapping) IsPseudo() bool { return strings.HasPrefix(m.Path, "[") }

const deletedSuffix = " (deleted)"

// ParseMaps parses the /proc/PID/maps format. On error it returns nil and a
// *[SyntaxError] naming the line.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	lr := newLineReader(r, "maps")
	var maps []Mapping
	for lr.Next() {
		line := lr.Text()
		if line == "" {
			continue
		}
		m, msg := parseMapping(line)
		if msg != "" {
			return nil, lr.Errorf(line, "%s", msg)
		}
		maps = append(maps, m)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return maps, nil
}

// parseMapping parses one maps line, returning a message on failure.
func parseMapping(line string) (Mapping, string) {
	var m Mapping
	addr, rest, _ := strings.Cut(line, " ")
	lo, hi, ok := strings.Cut(addr, "-")
	if !ok {
		return m, "bad address range"
	}
	var err1, err2 error
	m.Start, err1 = strconv.ParseUint(lo, 16, 64)
	m.End, err2 = strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || m.End < m.Start {
		return m, "bad address range"
	}

	perms, rest, _ := strings.Cut(rest, " ")
	p, ok := parsePerms(perms)
	if !ok {
		return m, "bad permissions"
	}
	m.Perms = p

	off, rest, _ := strings.Cut(rest, " ")
	var err error
	if m.Offset, err = strconv.ParseUint(off, 16, 64); err != nil {
		return m, "bad offset"
	}

	dev, rest, _ := strings.Cut(rest, " ")
	if m.Dev, ok = parseDev(dev, 16); !ok {
		return m, "bad device"
	}

	ino, rest, _ := strings.Cut(rest, " ")
	if m.Inode, err = strconv.ParseUint(ino, 10, 64); err != nil {
		return m, "bad inode"
	}

	// The path is padded on the left; everything after the padding,
	// including trailing spaces, belongs to it.
	path := strings.TrimLeft(rest, " ")
	if p, ok := strings.CutSuffix(path, deletedSuffix); ok {
		path, m.Deleted = p, true
	}
	m.Path = strings.ReplaceAll(path, `\012`, "\n")
	return m, ""
}

func parsePerms(s string) (Perms, bool) {
	if len(s) != 4 {
		return 0, false
	}
	var p Perms
	for i, c := range []byte(s) {
		switch {
		case c == "rwxs"[i]:
			p |= 1 << i
		case c == '-' && i < 3, c == 'p' && i == 3:
		default:
			return 0, false
		}
	}
	return p, true
}

// parseDev parses "major:minor" in the given base.
func parseDev(s string, base int) (Dev, bool) { return procfmt.ParseDev(s, base) }

// ReadMaps reads /proc/PID/maps.
func (fs FS) ReadMaps(pid int) ([]Mapping, error) {
	return parseFile(fs.pidPath(pid, "maps"), ParseMaps)
}

// ReadTaskMaps reads /proc/PID/task/TID/maps: the mappings as thread tid
// sees them, which is the only view left once the thread-group leader
// has exited while other threads run (/proc/PID/maps is then empty).
func (fs FS) ReadTaskMaps(pid, tid int) ([]Mapping, error) {
	return parseFile(fs.taskPath(pid, tid, "maps"), ParseMaps)
}

// ReadMaps reads /proc/PID/maps through [DefaultFS].
func ReadMaps(pid int) ([]Mapping, error) { return DefaultFS.ReadMaps(pid) }
