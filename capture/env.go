package capture

import (
	"fmt"
	"os"
	"strconv"

	"nsprof/internal/unix"
)

// TraceFDEnv is the environment variable through which a profiler hands a
// capture file descriptor to the program it spawns.
const TraceFDEnv = "SYSPROF_TRACE_FD"

// NewWriterFromEnv returns a Writer on the file descriptor named by
// SYSPROF_TRACE_FD, as libsysprof-capture's
// sysprof_capture_writer_new_from_env does: the descriptor is duplicated,
// truncated and given a fresh header. It returns [ErrNoTraceFD] when the
// variable is not set. Close the Writer before exiting so the profiler sees
// every frame.
func NewWriterFromEnv(opts WriterOptions) (*Writer, error) {
	return NewWriterFromEnvVar(TraceFDEnv, opts)
}

// NewWriterFromEnvVar is [NewWriterFromEnv] for another variable, such as
// GJS_TRACE_FD or GTK_TRACE_FD.
func NewWriterFromEnvVar(name string, opts WriterOptions) (*Writer, error) {
	v := os.Getenv(name)
	if v == "" {
		if name == TraceFDEnv {
			return nil, ErrNoTraceFD
		}
		return nil, fmt.Errorf("%s is not set", name)
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd <= 2 {
		return nil, fmt.Errorf("%s=%q: not a file descriptor above 2", name, v)
	}
	return NewWriterFromFD(fd, opts)
}

// NewWriterFromFD returns a Writer on a duplicate of fd, which it truncates
// first. The Writer owns the duplicate; the caller keeps fd.
func NewWriterFromFD(fd int, opts WriterOptions) (*Writer, error) {
	nfd, err := unix.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("dup trace fd %d: %w", fd, err)
	}
	if err := unix.Ftruncate(nfd, 0); err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("truncate trace fd %d: %w", fd, err)
	}
	f := os.NewFile(uintptr(nfd), fmt.Sprintf("trace-fd-%d", fd))
	if _, err := f.Seek(0, 0); err != nil {
		// Not seekable (a pipe): the header time range cannot be patched.
		_ = err
	}
	w, err := NewWriterWithOptions(f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.closer = f
	return w, nil
}
