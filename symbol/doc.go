// Package symbol turns addresses into function names, and where an object
// has DWARF, into source lines and inline frames ([Symbols.Frames]).
//
// It reads the symbol tables of ELF objects ([File]): .symtab, .dynsym,
// MiniDebugInfo (.gnu_debugdata) and Go's .gopclntab, and finds separate
// debug files the way GDB does ([Loader]): by build-id under
// /usr/lib/debug/.build-id, by .gnu_debuglink name (with its CRC32 checked)
// next to the object, in its .debug directory and under the debug
// directories, inside the process's root first and on the host last, and
// finally from a debuginfod server ([Debuginfod]). It also parses kernel
// symbols ([Kallsyms]), JIT perf maps ([ParsePerfMap]) and jitdumps
// ([ParseJITDump]), and demangles C++ and Rust names ([Demangle]).
//
// Addresses are link-time virtual addresses of one file. A sampled address
// addr in a mapping [start, end) at file offset off becomes the link-time
// address [File.Vaddr](addr - start + off).
//
// Parsers take an io.Reader or io.ReaderAt and are hardened against
// hostile input: they never panic (debug/elf and debug/gosym panics are
// recovered), and sizes read from a file are bounded by the file's size
// before anything is allocated. Malformed input is reported as a
// *[FormatError] naming the byte offset, or a *[SyntaxError] naming the line.
//
// A [Table] and a [Symbols] are immutable and safe for concurrent use. A
// [File] must not be used concurrently with its Close; callers that opened
// it own it and must Close it. A [Loader] may be used concurrently when its
// fields are not modified.
package symbol
