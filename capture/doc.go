// Package capture reads and writes GNOME Sysprof capture files (".syscap",
// format version 1), the single contract between nsprof's recorder and its
// reports.
//
// A capture is a 256-byte [FileHeader] followed by frames. Every frame starts
// with a 24-byte header (length, CPU, PID, time, type) and is padded with zero
// bytes to a multiple of 8; no frame exceeds [MaxFrameLen] bytes. Frames are
// stored in the writer's byte order, which the header records; [Reader]
// decodes both orders.
//
// Each frame type 1–17 has a Go struct implementing [Frame]: [Timestamp],
// [Sample], [Map], [Process], [Fork], [Exit], [JITMap], [CounterDefine],
// [CounterSet], [Mark], [Metadata], [Log], [FileChunk], [Allocation],
// [Overlay], [Trace] and [DBusMessage].
//
// Compatibility: Sysprof 3.46 (Debian 12) stops reading at the first frame
// whose type is 16 (TRACE) or higher. A [Writer] therefore emits only types
// 1–15 unless [WriterOptions.NewFrameTypes] is set: a [Trace] is written as a
// SAMPLE frame with its entering bit, exactly as libsysprof-capture's
// sysprof_capture_writer_add_trace does, and a [DBusMessage] is refused.
//
// Robustness: a [Reader] never panics on damaged input. It returns every frame
// before the damage and then a [*FormatError] naming the byte offset. Memory
// use is bounded by the largest frame (64 KiB) plus what the caller keeps.
//
// Concurrency: a Writer or Reader must not be used from several goroutines at
// once. Close a Writer to flush it and patch the header's end time; Close is
// idempotent and later writes fail with [ErrClosed].
//
// Beyond the frames, the recorder and the reports share only what this
// package names: the embedded files [SymbolsFile], [LinesFile],
// [ProcessFile], [KallsymsFile] and [KernelNotesFile], the METADATA keys (MetaEvent and the
// other Meta* constants) and the lost-samples counter
// ([LostSamplesCategory]). [MapFile] and [ReadMapped] let a reader decode
// a capture file in place.
//
// A Go program started by Sysprof or nsprof with SYSPROF_TRACE_FD set can emit
// marks, logs and counters into the profiler's capture with
// [NewWriterFromEnv], as libsysprof-capture's
// sysprof_capture_writer_new_from_env does.
package capture
