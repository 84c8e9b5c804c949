package main

import (
	"errors"
	"regexp"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"nsprof/analyze"
)

// selectFlags are the flags that select and shape samples, shared by
// report and export so that both count the same samples.
type selectFlags struct {
	pids, tids   []int
	since, until string
	by           string
	value        string
	offCPU, wall bool
	blocking     bool
	noInline     bool
	addresses    bool
	view         analyze.ViewOptions
}

// add registers the flags on f.
func (s *selectFlags) add(f *pflag.FlagSet) {
	f.IntSliceVarP(&s.pids, "pid", "p", nil, "only samples of processes `PID[,PID...]`")
	f.IntSliceVarP(&s.tids, "tid", "t", nil, "only samples of threads `TID[,TID...]`")
	f.StringVarP(&s.view.Filter.Comm, "comm", "c", "", "only processes whose comm or command line matches `REGEXP`")
	f.StringVar(&s.view.Filter.Container, "container", "", "only processes in containers matching `LABEL` (host, podman name or id prefix, flatpak app id)")
	f.StringVar(&s.view.Filter.DSO, "dso", "", "only samples with a frame in a DSO whose name contains `TEXT`")
	f.StringVar(&s.since, "since", "", "only samples from `TIME` after the capture's start (seconds, or a duration like 1.5s)")
	f.StringVar(&s.until, "until", "", "only samples before `TIME` after the capture's start")
	f.StringVar(&s.by, "by", "", "one section per `GROUP`: process, thread, container, comm (merges processes of the same name), state (on-CPU, and off-CPU by task state) or dso (the object of the function each sample was taken in, as perf report --sort dso)")
	f.BoolVar(&s.view.HideKernel, "hide-kernel", false, "leave kernel frames out: their time counts in the calling user function")
	f.StringVar(&s.view.Focus, "focus", "", "only samples through the function named `NAME`, their stacks starting at it")
	f.StringVar(&s.view.FocusDSO, "focus-dso", "", "only samples with a frame in a DSO whose name contains `TEXT`, their stacks starting at its outermost frame")
	f.StringVar(&s.value, "value", "", "weigh stacks by sample type `TYPE`: samples (default), cpu, of a --off-cpu capture off_cpu and wall, of a --blocking capture blocking, of a --memprof capture alloc_space, alloc_objects, inuse_space, inuse_objects, or of a --calls capture calls, call_time, call_self_time")
	f.BoolVar(&s.offCPU, "off-cpu", false, "weigh stacks by the time threads spent off the CPU (a record --off-cpu capture): --value off_cpu")
	f.BoolVar(&s.blocking, "blocking", false, "weigh the entry stacks of slow system calls by their durations (a record --blocking capture): --value blocking")
	f.BoolVar(&s.wall, "wall", false, "weigh stacks by on-CPU and off-CPU time together, a wall-clock profile (a record --off-cpu capture): --value wall")
	f.BoolVar(&s.addresses, "addresses", false, "show each address no symbol names as a function of its own (FILE+0xOFFSET), not one [unknown in FILE] per file")
	f.BoolVar(&s.noInline, "no-inline", false, "show functions inlined into others (from the source lines the recording bundled) as part of them, not as frames of their own")
}

// parse checks the flags and returns the view options and grouping; its
// errors are usage errors of cmd.
func (s *selectFlags) parse(cmd *cobra.Command) (analyze.ViewOptions, analyze.GroupBy, error) {
	v := s.view
	v.Inline = !s.noInline
	v.Filter.PIDs, v.Filter.TIDs = nil, nil
	for _, p := range s.pids {
		v.Filter.PIDs = append(v.Filter.PIDs, int32(p))
	}
	for _, t := range s.tids {
		v.Filter.TIDs = append(v.Filter.TIDs, int32(t))
	}
	if err := s.shorthands(); err != nil {
		return v, 0, usagef(cmd, "%v", err)
	}
	var err error
	if v.Filter.Since, err = parseOffset(s.since); err != nil {
		return v, 0, usagef(cmd, "--since: %v", err)
	}
	if v.Filter.Until, err = parseOffset(s.until); err != nil {
		return v, 0, usagef(cmd, "--until: %v", err)
	}
	if v.Filter.Until != 0 && v.Filter.Until <= v.Filter.Since {
		return v, 0, usagef(cmd, "--until must be after --since")
	}
	by, err := analyze.ParseGroupBy(s.by)
	if err != nil {
		return v, 0, usagef(cmd, "--by: %v", err)
	}
	if _, err := regexp.Compile(v.Filter.Comm); err != nil {
		return v, 0, usagef(cmd, "--comm: %v", err)
	}
	return v, by, nil
}

// shorthands sets value from --off-cpu, --wall or --blocking, which
// exclude each other and --value.
func (s *selectFlags) shorthands() error {
	n := 0
	for _, b := range []bool{s.offCPU, s.wall, s.blocking} {
		if b {
			n++
		}
	}
	switch {
	case n > 1:
		return errors.New("--off-cpu, --wall and --blocking exclude each other")
	case n == 1 && s.value != "":
		return errors.New("--off-cpu, --wall and --blocking are shorthands for --value: give one")
	case s.offCPU:
		s.value = analyze.OffCPUType.Type
	case s.wall:
		s.value = analyze.WallType.Type
	case s.blocking:
		s.value = analyze.BlockingType.Type
	}
	return nil
}
