package proc

import (
	"io"
	"strconv"
	"strings"
)

// IDs are the four user or group IDs of a task, as seen from the user
// namespace of the reader of the proc file.
type IDs struct {
	Real, Effective, Saved, FS uint32
}

// Status holds the fields of /proc/PID/status that nsprof uses.
//
// The NS* chains list an ID in every PID namespace from the one of the proc
// mount that was read down to the task's own, outermost first: a process in
// one nested namespace, read from the host, has NSpid [hostpid, innerpid].
// An ID of 0 means the process is not visible in that namespace (for
// example a process group led from outside it). The chains are nil on
// kernels older than 4.1.
type Status struct {
	Name      string // command name, escapes decoded; at most 15 bytes (63 for kernel threads)
	State     byte   // 'R', 'S', 'D', 'Z', 'T', 't', 'X', 'I', ...
	Tgid      int    // thread group ID, the process ID
	Pid       int    // ID of this task (a thread ID for non-leader tasks)
	PPid      int    // parent process ID; 0 if the parent is outside the namespace
	TracerPid int    // 0 if not traced
	Uid, Gid  IDs
	Groups    []uint32 // supplementary groups; nil for none
	NStgid    []int
	NSpid     []int
	NSpgid    []int
	NSsid     []int
	Threads   int
	Kthread   bool // from the Kthread field of recent kernels; false if absent
}

// InnermostPid returns the task's ID in its own PID namespace: the last
// element of NSpid, or Pid when the kernel does not report NSpid.
func (s Status) InnermostPid() int {
	if len(s.NSpid) > 0 {
		return s.NSpid[len(s.NSpid)-1]
	}
	return s.Pid
}

// InnermostTgid returns the process ID in its own PID namespace: the last
// element of NStgid, or Tgid when the kernel does not report NStgid.
func (s Status) InnermostTgid() int {
	if len(s.NStgid) > 0 {
		return s.NStgid[len(s.NStgid)-1]
	}
	return s.Tgid
}

// ParseStatus parses the /proc/PID/status format. Unknown fields are
// ignored; a Pid field is required. On error it returns the zero Status and
// a *[SyntaxError] naming the line.
func ParseStatus(r io.Reader) (Status, error) {
	lr := newLineReader(r, "status")
	var s Status
	havePid := false
	for lr.Next() {
		line := lr.Text()
		if line == "" {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return Status{}, lr.Errorf(line, "missing ':'")
		}
		var err error
		switch key {
		case "Name":
			// The name follows a single tab and may itself hold tabs and
			// spaces.
			s.Name = unescapeName(strings.TrimPrefix(val, "\t"))
			continue
		case "State":
			v := strings.TrimSpace(val)
			if v == "" {
				return Status{}, lr.Errorf(line, "empty State")
			}
			s.State = v[0]
			continue
		case "Tgid":
			s.Tgid, err = parseID(val)
		case "Pid":
			s.Pid, err = parseID(val)
			havePid = true
		case "PPid":
			s.PPid, err = parseID(val)
		case "TracerPid":
			s.TracerPid, err = parseID(val)
		case "Threads":
			s.Threads, err = parseID(val)
		case "Kthread":
			var k int
			k, err = parseID(val)
			s.Kthread = k != 0
		case "Uid":
			s.Uid, err = parseIDs(val)
		case "Gid":
			s.Gid, err = parseIDs(val)
		case "Groups":
			s.Groups, err = parseGroups(val)
		case "NStgid":
			s.NStgid, err = parseIDList(val)
		case "NSpid":
			s.NSpid, err = parseIDList(val)
		case "NSpgid":
			s.NSpgid, err = parseIDList(val)
		case "NSsid":
			s.NSsid, err = parseIDList(val)
		default:
			continue
		}
		if err != nil {
			return Status{}, lr.Errorf(line, "bad %s", key)
		}
	}
	if err := lr.Err(); err != nil {
		return Status{}, err
	}
	if !havePid {
		return Status{}, syntaxError("status", 0, "", "missing Pid field")
	}
	return s, nil
}

// parseID parses one non-negative decimal ID surrounded by white space.
func parseID(s string) (int, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 31)
	return int(n), err
}

// parseIDList parses white-space-separated IDs; an empty list is an error.
func parseIDList(s string) ([]int, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return nil, strconv.ErrSyntax
	}
	ids := make([]int, len(f))
	for i, v := range f {
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			return nil, err
		}
		ids[i] = int(n)
	}
	return ids, nil
}

// parseGroups parses the Groups line: white-space-separated group IDs,
// none for a process without supplementary groups.
func parseGroups(s string) ([]uint32, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return nil, nil
	}
	g := make([]uint32, len(f))
	for i, v := range f {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, err
		}
		g[i] = uint32(n)
	}
	return g, nil
}

// parseIDs parses the four IDs of a Uid or Gid line.
func parseIDs(s string) (IDs, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return IDs{}, strconv.ErrSyntax
	}
	var v [4]uint32
	for i := range f {
		n, err := strconv.ParseUint(f[i], 10, 32)
		if err != nil {
			return IDs{}, err
		}
		v[i] = uint32(n)
	}
	return IDs{v[0], v[1], v[2], v[3]}, nil
}

// unescapeName decodes the escapes the kernel applies to the Name field:
// "\n" for a newline and "\\" for a backslash. Other sequences are kept.
func unescapeName(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ReadStatus reads /proc/PID/status.
func (fs FS) ReadStatus(pid int) (Status, error) {
	return parseFile(fs.pidPath(pid, "status"), ParseStatus)
}

// ReadTaskStatus reads /proc/PID/task/TID/status, the status of one thread.
func (fs FS) ReadTaskStatus(pid, tid int) (Status, error) {
	return parseFile(fs.taskPath(pid, tid, "status"), ParseStatus)
}

// ReadStatus reads /proc/PID/status through [DefaultFS].
func ReadStatus(pid int) (Status, error) { return DefaultFS.ReadStatus(pid) }
