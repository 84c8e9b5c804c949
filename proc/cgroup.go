package proc

import (
	"io"
	"strconv"
	"strings"
)

// Cgroup is one line of /proc/PID/cgroup.
type Cgroup struct {
	// HierarchyID is the cgroup v1 hierarchy ID, or 0 for the cgroup v2
	// unified hierarchy.
	HierarchyID int
	// Controllers lists the v1 controllers bound to the hierarchy, such as
	// "cpu" and "cpuacct", or a named hierarchy such as "name=systemd". It
	// is nil for the v2 hierarchy.
	Controllers []string
	// Path is the cgroup relative to the hierarchy's root, or to the
	// reader's cgroup namespace root. It may contain ':'.
	Path string
}

// IsV2 reports whether c is the line of the cgroup v2 unified hierarchy.
func (c Cgroup) IsV2() bool { return c.HierarchyID == 0 && len(c.Controllers) == 0 }

// ParseCgroup parses the /proc/PID/cgroup format, holding cgroup v1 lines,
// the v2 line "0::/path", or both on hybrid systems. On error it returns nil
// and a *[SyntaxError] naming the line.
func ParseCgroup(r io.Reader) ([]Cgroup, error) {
	lr := newLineReader(r, "cgroup")
	var cgs []Cgroup
	for lr.Next() {
		line := lr.Text()
		if line == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		ctrl, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			return nil, lr.Errorf(line, "want hierarchy-ID:controllers:path")
		}
		n, err := strconv.ParseUint(id, 10, 31)
		if err != nil {
			return nil, lr.Errorf(line, "bad hierarchy ID")
		}
		if path == "" {
			return nil, lr.Errorf(line, "empty path")
		}
		c := Cgroup{HierarchyID: int(n), Path: path}
		if ctrl != "" {
			c.Controllers = strings.Split(ctrl, ",")
		}
		cgs = append(cgs, c)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return cgs, nil
}

// ReadCgroup reads /proc/PID/cgroup.
func (fs FS) ReadCgroup(pid int) ([]Cgroup, error) {
	return parseFile(fs.pidPath(pid, "cgroup"), ParseCgroup)
}

// ReadCgroup reads /proc/PID/cgroup through [DefaultFS].
func ReadCgroup(pid int) ([]Cgroup, error) { return DefaultFS.ReadCgroup(pid) }
