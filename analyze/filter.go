package analyze

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Filter selects samples. The zero value selects all; set fields combine
// with "and", the values of one list field with "or".
type Filter struct {
	// PIDs and TIDs keep the samples of these processes and threads.
	PIDs, TIDs []int32
	// Comm keeps the samples of processes whose comm or command line
	// matches this regular expression (a plain word matches as a
	// substring): those of the program the process ran when the sample
	// was taken, for one that exec'd another (see [Process.NameAt]).
	Comm string
	// Container keeps the processes whose container matches, as
	// [Container.Match] says: "host", a podman name or id prefix, a
	// Flatpak app id.
	Container string
	// DSO keeps the samples with a frame whose DSO contains this text,
	// ignoring case.
	DSO string
	// Since and Until keep the samples taken in [Since, Until) from the
	// capture's start; Until 0 means the end.
	Since, Until time.Duration
}

// IsZero reports whether f selects every sample.
func (f *Filter) IsZero() bool {
	return len(f.PIDs) == 0 && len(f.TIDs) == 0 && f.Comm == "" && f.Container == "" && f.DSO == "" && f.Since == 0 && f.Until == 0
}

// Select returns the samples f keeps, in file order. The result shares
// nothing with p.Samples when f is not zero. It fails only on a bad Comm
// expression.
func (p *Profile) Select(f Filter) ([]Sample, error) {
	return p.SelectFrom(p.Samples, f)
}

// SelectFrom returns the samples of samples f keeps, in their order:
// samples itself when f is zero. They must be p's (or, for a [View], the
// view's: their Stack indexes its stacks). It fails only on a bad Comm
// expression.
func (p *Profile) SelectFrom(samples []Sample, f Filter) ([]Sample, error) {
	if f.IsZero() {
		return samples, nil
	}
	keep, err := p.matcher(f)
	if err != nil {
		return nil, err
	}
	var out []Sample
	for i := range samples {
		if keep(&samples[i]) {
			out = append(out, samples[i])
		}
	}
	return out, nil
}

// matcher returns the test f makes of a sample. A sample whose Stack is
// negative (a free, which has no stack) is tested on its process, thread
// and time only.
func (p *Profile) matcher(f Filter) (func(*Sample) bool, error) {
	var comm *regexp.Regexp
	if f.Comm != "" {
		re, err := regexp.Compile(f.Comm)
		if err != nil {
			return nil, fmt.Errorf("comm pattern %q: %w", f.Comm, err)
		}
		comm = re
	}
	// Per-process and per-stack verdicts, each decided once; a process
	// that exec'd during the capture has one for each program it ran
	// (see [Process.NameAt]), which the comm is matched against.
	type verdict struct {
		ok    bool
		names []bool   // by name index, when the comm decides by time
		pr    *Process // then, the process
	}
	procOK := make(map[int32]verdict)
	matchName := func(c, cmdline string) bool { return comm.MatchString(c) || comm.MatchString(cmdline) }
	wantProc := func(pid int32, t int64) bool {
		v, seen := procOK[pid]
		if !seen {
			pr := p.procIndex[pid]
			v.ok = len(f.PIDs) == 0 || slices.Contains(f.PIDs, pid)
			if v.ok && f.Container != "" {
				var c *Container
				if pr != nil {
					c = pr.Container
				}
				v.ok = c.Match(f.Container)
			}
			if v.ok && comm != nil {
				switch {
				case pr == nil:
					v.ok = false
				case pr.Renamed():
					v.pr, v.names = pr, make([]bool, len(pr.names))
					for i, n := range pr.names {
						v.names[i] = matchName(n.comm, n.cmdline)
					}
				default:
					v.ok = matchName(pr.Comm, pr.Cmdline)
				}
			}
			procOK[pid] = v
		}
		if v.ok && v.names != nil {
			return v.names[v.pr.NameIndex(t)]
		}
		return v.ok
	}
	var stackOK []int8 // 0 undecided, 1 keep, -1 drop
	dso := strings.ToLower(f.DSO)
	if dso != "" {
		stackOK = make([]int8, p.NumStacks())
	}
	wantStack := func(id StackID) bool {
		if stackOK == nil {
			return true
		}
		if v := stackOK[id]; v != 0 {
			return v > 0
		}
		v := int8(-1)
		for _, fr := range p.Stack(id) {
			if strings.Contains(strings.ToLower(p.Funcs[p.Frames[fr].Func].DSO), dso) {
				v = 1
				break
			}
		}
		stackOK[id] = v
		return v > 0
	}
	since := p.Start + int64(f.Since)
	until := int64(1<<63 - 1)
	if f.Until > 0 {
		until = p.Start + int64(f.Until)
	}
	return func(s *Sample) bool {
		if s.Time < since || s.Time >= until {
			return false
		}
		if len(f.TIDs) > 0 && !slices.Contains(f.TIDs, s.TID) {
			return false
		}
		return wantProc(s.PID, s.Time) && (s.Stack < 0 || wantStack(s.Stack))
	}, nil
}
