package analyze

import (
	"fmt"

	"nsprof/capture"
)

// loadStacks adds the records of [capture.StacksFile] (the stacks of
// off-CPU intervals and blocking calls, which are not SAMPLE frames so
// that Sysprof does not count them as CPU time) as samples, after the
// SAMPLE frames'. A file cut short keeps the records before the cut,
// with a warning.
func (b *builder) loadStacks() {
	if !b.files.has(capture.StacksFile) {
		return
	}
	data, err := b.files.lookup(capture.StacksFile)
	if err == nil {
		var s capture.Sample
		err = capture.DecodeStacks(data, func(r *capture.StackRecord) {
			s.Time, s.PID, s.TID, s.CPU, s.Addrs = r.Time, r.PID, r.TID, r.CPU, r.Addrs
			b.addrSlots += int64(len(r.Addrs))
			b.time(r.Time)
			b.sample(&s)
		})
	}
	if err != nil {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("off-CPU and blocking stacks: %v", err))
	}
	b.files.forget(capture.StacksFile)
}
