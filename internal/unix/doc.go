// Package unix is the only nsprof package that imports golang.org/x/sys/unix.
//
// It re-exports the few system calls, types and constants nsprof uses, so the
// rest of the tree names one small, reviewable surface. On systems other than
// Linux the functions return an error wrapping [ErrNotSupportedOnOS], so that
// pure parsers in other packages still build and test there.
//
// Files are split by concern: clock and file descriptors in unix_linux.go,
// perf_event_open in perf_linux.go, the device and inode of /proc magic
// links in proc_linux.go, openat2 and file identity inside containers in
// container_linux.go, descriptors passed over Unix sockets in
// control_linux.go and memprof_linux.go, thread credentials in
// creds_linux.go and raw writes in write_linux.go. Stubs for other systems
// live in the matching _other.go files.
package unix
