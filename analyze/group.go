package analyze

import (
	"cmp"
	"fmt"
	"slices"
)

// GroupBy says how [Profile.Group] splits samples.
type GroupBy int

// Groupings.
const (
	GroupNone GroupBy = iota
	GroupProcess
	GroupThread
	GroupContainer
	// GroupComm merges similar processes: one group per comm (program
	// name), whatever the pid, as Sysprof's "merge similar processes".
	GroupComm
	// GroupState splits on-CPU samples from off-CPU intervals, and those
	// by the task state their thread left the CPU in: the off-CPU marker
	// frame at the leaf of their stacks ("[off-CPU: S sleeping]"), or
	// "on-CPU".
	GroupState
	// GroupDSO splits samples by the object of the function they were
	// taken in (their leaf frame's DSO: "[kernel]", a library, a
	// program), as perf report --sort dso does.
	GroupDSO
)

// String returns "none", "process", "thread", "container", "comm",
// "state" or "dso".
func (g GroupBy) String() string {
	switch g {
	case GroupNone:
		return "none"
	case GroupProcess:
		return "process"
	case GroupThread:
		return "thread"
	case GroupContainer:
		return "container"
	case GroupComm:
		return "comm"
	case GroupState:
		return "state"
	case GroupDSO:
		return "dso"
	}
	return fmt.Sprintf("GroupBy(%d)", int(g))
}

// ParseGroupBy accepts the names [GroupBy.String] returns, and "" for
// none.
func ParseGroupBy(s string) (GroupBy, error) {
	for g := GroupNone; g <= GroupDSO; g++ {
		if s == g.String() {
			return g, nil
		}
	}
	if s == "" {
		return GroupNone, nil
	}
	return 0, fmt.Errorf("unknown grouping %q (want process, thread, container, comm, state or dso)", s)
}

// Group is the samples of one process, thread, container, comm, state or
// DSO.
type Group struct {
	// Key is the pid or tid in decimal, the container label, the comm,
	// the state, the DSO, or "all".
	Key string
	// Process is the process of a process or thread group, or the first
	// process of a comm group; Thread the thread of a thread group.
	// Either may be nil otherwise.
	Process *Process
	Thread  *Thread
	// Container is the container label of a process, thread or container
	// group (of the first process of a comm group).
	Container string
	// ContainerID is the full id of that container, when it has one (a
	// Podman container).
	ContainerID string
	Samples     []Sample
	// Weight is the selected value ([Profile.Selected]) summed over
	// Samples: their number, by default.
	Weight int64
}

// Names returns the comm and command line of g's process, as it was
// named at g's first sample (see [Process.NameAt]): a comm group of the
// program a process ran before an exec has that program's names. Both
// are "" for a group without a process.
func (g *Group) Names() (comm, cmdline string) {
	if g.Process == nil {
		return "", ""
	}
	if len(g.Samples) == 0 {
		return g.Process.Comm, g.Process.Cmdline
	}
	return g.Process.NameAt(g.Samples[0].Time)
}

// Group splits samples by g, keeping file order within each group. Groups
// are sorted by their weight (their number of samples, by default),
// largest first, then by key; groups of weight 0 are left out.
// GroupNone returns one group "all" with every sample.
func (p *Profile) Group(samples []Sample, g GroupBy) []Group {
	if g == GroupNone {
		return []Group{{Key: "all", Samples: samples, Weight: p.Weight(samples)}}
	}
	if g == GroupState {
		return p.groupByState(samples)
	}
	if g == GroupDSO {
		return p.groupByLeaf(samples, noStackKey, func(fn *Function) string { return fn.DSO })
	}
	// A sample's group is found by its pid or tid and, in comm groups,
	// the program its process ran then: a process that exec'd has the
	// comm of that program at each sample's time, as perf gives.
	type idKey struct{ id, program int32 }
	byKey := make(map[string]int)
	byID := make(map[idKey]int)
	var out []Group
	// Each sample's group, then the groups' samples (see fillGroups).
	of := make([]int32, len(samples))
	var counts []int
	lastPID, lastRenamed := int32(-1), (*Process)(nil) // samples of a process come in runs
	for j, s := range samples {
		k := idKey{id: s.PID}
		if g == GroupThread {
			k.id = s.TID
		}
		if g == GroupComm {
			if s.PID != lastPID {
				lastPID, lastRenamed = s.PID, nil
				if pr := p.procIndex[s.PID]; pr != nil && pr.Renamed() {
					lastRenamed = pr
				}
			}
			if lastRenamed != nil {
				k.program = int32(lastRenamed.NameIndex(s.Time))
			}
		}
		i, ok := byID[k]
		if !ok {
			pr := p.procIndex[s.PID]
			var c *Container
			if pr != nil {
				c = pr.Container
			}
			key := fmt.Sprint(k.id)
			comm := ""
			if g == GroupComm && pr != nil {
				comm, _ = pr.NameAt(s.Time)
			}
			switch {
			case g == GroupContainer:
				key = c.Label()
			case g == GroupComm && comm != "":
				key = comm
			case g == GroupComm:
				key = "[pid " + key + "]"
			}
			i, ok = byKey[key]
			if !ok {
				i = len(out)
				byKey[key] = i
				grp := Group{Key: key, Container: c.Label()}
				if c != nil {
					grp.ContainerID = c.ID
				}
				if g != GroupContainer {
					grp.Process = pr
				}
				if g == GroupThread {
					grp.Thread = p.threadIndex[s.TID]
				}
				out = append(out, grp)
				counts = append(counts, 0)
			}
			byID[k] = i
		}
		of[j] = int32(i)
		counts[i]++
	}
	return p.fillGroups(out, samples, of, counts)
}

// fillGroups gives each group of out its samples, sample j going to
// group of[j], counts[i] of them to group i, in file order: one group
// shares samples as they are, several get slices of their sizes (by
// append, a --memprof capture's 2 M allocations of one process were
// copied as they grew, to twice their room). It returns the groups
// weighed and sorted ([Profile.weighGroups]).
func (p *Profile) fillGroups(out []Group, samples []Sample, of []int32, counts []int) []Group {
	if len(out) == 1 {
		out[0].Samples = samples
		return p.weighGroups(out)
	}
	for i := range out {
		out[i].Samples = make([]Sample, 0, counts[i])
	}
	for j, i := range of {
		out[i].Samples = append(out[i].Samples, samples[j])
	}
	return p.weighGroups(out)
}

// weighGroups sets the groups' weights, drops those whose samples weigh
// nothing (allocations all freed, by an in-use value: nothing to show)
// and sorts the rest by weight, then key.
func (p *Profile) weighGroups(out []Group) []Group {
	for i := range out {
		out[i].Weight = p.Weight(out[i].Samples)
	}
	out = slices.DeleteFunc(out, func(g Group) bool { return g.Weight == 0 })
	slices.SortFunc(out, func(a, b Group) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

// noStackKey is the key of the group of samples without frames in
// [GroupDSO].
const noStackKey = "[no stack]"

// groupByLeaf splits samples by key of the function of their leaf frame
// (samples without one: noStack), largest weight first.
func (p *Profile) groupByLeaf(samples []Sample, noStack string, key func(*Function) string) []Group {
	index := make(map[string]int32)
	var out []Group
	var counts []int
	of := make([]int32, len(samples))
	groupOf := make(map[StackID]int32) // stack -> group
	for j := range samples {
		st := samples[j].Stack
		i, ok := groupOf[st]
		if !ok {
			k := noStack
			if frames := p.Stack(st); len(frames) > 0 {
				if fr := &p.Frames[frames[0]]; fr.Func >= 0 {
					k = key(&p.Funcs[fr.Func])
				}
			}
			if i, ok = index[k]; !ok {
				i = int32(len(out))
				index[k] = i
				out = append(out, Group{Key: k, Container: "all"})
				counts = append(counts, 0)
			}
			groupOf[st] = i
		}
		of[j] = i
		counts[i]++
	}
	return p.fillGroups(out, samples, of, counts)
}
