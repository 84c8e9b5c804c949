// Package archtest holds no code: its test enforces the import rules of
// nsprof's architecture, in which data flows from the sources (perf, bpf, proc,
// container, record) through the capture file to the analysis and its
// views (analyze, export, report):
//
//   - analyze, export and report read captures only through capture: they
//     import neither record nor the kernel-facing packages (perf, bpf, proc,
//     container), directly or through another package, and do not import
//     internal/unix directly;
//   - record does not import analyze, export or report;
//   - internal/unix is the only package importing golang.org/x/sys/unix.
//
// The rules are checked over the import declarations of every Go file of
// the module, test files and files of every build tag included. A second
// test checks, with go list, that the nsprof binary links none of the
// OTLP client, which only nsprof-otlp (cmd/nsprof with the otlp tag) has.
package archtest
