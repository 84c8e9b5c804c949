// Package perf samples tasks with the Linux perf_event interface and
// decodes the records the kernel writes into per-CPU ring buffers.
//
// [OpenWithOptions] opens one sampling event per CPU and per followed task
// (or one per CPU for [AllTasks]), built from [Options], and maps one ring
// buffer per CPU. [Reader.ReadInto] returns the records of all rings:
// samples with callchains (and optionally user registers and stack bytes
// for DWARF unwinding), MMAP2 with build IDs, COMM, FORK, EXIT, context
// switches ([Options.ContextSwitch]), the namespaces of new tasks
// ([Options.Namespaces]) and the kernel's loss and throttling notices;
// [Options.Tracepoints] adds
// tracepoint hits to the same rings, and [Options.Uprobes] the hits of
// user probes (uprobes and uretprobes, defined in tracefs, told apart by
// [Reader.Uprobe]) in a ring of probes per CPU. Timestamps use
// CLOCK_MONOTONIC.
// Records of one CPU are in time order; records of different CPUs are
// not merged, so a consumer that needs a global order sorts by
// [Record.Time] over a window.
//
// [DecodeRecord] decodes a single record from bytes and needs no kernel.
//
// # Concurrency and ownership
//
// A [Reader] owns its event file descriptors and ring mappings; the
// caller must call [Reader.Close], which frees them. A Reader must not be
// read from several goroutines at once: ReadInto reuses internal scratch
// space and the caller's Record. Close, Flush, SetDeadline, Enable and
// Disable may be called from other goroutines; Close and Flush wake a
// ReadInto blocked in epoll_wait. After Close, methods return a wrapped
// [ErrClosed], and further Close calls return nil.
//
// A Record's slices are reused by the next ReadInto or DecodeRecord into
// it: copy what must be kept.
//
// # Privileges
//
// Sampling all tasks or kernel code needs root or CAP_PERFMON, depending
// on kernel.perf_event_paranoid ([Paranoid]); sampling another user's task
// needs ptrace access to it (CAP_SYS_PTRACE) whatever the sysctl says.
// Errors then wrap os.ErrPermission and say which of these refused.
// Namespace records need CAP_PERFMON too: without it the events are
// opened without them ([Reader.Namespaces]).
package perf
