package record

import (
	"os"

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
