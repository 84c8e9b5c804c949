// Command nsprof profiles Linux processes from outside, containers included,
// into GNOME Sysprof captures, and reports on them.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"nsprof/internal/outfile"
	"nsprof/record"
)

// cpuProfileEnv names a file to which nsprof writes a pprof CPU profile of
// itself, for finding where the profiler spends its own time.
const cpuProfileEnv = "NSPROF_CPUPROFILE"

// memProfileEnv names a file to which nsprof writes a pprof profile of its
// own allocations when it ends (go tool pprof -sample_index=alloc_space).
const memProfileEnv = "NSPROF_MEMPROFILE"

func main() {
	// This program has the hidden command that fills the symbol cache
	// in the background: recordings may start it (tests running
	// commands in-process do not, see record.FillProgram).
	record.FillProgram = record.SelfFillProgram
	stopProfile := profileSelf(os.Getenv(cpuProfileEnv))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	stopProfile()
	writeAllocs(os.Getenv(memProfileEnv))
	os.Exit(exitStatus(err, os.Stderr))
}

// profileSelf starts a CPU profile written to path, when path is set, and
// returns the function that ends it.
func profileSelf(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := outfile.Create(path, outfile.Options{Replace: true})
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Discard()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nsprof: %s: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// writeAllocs writes the profile of the allocations made so far to path,
// when path is set.
func writeAllocs(path string) {
	if path == "" {
		return
	}
	// The profile tells the allocations up to the last collection: one
	// now has it tell them all.
	runtime.GC()
	f, err := outfile.Create(path, outfile.Options{Replace: true})
	if err == nil {
		if err = pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			f.Discard()
		} else {
			err = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nsprof: %s: %v\n", memProfileEnv, err)
	}
}
