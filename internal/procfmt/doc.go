// Package procfmt parses the text formats of the /proc files that both the
// recorder and the reports read: mount tables (/proc/PID/mountinfo and
// /proc/PID/mounts) and the device numbers and errors they share with the
// other parsers of package proc.
//
// It does no I/O beyond reading the io.Reader it is given, so the reports,
// which may not import proc, parse the mountinfo files a capture embeds
// with the same code that parses them on the live system. proc re-exports
// these types and functions and reads the files.
//
// Malformed input is reported as a *[SyntaxError] naming the file kind
// ("mountinfo") and the 1-based line; a parser that fails returns the zero
// value of its result. Lines longer than [MaxLine] are rejected rather than
// buffered.
package procfmt
