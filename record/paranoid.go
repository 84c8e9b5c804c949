package record

import (
	"errors"
	"os"

	"nsprof/perf"
)

// openPerf opens the perf events. When they are refused because
// kernel.perf_event_paranoid is 2 or more and nsprof lacks CAP_PERFMON, it
// samples user space only (exclude_kernel), as perf record does for such
// users, and says so once: kernel frames are then missing from the
// stacks.
func (r *recorder) openPerf(target perf.Target, popts perf.Options) (*perf.Reader, error) {
	rd, err := perf.OpenWithOptions(target, popts)
	if err == nil || popts.ExcludeKernel || !errors.Is(err, os.ErrPermission) {
		return rd, err
	}
	level, perr := perf.Paranoid()
	if perr != nil || level < 2 {
		return nil, err
	}
	popts.ExcludeKernel = true
	rd, uerr := perf.OpenWithOptions(target, popts)
	if uerr != nil {
		return nil, uerr // what still refuses user-space sampling
	}
	r.userOnly = true
	r.logf("kernel.perf_event_paranoid=%d: sampling user space only (exclude_kernel, as perf record does without CAP_PERFMON); kernel frames are not recorded", level)
	return rd, nil
}
