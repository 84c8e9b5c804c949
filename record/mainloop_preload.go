package record

import (
	"errors"
	"fmt"

	"nsprof/perf"
)

// SpeedtrackLibName is the file name of the LD_PRELOAD library
// --speedtrack falls back on where user probes cannot be placed
// (preload/speedtrack.c), which `make build` puts next to nsprof.
const SpeedtrackLibName = "libnsprof-speedtrack.so"

// SpeedtrackLibEnv names the environment variable that overrides where
// [FindSpeedtrackLib] looks for the library.
const SpeedtrackLibEnv = "NSPROF_SPEEDTRACK_LIB"

// speedtrackFDVar is the variable through which the library gets the
// capture it appends its marks to.
const speedtrackFDVar = "NSPROF_SPEEDTRACK_FD"

// FindSpeedtrackLib returns the absolute path of the --speedtrack preload
// library: the file $NSPROF_SPEEDTRACK_LIB names, else
// libnsprof-speedtrack.so next to the running executable or in
// ../lib/nsprof beside it.
func FindSpeedtrackLib() (string, error) {
	return findPreloadLib(SpeedtrackLibName, SpeedtrackLibEnv)
}

// mainLoopPreload decides how Options.MainLoop is recorded: with user
// probes when this process can place them (ok false), else (or with
// Options.SpeedtrackPreload) with the preload library, through the trace
// variable it returns, whose capture the recording merges at the end:
// marks of the time GLib's main loop is busy between two polls, on each
// process's main thread (see preload/speedtrack.c). The fallback needs a
// command to preload, and no other preload.
func (r *recorder) mainLoopPreload() (tv TraceVar, ok bool, err error) {
	o := r.opts
	why := errors.New("--speedtrack-preload")
	if !o.SpeedtrackPreload {
		if why = perf.UprobesUsable(); why == nil {
			return tv, false, nil
		}
	}
	switch {
	case len(o.Command) == 0:
		return tv, false, fmt.Errorf("--speedtrack: %v, and the preload fallback needs a command to start", why)
	case o.Memprof || o.SysprofMemprof:
		return tv, false, fmt.Errorf("--speedtrack: %v, and its preload fallback cannot be combined with a memprof preload", why)
	}
	lib, err := FindSpeedtrackLib()
	if err != nil {
		return tv, false, fmt.Errorf("--speedtrack: %v; preload fallback: %w", why, err)
	}
	r.notef("--speedtrack: %v: main-loop iterations are measured by %s (time busy between GLib's polls)", why, lib)
	return TraceVar{Name: speedtrackFDVar, Extra: []string{"NSPROF_MEMPROF_PRELOAD=" + lib}, Header: true}, true, nil
}
