package capture

// This file names what nsprof record writes into a capture beyond the
// frames themselves, and what nsprof's reports read back.

// Keys of the METADATA frames ([Metadata.ID]) nsprof record writes and
// nsprof's reports read. Values are text; counts are decimal.
const (
	// MetaVersion is the version of the nsprof that recorded.
	MetaVersion = "nsprof.version"
	// MetaMode is what was recorded: a command, pids, a container or the
	// whole system ("command", "pids", "container", "system").
	MetaMode = "nsprof.mode"
	// MetaEvent is the sampling event, as perf names it.
	MetaEvent = "nsprof.event"
	// MetaFrequency is the sampling frequency in Hz.
	MetaFrequency = "nsprof.frequency"
	// MetaCallGraph is how stacks were taken ("fp": frame pointers).
	MetaCallGraph = "nsprof.call-graph"
	// MetaRedactCmdlines is the command-line redaction policy applied to
	// the capture's [ProcessFile] and PROCESS frames.
	MetaRedactCmdlines = "nsprof.redact-cmdlines"
	// MetaCommand is the command recorded, its words joined by spaces.
	MetaCommand = "nsprof.command"
	// MetaPIDs are the pids recorded, comma-separated.
	MetaPIDs = "nsprof.pids"
	// MetaEnvNames are the names (never the values) of the environment
	// variables set for the command, comma-separated.
	MetaEnvNames = "nsprof.env-names"
	// MetaHostname is the recording machine's host name (uname's
	// nodename).
	MetaHostname = "hostname"

	// MetaSymbolsComplete is "1" when the recorder named, in its
	// symbol bundle, every sampled address of a file it could reach,
	// in every image of each process (those an exec replaced too):
	// reports then look at no file on the machine they run on, which
	// could only name again what the recorder named or could not.
	MetaSymbolsComplete = "nsprof.symbols.complete"

	// MetaMemprof is "1" when allocations were recorded (nsprof record
	// --memprof).
	MetaMemprof = "nsprof.memprof"
	// MetaMemprofSampleBytes is the sampling interval: about one
	// allocation recorded per that many bytes allocated (0: every one).
	MetaMemprofSampleBytes = "nsprof.memprof.sample-bytes"
	// MetaMemprofTSCTimes counts the allocation events whose time came
	// from the TSC rather than the clock.
	MetaMemprofTSCTimes = "nsprof.memprof.tsc-times"
	// MetaMemprofLost counts the allocation events lost to full rings.
	MetaMemprofLost = "nsprof.memprof.lost"
	// MetaMemprofSignalDropped counts the allocation events of signal
	// handlers dropped because their thread's side slots were taken.
	MetaMemprofSignalDropped = "nsprof.memprof.signal-dropped"

	// MetaCollectorFrames counts the frames the SYSPROF_CONTROL_FD
	// collector rings delivered.
	MetaCollectorFrames = "nsprof.collector.frames"
	// MetaCollectorFull counts the times a collector ring was too full
	// for its thread's next frame.
	MetaCollectorFull = "nsprof.collector.full"
	// MetaCollectorBlockedNs is the time, in nanoseconds, threads could
	// not write to their full collector rings.
	MetaCollectorBlockedNs = "nsprof.collector.blocked-ns"
	// MetaCollectorLostEstimate estimates the frames lost meanwhile, at
	// the rate each thread filled its ring.
	MetaCollectorLostEstimate = "nsprof.collector.lost-estimate"

	// MetaSpanCalls counts the marks of probed calls (--speedtrack,
	// --span) written.
	MetaSpanCalls = "nsprof.spans.calls"
	// MetaSpanUnpaired counts the probed calls not marked: returns
	// without their entry, entries without their return, calls nested
	// too deep.
	MetaSpanUnpaired = "nsprof.spans.unpaired"
	// MetaSpanOpen counts the probed calls still running when the
	// recording stopped, marked up to its end.
	MetaSpanOpen = "nsprof.spans.open"
)

// KallsymsFile is where nsprof record and Sysprof 45+ embed the kernel's
// symbol table; both store it gzip-compressed, as KallsymsFile + ".gz"
// ([Files.Lookup] finds either).
const KallsymsFile = "/proc/kallsyms"

// KernelNotesFile is where nsprof record embeds the running kernel's ELF
// notes, a copy of /sys/kernel/notes: its NT_GNU_BUILD_ID note names the
// kernel build (vmlinux) the kernel frames come from, which exports give
// as the build-id of the kernel's mapping.
const KernelNotesFile = "/sys/kernel/notes"

// The counter in which the recorder counts the samples the kernel dropped
// (perf's PERF_RECORD_LOST), as a [Counter]'s Category and Name.
const (
	LostSamplesCategory = "Sampler"
	LostSamplesName     = "Lost Samples"
)
