package record

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"

	"nsprof/capture"
)

// embedHostFiles stores the files reports need about the host: mounts and
// CPU model, as Sysprof does.
func (r *recorder) embedHostFiles() {
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: capture.Now()}
	for _, f := range []string{"mounts", "cpuinfo"} {
		if b, err := os.ReadFile(r.opts.FS.Root + "/" + f); err == nil {
			r.w.AddFileBytes(h, "/proc/"+f, b)
		}
	}
}

// embedKallsyms stores /proc/kallsyms, compressed as Sysprof 45+ stores it,
// for naming kernel frames on another machine. It runs at the end, so the
// time it takes does not delay the start of the recording. The file (5 MB
// and more) is streamed through gzip in small buffers, and only the
// compressed copy (about a fifth) is kept for naming the sampled kernel
// addresses (kernelTable): the text itself would stay in memory while the
// symbol bundle reads the sampled files' DWARF, the recorder's peak.
func (r *recorder) embedKallsyms() {
	if r.kallsymsGz == nil {
		gz, n, zero, err := readKallsymsGz(r.opts.FS.Root + "/kallsyms")
		if err != nil {
			r.logf("kernel symbols not recorded: %v", err)
			return
		}
		if zero {
			r.logf("/proc/kallsyms shows zero addresses (kptr_restrict): kernel frames will not be named")
		}
		r.kallsymsGz, r.kallsymsLen = gz, n
	}
	// A later capture of a split recording writes the same kernel's.
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	if err := r.w.AddFileBytes(h, capture.KallsymsFile+".gz", r.kallsymsGz); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
}

// readKallsymsGz reads the kallsyms file at path through gzip (best
// speed, klauspost/compress: see [capture.Writer.AddFileGzipLevel]) and
// returns the compressed bytes, the length of the text, and
// whether its first address is zero (kptr_restrict). /proc/kallsyms is
// read once: the names given at the end come from the bytes the capture
// embeds.
func readKallsymsGz(path string) (gz []byte, n int, zero bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(len(zeroKallsymsAddr))
	zero = string(head) == zeroKallsymsAddr
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	m, err := io.Copy(zw, br)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("%s: %w", path, err)
	}
	// Kept to the end: no more than it needs.
	return bytes.Clone(buf.Bytes()), int(m), zero, nil
}

// zeroKallsymsAddr begins a kallsyms whose addresses are hidden.
const zeroKallsymsAddr = "0000000000000000 "

// embedKernelNotes stores /sys/kernel/notes (a few hundred bytes), whose
// GNU build-id note identifies the kernel the kernel frames come from.
func (r *recorder) embedKernelNotes() {
	b, err := os.ReadFile(r.opts.SysRoot + "/kernel/notes")
	if err != nil {
		r.logf("kernel build-id not recorded: %v", err)
		return
	}
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	if err := r.w.AddFileBytes(h, capture.KernelNotesFile, b); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
}
