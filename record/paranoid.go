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
//
// Per-CPU sampling (perf.Options.SampleCPUWide) needs CAP_PERFMON or
// kernel.perf_event_paranoid <= 0 too: without, it samples per task,
// as it does without --off-cpu, and says so with -v.
func (r *recorder) openPerf(target perf.Target, popts perf.Options) (*perf.Reader, error) {
	rd, err := perf.OpenWithOptions(target, popts)
	if err != nil && popts.SampleCPUWide && errors.Is(err, os.ErrPermission) {
		popts.SampleCPUWide = false
		r.perTaskSampling = true
		r.notef("sampling per task, not per CPU (%v): each context switch of the recorded threads costs them more", err)
		rd, err = perf.OpenWithOptions(target, popts)
	}
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
