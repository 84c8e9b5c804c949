// Package unwind walks user stacks of x86-64 processes from a sample's
// registers and a copy of the top of its stack, the way perf's
// --call-graph dwarf does, but while recording.
//
// [Load] reads an object's call frame information (.eh_frame, found
// through .eh_frame_hdr when section headers are missing, and
// .debug_frame, also from a separate debug file) and interprets every FDE
// once into a [Table]: rows sorted by address, each saying how to find the
// canonical frame address (rsp or rbp plus an offset, the PLT expression,
// or a signal frame's saved rsp), where rbp was saved and where the return
// address is. Go functions that no CFI covers (stripped Go binaries have
// none) get rows from the stack-pointer deltas of .gopclntab. A [Cache]
// keeps tables per build-id within a memory bound. [JITTable] interprets
// the .eh_frame a JIT wrote in its jitdump for code in anonymous memory.
//
// [Unwind] follows those rows from frame to frame, falls back to frame
// pointers where the Mapper gives no CFI (JIT code in anonymous memory that
// no jitdump describes), and says why it
// stopped: [StopTruncated] when a frame lies beyond the copied stack bytes,
// rather than inventing frames.
//
// Parsers take byte slices and never panic; errors are *[FormatError]s
// naming the section and byte offset.
package unwind
