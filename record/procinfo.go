package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"nsprof/capture"
	"nsprof/proc"
)

// ProcessFile is the embedded file in which nsprof records, one JSON object
// per line, what later symbolization across namespaces needs to know about
// each process and thread while it lives. It is written as FILE_CHUNK
// frames as processes appear and closed at the end of the recording, so a
// capture cut short still holds the lines written so far.
const ProcessFile = "__nsprof_processes__"

// ProcessInfo identifies a process seen during a recording.
type ProcessInfo struct {
	// Kind is "process".
	Kind string `json:"kind"`
	// Time the process was first seen, on the capture clock.
	Time int64 `json:"time"`
	// PID is the process id in the recorder's PID namespace.
	PID int `json:"pid"`
	// PPID is the parent's pid, 0 when outside the namespace.
	PPID int `json:"ppid,omitempty"`
	// NSpid is the pid in each nested PID namespace, outermost first
	// (NStgid of /proc/PID/status); the last is the pid the process sees.
	NSpid []int `json:"nspid,omitempty"`
	// Comm and Cmdline name the program.
	Comm    string   `json:"comm,omitempty"`
	Cmdline []string `json:"cmdline,omitempty"`
	// CmdlineRedacted says Cmdline was cut to the program's name (see
	// [Redaction]).
	CmdlineRedacted bool `json:"cmdline_redacted,omitempty"`
	// UID is the real user id.
	UID uint32 `json:"uid"`
	// MntNS, PidNS and UserNS are namespace inode numbers.
	MntNS  uint64 `json:"mntns,omitempty"`
	PidNS  uint64 `json:"pidns,omitempty"`
	UserNS uint64 `json:"userns,omitempty"`
	// Root is the target of /proc/PID/root as the recorder sees it.
	Root string `json:"root,omitempty"`
	// Exe is the target of /proc/PID/exe, with its device and inode.
	Exe      string `json:"exe,omitempty"`
	ExeDev   string `json:"exe_dev,omitempty"`
	ExeInode uint64 `json:"exe_inode,omitempty"`
	// Cgroups are the lines of /proc/PID/cgroup.
	Cgroups []string `json:"cgroups,omitempty"`
	// Container says what the process runs in; nil when unknown.
	Container *ContainerInfo `json:"container,omitempty"`
	// Err says what could not be read, if anything (the process may have
	// exited before it was looked at).
	Err string `json:"err,omitempty"`

	uidKnown bool // UID was read
}

// ContainerInfo labels what a process runs in.
type ContainerInfo struct {
	// Kind is "host", "podman", "flatpak" or "namespace" (another mount
	// namespace that is neither, such as unshare or bubblewrap).
	Kind string `json:"kind"`
	// ID and Name identify a podman container (full id, --name).
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Rootless is set for a podman container run by an unprivileged user.
	Rootless bool `json:"rootless,omitempty"`
	// AppID is a Flatpak application id.
	AppID string `json:"app_id,omitempty"`
	// Root is where the process's root directory comes from on the host,
	// when known (an overlay's merged dir, a bind source, a chroot dir).
	Root string `json:"root,omitempty"`
}

// ThreadInfo is one event of a thread: its creation (with its id inside
// its PID namespace, when it has one of its own), a new name, or its exit.
// A thread may have several lines; the fields set add up. Lines written
// for a task a process in a PID namespace created (see the recorder's
// clone tracking) may be of a child process rather than of a thread: the
// process's own frames tell them apart.
type ThreadInfo struct {
	// Kind is "thread".
	Kind string `json:"kind"`
	Time int64  `json:"time"`
	// TID and PID are ids in the recorder's PID namespace.
	TID int `json:"tid"`
	PID int `json:"pid"`
	// NSpid is the thread id in each nested PID namespace, outermost first.
	NSpid []int `json:"nspid,omitempty"`
	// Comm is the name the thread gave itself, at Time.
	Comm string `json:"comm,omitempty"`
	// Exited says the thread ended at Time.
	Exited bool `json:"exited,omitempty"`
}

// inspect reads what is known about pid from /proc. It never fails: what
// cannot be read is named in Err.
func inspect(fs proc.FS, pid int, t int64) ProcessInfo {
	pi := ProcessInfo{Kind: "process", Time: t, PID: pid}
	var errs []string
	note := func(what string, err error) {
		if err != nil {
			errs = append(errs, what+": "+err.Error())
		}
	}
	st, err := fs.ReadStatus(pid)
	note("status", err)
	if err == nil {
		pi.PPID, pi.NSpid, pi.Comm, pi.UID, pi.uidKnown = st.PPid, st.NStgid, st.Name, st.Uid.Real, true
	}
	if pi.Cmdline, err = fs.ReadCmdline(pid); err != nil {
		note("cmdline", err)
	}
	pi.MntNS, err = fs.NamespaceID(pid, "mnt")
	note("mnt ns", err)
	pi.PidNS, err = fs.NamespaceID(pid, "pid")
	note("pid ns", err)
	pi.UserNS, _ = fs.NamespaceID(pid, "user")
	if l, err := fs.ReadLink(pid, "root"); err == nil {
		pi.Root = l.Target
	}
	if l, err := fs.ReadLink(pid, "exe"); err == nil {
		pi.Exe, pi.ExeDev, pi.ExeInode = l.Target, l.Dev.String(), l.Inode
	}
	if cg, err := fs.ReadCgroup(pid); err == nil {
		for _, c := range cg {
			pi.Cgroups = append(pi.Cgroups, fmt.Sprintf("%d:%s:%s", c.HierarchyID, strings.Join(c.Controllers, ","), c.Path))
		}
	}
	pi.Err = strings.Join(errs, "; ")
	return pi
}

// midExec reports whether the process was read (its status gave a name)
// without a command line: a user process in the middle of an exec, before
// its new arguments are set up (or a zombie; kernel threads too, which
// callers tell apart).
func (pi *ProcessInfo) midExec() bool { return len(pi.Cmdline) == 0 && pi.Comm != "" }

// cmdline returns what a PROCESS frame carries: argv joined by spaces, or
// the comm for kernel threads and processes whose argv is gone.
func (pi *ProcessInfo) cmdline() string {
	if len(pi.Cmdline) > 0 {
		return strings.Join(pi.Cmdline, " ")
	}
	return pi.Comm
}

// writeInfoLine appends one JSON line to ProcessFile.
func writeInfoLine(w *capture.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: capture.Now()}
	for len(b) > 0 {
		n := min(len(b), capture.MaxFileChunkData)
		if err := w.WriteFrame(&capture.FileChunk{FrameHeader: h, Path: ProcessFile, Data: b[:n]}); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// closeInfoFile writes the last, empty chunk of ProcessFile.
func closeInfoFile(w *capture.Writer) error {
	return w.WriteFrame(&capture.FileChunk{FrameHeader: capture.FrameHeader{CPU: -1, PID: -1, Time: capture.Now()}, Path: ProcessFile, IsLast: true})
}

// ReadProcessFile decodes the ProcessFile of a capture into processes and
// threads. A missing file yields nothing and no error.
func ReadProcessFile(files *capture.Files) ([]ProcessInfo, []ThreadInfo, error) {
	b, ok := files.Raw(ProcessFile)
	if !ok {
		return nil, nil, nil
	}
	var ps []ProcessInfo
	var ts []ThreadInfo
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		var k struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &k); err != nil {
			return ps, ts, fmt.Errorf("%s line %d: %w", ProcessFile, n, err)
		}
		switch k.Kind {
		case "process":
			var p ProcessInfo
			if err := json.Unmarshal(line, &p); err != nil {
				return ps, ts, fmt.Errorf("%s line %d: %w", ProcessFile, n, err)
			}
			ps = append(ps, p)
		case "thread":
			var t ThreadInfo
			if err := json.Unmarshal(line, &t); err != nil {
				return ps, ts, fmt.Errorf("%s line %d: %w", ProcessFile, n, err)
			}
			ts = append(ts, t)
		}
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return ps, ts, fmt.Errorf("%s: %w", ProcessFile, err)
	}
	return ps, ts, nil
}
