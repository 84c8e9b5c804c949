package export

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	"nsprof/analyze"
)

// speedscopeSchema is the $schema value speedscope's file format requires.
const speedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// ssFrame is an entry of the file's shared frames.
type ssFrame struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// ssRun is a run of consecutive samples of one group on one stack.
type ssRun struct {
	stack analyze.StackID
	n     int64
}

// writeSpeedscope writes speedscope's JSON file format: the functions of
// the view as shared frames (name; source file and line when known, else
// the DSO as file), then one "sampled" profile per group (per thread by
// default) whose samples are stacks of frame indices, root first, in time
// order. Consecutive samples on the same stack become one entry whose
// weight is their sum. Stack samples weigh the CPU time they stand for,
// in "nanoseconds", when the recording's sampling period is known (the
// profile's [analyze.CPUType] column), so that speedscope shows time;
// else their count, unit "none". Other values (allocations, off-CPU
// time) weigh their own unit. A per-thread profile is named
// "comm [pid P tid T]". The document is written as it is built, so
// memory stays in proportion to the distinct stacks.
func writeSpeedscope(w io.Writer, v *analyze.View, o Options) error {
	by := o.By
	if by == analyze.GroupNone {
		by = analyze.GroupThread
	}
	col, unit := ssWeight(v)
	groups := v.Group(v.Samples, by)
	// Frames: the functions the samples use, in order of first use.
	frameOf := make([]int32, len(v.Funcs))
	for i := range frameOf {
		frameOf[i] = -1
	}
	var frames []ssFrame
	file := make([]string, len(v.Funcs))
	line := make([]int, len(v.Funcs))
	for i := range v.Frames {
		fr := &v.Frames[i]
		if fr.Func >= 0 && file[fr.Func] == "" && fr.Loc.File != "" {
			file[fr.Func], line[fr.Func] = fr.Loc.File, fr.Loc.Line
		}
	}
	runs := make([][]ssRun, len(groups))
	seen := make([]bool, v.NumStacks())
	var path []analyze.FuncID
	for gi := range groups {
		samples := slices.Clone(groups[gi].Samples)
		slices.SortStableFunc(samples, func(a, b analyze.Sample) int {
			switch {
			case a.Time < b.Time:
				return -1
			case a.Time > b.Time:
				return 1
			}
			return 0
		})
		var rs []ssRun
		for _, s := range samples {
			wt := int64(1)
			if col != 0 {
				if wt = v.Value(&s, col); wt == 0 {
					continue // a freed block, by an in-use value
				}
			}
			if n := len(rs); n > 0 && rs[n-1].stack == s.Stack {
				rs[n-1].n += wt
				continue
			}
			rs = append(rs, ssRun{s.Stack, wt})
			if !seen[s.Stack] {
				seen[s.Stack] = true
				path = v.Path(s.Stack, path[:0])
				for _, fn := range path {
					if frameOf[fn] < 0 {
						frameOf[fn] = int32(len(frames))
						f := &v.Funcs[fn]
						sf := ssFrame{Name: f.Name, File: f.DSO}
						if file[fn] != "" {
							sf.File, sf.Line = file[fn], line[fn]
						}
						frames = append(frames, sf)
					}
				}
			}
		}
		runs[gi] = rs
	}

	bw := bufio.NewWriterSize(w, 256*1024)
	str := func(s string) {
		b, _ := json.Marshal(s) // a string always marshals
		bw.Write(b)
	}
	bw.WriteString(`{"$schema":`)
	str(speedscopeSchema)
	bw.WriteString(`,"name":`)
	str(o.Title)
	bw.WriteString(`,"exporter":"nsprof","activeProfileIndex":0,"shared":{"frames":[`)
	for i, f := range frames {
		if i > 0 {
			bw.WriteByte(',')
		}
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		bw.Write(b)
	}
	bw.WriteString(`]},"profiles":[`)
	var num []byte
	for gi := range groups {
		if gi > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"type":"sampled","name":`)
		str(ssProfileName(by, &groups[gi]))
		bw.WriteString(`,"unit":`)
		str(unit)
		var end int64
		for _, r := range runs[gi] {
			end += r.n
		}
		bw.WriteString(`,"startValue":0,"endValue":`)
		bw.WriteString(strconv.FormatInt(end, 10))
		bw.WriteString(`,"samples":[`)
		for i, r := range runs[gi] {
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteByte('[')
			path = v.Path(r.stack, path[:0])
			for j, fn := range path {
				if j > 0 {
					bw.WriteByte(',')
				}
				num = strconv.AppendInt(num[:0], int64(frameOf[fn]), 10)
				bw.Write(num)
			}
			bw.WriteByte(']')
		}
		bw.WriteString(`],"weights":[`)
		for i, r := range runs[gi] {
			if i > 0 {
				bw.WriteByte(',')
			}
			num = strconv.AppendInt(num[:0], r.n, 10)
			bw.Write(num)
		}
		bw.WriteString(`]}`)
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// ssWeight returns the column of v.SampleTypes the samples weigh (0
// for a count) and speedscope's unit for it: the selected value, except
// that stack samples weigh their CPU time when the sampling period is
// known. Units speedscope does not know become "none".
func ssWeight(v *analyze.View) (int, string) {
	if len(v.SampleTypes) == 0 {
		return 0, "none"
	}
	col := v.Selected()
	if col == 0 {
		col = slices.Index(v.SampleTypes, analyze.CPUType)
		if col < 0 {
			return 0, "none"
		}
	}
	switch u := v.SampleTypes[col].Unit; u {
	case "bytes", "nanoseconds":
		return col, u
	}
	return col, "none"
}

// ssProfileName names the profile of group g: its groupLabel, with the
// process's pid before the tid of a thread group.
func ssProfileName(by analyze.GroupBy, g *analyze.Group) string {
	if by == analyze.GroupThread && g.Process != nil {
		return strings.TrimSpace(g.Process.Comm + " [pid " + strconv.Itoa(int(g.Process.PID)) + " tid " + g.Key + "]")
	}
	return groupLabel(by, g)
}
