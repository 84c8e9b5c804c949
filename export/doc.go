// Package export writes the samples of an [analyze.View] in the formats of
// other tools: pprof protocol buffers (go tool pprof, Pyroscope),
// speedscope JSON, folded stacks (flamegraph.pl, inferno) and a standalone
// SVG flame graph. [Generate] dispatches on a [Format] and writes to an
// io.Writer. [Gmon] writes glibc's gmon.out of one file, shared library
// or executable, for GNU gprof: the CPU samples and the calls of record
// --calls in that file's link-time addresses. Allocations are exported the same way, by a view weighing an
// allocation type (alloc_space, inuse_space, ...).
//
// Every format counts samples exactly as the reports of the same view do:
// a function's self and total samples in an export equal those of
// `nsprof report` with the same filters, weighed by the view's sample
// type ([analyze.ViewOptions.Value]).
//
// Concurrency: the functions only read the view; several may run at once
// on one view.
package export
