package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/testcaptures"
)

// --container selects the processes of the timeline views, and the marks
// and logs of those processes, as --pid does; the two combine.
func TestSelectTimelineContainer(t *testing.T) {
	web := &analyze.Container{Kind: "podman", Name: "web", ID: "58914741353e0000"}
	tl := &analyze.Timeline{
		Processes: []*analyze.ProcessSpan{
			{PID: 10, Container: web}, {PID: 11, Container: web},
			{PID: 20, Container: &analyze.Container{Kind: "host"}}, {PID: 30},
		},
	}
	for _, pid := range []int32{10, 11, 20, 30} {
		tl.Marks = append(tl.Marks, capture.Mark{FrameHeader: capture.FrameHeader{PID: pid}})
		tl.Logs = append(tl.Logs, capture.Log{FrameHeader: capture.FrameHeader{PID: pid}})
	}
	for _, tc := range []struct {
		f    analyze.Filter
		want []int32
	}{
		{analyze.Filter{Container: "web"}, []int32{10, 11}},
		{analyze.Filter{Container: "5891"}, []int32{10, 11}},
		{analyze.Filter{Container: "host"}, []int32{20}},
		{analyze.Filter{Container: "unknown"}, []int32{30}},
		{analyze.Filter{Container: "web", PIDs: []int32{11, 20}}, []int32{11}},
		{analyze.Filter{}, []int32{10, 11, 20, 30}},
	} {
		s := selectTimeline(tl, tc.f)
		var procs, marks, logs []int32
		for _, p := range s.procs {
			procs = append(procs, p.PID)
		}
		for _, m := range s.marks {
			marks = append(marks, m.PID)
		}
		for _, l := range s.logs {
			logs = append(logs, l.PID)
		}
		if !slices.Equal(procs, tc.want) || !slices.Equal(marks, tc.want) || !slices.Equal(logs, tc.want) {
			t.Errorf("%+v: processes %v, marks %v, logs %v; want %v", tc.f, procs, marks, logs, tc.want)
		}
	}
}

// A --container that names no container of the capture says which it
// has, a --pid or --tid none of its, so; a selection of names it has that
// selects no sample says only "no samples".
func TestNoContainerMatched(t *testing.T) {
	p, err := analyze.Load(bytes.NewReader(testcaptures.CPU(t)), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	labels := p.ContainerLabels()
	if len(labels) == 0 {
		t.Fatal("no container labels")
	}
	for _, tc := range []struct {
		f    analyze.Filter
		want string
	}{
		{analyze.Filter{Container: "nosuch"}, `no samples: no process ran in a container matching "nosuch"; the capture's: ` + strings.Join(labels, ", ") + "\n"},
		{analyze.Filter{Container: labels[0], PIDs: []int32{1 << 30}}, "no samples: the capture has no process 1073741824\n"},
		{analyze.Filter{TIDs: []int32{1 << 30, 1<<30 + 1}}, "no samples: the capture has no thread 1073741824 or 1073741825\n"},
		{analyze.Filter{Container: labels[0], Since: time.Hour}, "no samples\n"},
	} {
		v, err := p.View(analyze.ViewOptions{Filter: tc.f})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := samplesText(&b, v, Options{Select: analyze.ViewOptions{Filter: tc.f}}); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); !strings.HasSuffix(got, tc.want) {
			t.Errorf("%+v: output ends %q, want %q", tc.f, got[max(0, len(got)-len(tc.want)-20):], tc.want)
		}
	}
}
