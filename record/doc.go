// Package record is nsprof's recorder: [Record] samples processes with
// perf events (package perf), follows their forks, execs and exits
// through /proc (package proc), and writes a Sysprof capture (package
// capture) as it goes.
//
// [Options] choose what is recorded: a command spawned and held before its
// exec, so that its first instruction is sampled, existing PIDs, or the
// whole system; CPU stacks from the kernel's frame-pointer callchains, or
// user stacks unwound while recording from copied stack bytes and the
// files' call frame information (package unwind); system counters (CPU,
// memory, disk, network, RAPL energy); the marks, logs and counters a
// command writes to SYSPROF_TRACE_FD (and GJS_TRACE_FD, GTK_TRACE_FD);
// heap allocations and frees from the memprof LD_PRELOAD library, or from
// Sysprof's own collector through SYSPROF_CONTROL_FD.
//
// Mapped files are opened while their processes live, inside containers
// too (package container), and checked by build-id or inode. At the end
// the symbols of every mapped file, with source lines and inline frames
// where it has DWARF, and the process table go into the capture, so that
// it reports without the recorded files and on other machines; command
// lines of other users are redacted ([Redaction]).
//
// Losses are counted, never hidden: [Stats] counts the samples the kernel
// dropped, the allocation events and collector frames lost to full rings,
// and the capture's metadata keeps them for the reports.
//
// Recording needs perf events: root or CAP_PERFMON, depending on
// kernel.perf_event_paranoid (see package perf). One Record call runs one
// recording; it does not close the capture writer it is given.
package record
