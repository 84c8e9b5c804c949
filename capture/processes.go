package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
)

// ProcessFile is the embedded file in which nsprof records, one JSON object
// per line, what later symbolization across namespaces needs to know about
// each process and thread while it lives. The recorder writes it as
// FILE_CHUNK frames as processes appear ([Writer.AddProcessInfo],
// [Writer.AddThreadInfo]) and closes it at the end of the recording
// ([Writer.CloseProcessFile]), so a capture cut short still holds the lines
// written so far. Other readers ignore it.
const ProcessFile = "__nsprof_processes__"

// Kinds of the lines of a [ProcessFile]. Lines of another kind are skipped,
// so later recorders may add kinds.
const (
	KindProcess = "process"
	KindThread  = "thread"
)

// maxProcessLine bounds one line of a ProcessFile when it is read.
const maxProcessLine = 16 << 20

// ProcessInfo identifies a process seen during a recording: one line of
// kind "process" in a [ProcessFile].
type ProcessInfo struct {
	// Kind is [KindProcess].
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
	// CmdlineRedacted says the recorder cut Cmdline to the program's name
	// (nsprof record --redact-cmdlines).
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

// ThreadInfo is one event of a thread, a line of kind "thread" in a
// [ProcessFile]: its creation (with its id inside its PID namespace, when
// it has one of its own), a new name, or its exit. A thread may have
// several lines; the fields set add up. Lines written for a task a process
// in a PID namespace created (see the recorder's clone tracking) may be of
// a child process rather than of a thread: the process's own frames tell
// them apart.
type ThreadInfo struct {
	// Kind is [KindThread].
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

// EncodeProcessInfo returns p as one line of a [ProcessFile], newline
// included, with its Kind set to [KindProcess].
func EncodeProcessInfo(p ProcessInfo) ([]byte, error) {
	p.Kind = KindProcess
	return encodeProcessLine(p)
}

// EncodeThreadInfo returns t as one line of a [ProcessFile], newline
// included, with its Kind set to [KindThread].
func EncodeThreadInfo(t ThreadInfo) ([]byte, error) {
	t.Kind = KindThread
	return encodeProcessLine(t)
}

func encodeProcessLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: encode %T: %w", ProcessFile, v, err)
	}
	return append(b, '\n'), nil
}

// AddProcessInfo appends p to the capture's [ProcessFile] (see
// [EncodeProcessInfo]), in FILE_CHUNK frames stamped with [Now].
func (w *Writer) AddProcessInfo(p ProcessInfo) error {
	b, err := EncodeProcessInfo(p)
	if err != nil {
		return err
	}
	return w.addProcessLine(b)
}

// AddThreadInfo appends t to the capture's [ProcessFile] (see
// [EncodeThreadInfo]), in FILE_CHUNK frames stamped with [Now].
func (w *Writer) AddThreadInfo(t ThreadInfo) error {
	b, err := EncodeThreadInfo(t)
	if err != nil {
		return err
	}
	return w.addProcessLine(b)
}

// addProcessLine writes line as chunks of the ProcessFile, not its last.
func (w *Writer) addProcessLine(b []byte) error {
	h := FrameHeader{CPU: -1, PID: -1, Time: w.now()}
	for len(b) > 0 {
		n := min(len(b), MaxFileChunkData)
		if err := w.WriteFrame(&FileChunk{FrameHeader: h, Path: ProcessFile, Data: b[:n]}); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// CloseProcessFile writes the last, empty chunk of the capture's
// [ProcessFile].
func (w *Writer) CloseProcessFile() error {
	return w.WriteFrame(&FileChunk{FrameHeader: FrameHeader{CPU: -1, PID: -1, Time: w.now()}, Path: ProcessFile, IsLast: true})
}

// DecodeProcessFile parses the contents of a [ProcessFile] into its
// processes and threads, in file order. Lines of an unknown kind are
// skipped. On a malformed line it returns the lines before it and an error
// naming the file and the line number.
func DecodeProcessFile(b []byte) ([]ProcessInfo, []ThreadInfo, error) {
	var ps []ProcessInfo
	var ts []ThreadInfo
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxProcessLine)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		// Each line is decoded once, as either kind: decoding its kind
		// first, then the line again, was a tenth of a report's
		// reading of a capture of a thousand processes, on the
		// goroutine that decodes its symbols. A line that does not
		// decode so (a field of the other kind of the wrong type) is
		// decoded as before.
		var u processLine
		ok := parseProcessLine(line, &u)
		if !ok {
			u = processLine{}
			ok = json.Unmarshal(line, &u) == nil
		}
		if ok {
			switch u.Kind {
			case KindProcess:
				ps = append(ps, u.ProcessInfo)
			case KindThread:
				ts = append(ts, ThreadInfo{Kind: u.Kind, Time: u.Time, TID: u.TID, PID: u.PID, NSpid: u.NSpid, Comm: u.Comm, Exited: u.Exited})
			}
			continue
		}
		var k struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &k); err != nil {
			return ps, ts, fmt.Errorf("%s line %d: %w", ProcessFile, n, err)
		}
		switch k.Kind {
		case KindProcess:
			var p ProcessInfo
			if err := json.Unmarshal(line, &p); err != nil {
				return ps, ts, fmt.Errorf("%s line %d: %w", ProcessFile, n, err)
			}
			ps = append(ps, p)
		case KindThread:
			var t ThreadInfo
			if err := json.Unmarshal(line, &t); err != nil {
				return ps, ts, fmt.Errorf("%s line %d: %w", ProcessFile, n, err)
			}
			ts = append(ts, t)
		}
	}
	if err := sc.Err(); err != nil {
		return ps, ts, fmt.Errorf("%s line %d: %w", ProcessFile, n+1, err)
	}
	return ps, ts, nil
}

// processLine holds a line of a [ProcessFile] of either kind: the fields
// of a [ThreadInfo] are those of a [ProcessInfo] and two more.
type processLine struct {
	ProcessInfo
	TID    int  `json:"tid"`
	Exited bool `json:"exited,omitempty"`
}

// ReadProcessFile decodes the [ProcessFile] held in files (see
// [DecodeProcessFile]). A capture without one yields nothing and no error.
func ReadProcessFile(files *Files) ([]ProcessInfo, []ThreadInfo, error) {
	b, ok := files.Raw(ProcessFile)
	if !ok {
		return nil, nil, nil
	}
	return DecodeProcessFile(b)
}
