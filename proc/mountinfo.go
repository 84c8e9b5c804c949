package proc

import (
	"io"

	"nsprof/internal/procfmt"
)

// The mount table formats are parsed by package procfmt, which the reports
// share; these names keep proc's API.
type (
	// MountOption is one comma-separated mount option (see
	// [procfmt.MountOption]).
	MountOption = procfmt.MountOption
	// MountOptions is a list of mount options (see [procfmt.MountOptions]).
	MountOptions = procfmt.MountOptions
	// Mount is one line of /proc/PID/mountinfo (see [procfmt.Mount]).
	Mount = procfmt.Mount
	// MountEntry is one line of /proc/PID/mounts (see [procfmt.MountEntry]).
	MountEntry = procfmt.MountEntry
)

// ParseMountInfo parses the /proc/PID/mountinfo format. On error it returns
// nil and a *[SyntaxError] naming the line.
func ParseMountInfo(r io.Reader) ([]Mount, error) { return procfmt.ParseMountInfo(r) }

// ParseMounts parses the /proc/PID/mounts (fstab) format. The last two
// fields are optional. On error it returns nil and a *[SyntaxError].
func ParseMounts(r io.Reader) ([]MountEntry, error) { return procfmt.ParseMounts(r) }

// ReadMountInfo reads /proc/PID/mountinfo, the mount table of pid's mount
// namespace as seen from its root.
func (fs FS) ReadMountInfo(pid int) ([]Mount, error) {
	return parseFile(fs.pidPath(pid, "mountinfo"), ParseMountInfo)
}

// ReadMounts reads /proc/PID/mounts.
func (fs FS) ReadMounts(pid int) ([]MountEntry, error) {
	return parseFile(fs.pidPath(pid, "mounts"), ParseMounts)
}

// ReadMountInfo reads /proc/PID/mountinfo through [DefaultFS].
func ReadMountInfo(pid int) ([]Mount, error) { return DefaultFS.ReadMountInfo(pid) }

// ReadMounts reads /proc/PID/mounts through [DefaultFS].
func ReadMounts(pid int) ([]MountEntry, error) { return DefaultFS.ReadMounts(pid) }
