// Package container reaches the files a process maps, whatever mount
// namespace or container it runs in, and names the container.
//
// [Open] pins a process's root directory and records what it needs to find
// files later (mount table, podman conmon arguments, fuse-overlayfs layers,
// /.flatpak-info) while the process is alive. [Process.OpenMapped] then tries
// several routes in order: /proc/PID/map_files, the pinned root through
// openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS), podman storage layers,
// overlay lower and upper directories, Flatpak deployment directories and a
// mountinfo translation to a host path. Every candidate is checked against
// the mapping's build-id or inode before it is returned, so a different file
// that sits at the same path on the host is never returned. [Identify] says
// whether a process runs on the host, in podman, in Flatpak or in another
// mount namespace.
//
// Nothing here calls setns: a Go process is multithreaded and cannot join a
// mount namespace safely. Symbolic links inside a container are resolved
// inside its root and cannot escape it.
//
// A [Process] is safe for concurrent use. Callers must Close it; Close is
// idempotent and later calls return errors wrapping [os.ErrClosed].
//
// The parsers for podman's containers.json and layers.json, conmon and
// fuse-overlayfs command lines and .flatpak-info are pure functions over
// their input, tested with inline fixtures and fuzzed.
package container
