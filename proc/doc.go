// Package proc parses the Linux /proc files that nsprof's recorder and
// symbolizer need: memory maps, mount tables, process status and stat,
// system counters, cgroup membership, command lines and namespace links.
//
// Every file kind has a pure parser, ParseX(io.Reader), that does no I/O
// beyond reading its argument, so it can be tested with inline fixtures and
// fuzzed on any operating system. Thin wrappers read the files: methods on
// [FS], whose Root can point at a fake /proc tree or a container's /proc, and
// package-level functions such as [ReadMaps] that use [DefaultFS]. [Self]
// names the calling process. The mount table formats, Dev and SyntaxError
// are package internal/procfmt's, which the reports share; proc keeps
// their names as aliases.
//
// Malformed input is reported as a *[SyntaxError] naming the file and the
// 1-based line; parsers name the file kind ("maps"), the wrappers replace it
// with the path ("/proc/42/maps"). A parser that fails returns the zero value
// of its result. Lines longer than 1 MiB and whole files larger than their
// documented bound are rejected rather than buffered.
//
// A process can exit at any moment. Opening a file of a process that is gone
// returns an error matching [io/fs.ErrNotExist]; reading a file that was
// opened before the exit may also fail with ESRCH or return fewer lines.
// Values read from different files of one process are not a consistent
// snapshot.
//
// The functions are safe for concurrent use.
package proc
