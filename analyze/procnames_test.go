package analyze

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"nsprof/capture"
)

// writeExecNames writes two processes: pid 7 runs `sh -c 'exec prog -x'`
// from time 1, execs prog at 10 (described again, unchanged, at 12), and
// is sampled at 5, 10 and 15; pid 8 runs other, sampled at 6. The times
// are nanoseconds after base, a time after the capture's start. With
// processFile the names come from nsprof's process file as well as the
// PROCESS frames, without it (another recorder's capture) from the
// frames alone.
func writeExecNames(t *testing.T, w *capture.Writer, base int64, processFile bool) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []struct {
		at       int64
		pid      int32
		comm     string
		cmdline  []string
		argsLine string
	}{
		{1, 7, "sh", []string{"sh", "-c", "exec prog -x"}, "sh -c exec prog -x"},
		{2, 8, "other", []string{"/usr/bin/other"}, "/usr/bin/other"},
		{10, 7, "prog", []string{"/usr/bin/prog", "-x"}, "/usr/bin/prog -x"},
		{12, 7, "prog", []string{"/usr/bin/prog", "-x"}, "/usr/bin/prog -x"},
	} {
		must(w.WriteFrame(&capture.Process{FrameHeader: capture.FrameHeader{PID: n.pid, Time: base + n.at, CPU: -1}, Cmdline: n.argsLine}))
		if processFile {
			must(w.AddProcessInfo(capture.ProcessInfo{Kind: capture.KindProcess, Time: base + n.at, PID: int(n.pid), Comm: n.comm, Cmdline: n.cmdline}))
		}
	}
	for _, s := range []struct {
		at  int64
		pid int32
	}{{5, 7}, {6, 8}, {10, 7}, {15, 7}} {
		must(w.AddSample(base+s.at, 0, s.pid, s.pid, []uint64{capture.ContextKernel, 0xffffffff81000010}))
	}
}

// TestNamesAfterExec: a process that exec'd has, at each sample's time,
// the names of the program it ran then, as `perf report --sort comm`
// gives them: in comm groups and for --comm, from nsprof's process file
// or from the PROCESS frames alone.
func TestNamesAfterExec(t *testing.T) {
	for _, processFile := range []bool{true, false} {
		t.Run(fmt.Sprintf("process file %t", processFile), func(t *testing.T) {
			var base int64
			p := loadWritten(t, func(w *capture.Writer) {
				base = capture.Now()
				writeExecNames(t, w, base, processFile)
			})
			pr, other := p.Process(7), p.Process(8)
			if pr == nil || other == nil {
				t.Fatal("processes 7 and 8 not loaded")
			}
			if !pr.Renamed() || other.Renamed() {
				t.Errorf("renamed: pid 7 %t, pid 8 %t; want true, false", pr.Renamed(), other.Renamed())
			}
			wantCmd := "/usr/bin/prog -x"
			if pr.Comm != "prog" || pr.Cmdline != wantCmd {
				t.Errorf("pid 7 named %q, %q; want its last program's", pr.Comm, pr.Cmdline)
			}
			for _, c := range []struct {
				at            int64
				comm, cmdline string
			}{
				{0, "sh", "sh -c exec prog -x"}, // before its first name: that name
				{5, "sh", "sh -c exec prog -x"},
				{9, "sh", "sh -c exec prog -x"},
				{10, "prog", wantCmd}, // the exec's own time
				{15, "prog", wantCmd},
			} {
				if comm, cmdline := pr.NameAt(base + c.at); comm != c.comm || cmdline != c.cmdline {
					t.Errorf("NameAt(%d) = %q, %q; want %q, %q", c.at, comm, cmdline, c.comm, c.cmdline)
				}
			}
			groups := map[string][]int64{}
			for _, g := range p.Group(p.Samples, GroupComm) {
				for _, s := range g.Samples {
					groups[g.Key] = append(groups[g.Key], s.Time-base)
				}
				if comm, _ := g.Names(); comm != g.Key {
					t.Errorf("comm group %q names %q", g.Key, comm)
				}
			}
			want := map[string][]int64{"sh": {5}, "prog": {10, 15}, "other": {6}}
			if fmt.Sprint(groups) != fmt.Sprint(want) {
				t.Errorf("comm groups %v, want %v", groups, want)
			}
			for _, c := range []struct {
				f    Filter
				want []int64
			}{
				{Filter{Comm: "^sh$"}, []int64{5}},
				{Filter{Comm: "^prog$"}, []int64{10, 15}},
				{Filter{Comm: "prog"}, []int64{5, 10, 15}}, // sh's command line names prog
				{Filter{Comm: "^(sh|other)$"}, []int64{5, 6}},
				{Filter{Comm: "^prog$", PIDs: []int32{8}}, nil},
				{Filter{Comm: "^sh$", Since: time.Duration(base - p.Start + 6)}, nil},
				{Filter{Comm: "^prog$", Since: time.Duration(base - p.Start + 12)}, []int64{15}},
			} {
				sel, err := p.Select(c.f)
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for _, s := range sel {
					got = append(got, s.Time-base)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("%+v selects the samples at %v, want %v", c.f, got, c.want)
				}
			}
		})
	}
}

// TestTimelinePrograms: the processes view lists the programs a process
// that exec'd ran, each from its exec; a process that did not has none.
func TestTimelinePrograms(t *testing.T) {
	for _, processFile := range []bool{true, false} {
		t.Run(fmt.Sprintf("process file %t", processFile), func(t *testing.T) {
			var buf bytes.Buffer
			w, err := capture.NewWriter(&buf)
			if err != nil {
				t.Fatal(err)
			}
			base := capture.Now()
			writeExecNames(t, w, base, processFile)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			tl, err := LoadTimeline(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			got := map[int32]string{}
			for _, p := range tl.Processes {
				for _, pg := range p.Programs {
					got[p.PID] += fmt.Sprintf("%d %s %q; ", pg.Since-base, pg.Comm, pg.Cmdline)
				}
			}
			want := map[int32]string{7: `1 sh "sh -c exec prog -x"; 10 prog "/usr/bin/prog -x"; `}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("programs %v, want %v", got, want)
			}
		})
	}
}

// TestNamesOfOlderRecorder: a capture of nsprof record before the comm of
// a child found gone was its parent's (it was the parent's command line,
// with no command line of its own) groups the child's samples before its
// exec under the parent's program name, not under that command line; a
// description with no name between changes nothing.
func TestNamesOfOlderRecorder(t *testing.T) {
	var base int64
	p := loadWritten(t, func(w *capture.Writer) {
		base = capture.Now()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, pi := range []capture.ProcessInfo{
			{Kind: capture.KindProcess, Time: base + 1, PID: 9, Comm: "go build -o /dev/null ./cmd/nsprof"},
			{Kind: capture.KindProcess, Time: base + 7, PID: 9, Err: "status: no such file"}, // names nothing
			{Kind: capture.KindProcess, Time: base + 10, PID: 9, Comm: "asm"},
		} {
			must(w.AddProcessInfo(pi))
		}
		must(w.AddSample(base+8, 0, 9, 9, []uint64{capture.ContextKernel, 0xffffffff81000010}))
		must(w.AddSample(base+15, 0, 9, 9, []uint64{capture.ContextKernel, 0xffffffff81000010}))
	})
	var keys []string
	for _, g := range p.Group(p.Samples, GroupComm) {
		keys = append(keys, g.Key)
	}
	slices.Sort(keys)
	if want := []string{"asm", "go"}; !slices.Equal(keys, want) {
		t.Errorf("comm groups %q, want %q", keys, want)
	}
	if _, cmdline := p.Process(9).NameAt(base + 8); cmdline != "go build -o /dev/null ./cmd/nsprof" {
		t.Errorf("command line before the exec %q, want the parent's", cmdline)
	}
}
