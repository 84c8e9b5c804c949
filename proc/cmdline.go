package proc

import (
	"bytes"
	"io"
)

// maxCmdline bounds /proc/PID/cmdline. Linux limits the argument and
// environment area to 6 MiB plus one page per string; a process that
// rewrote its arguments can make the kernel return part of its
// environment too.
const maxCmdline = 16 << 20

// ParseCmdline parses the /proc/PID/cmdline format: arguments separated and
// usually terminated by NUL bytes. Empty input, as for kernel threads and
// zombies, gives a nil slice and no error. A process that rewrote its
// argument area may not end in NUL; the text after the last NUL is then the
// final argument. On error it returns nil.
func ParseCmdline(r io.Reader) ([]string, error) {
	data, err := readAll(r, "cmdline", maxCmdline)
	if err != nil || len(data) == 0 {
		return nil, err
	}
	data = bytes.TrimSuffix(data, []byte{0})
	args := make([]string, 0, bytes.Count(data, []byte{0})+1)
	for arg := range bytes.SplitSeq(data, []byte{0}) {
		args = append(args, string(arg))
	}
	return args, nil
}

// ReadCmdline reads /proc/PID/cmdline.
func (fs FS) ReadCmdline(pid int) ([]string, error) {
	return parseFile(fs.pidPath(pid, "cmdline"), ParseCmdline)
}

// ReadCmdline reads /proc/PID/cmdline through [DefaultFS].
func ReadCmdline(pid int) ([]string, error) { return DefaultFS.ReadCmdline(pid) }
