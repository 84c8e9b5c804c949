package otlp

import (
	"bytes"
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

// TestEncodeDictionary encodes the two-process test capture, sends the
// request through protobuf and back, and checks the dictionary: the zero
// entry first in every table, the build ids of the server's executable
// and of the kernel, host.name and thread.id.
func TestEncodeDictionary(t *testing.T) {
	profs, st := encodeCapture(t, testcaptures.CPUWithNotes(t, []testcaptures.Stack{
		{PID: 10, TID: 11, MS: 1, Frames: []string{"k_read", "read", "main"}, N: 2},
		{PID: 20, TID: 20, MS: 2, Frames: []string{"main"}, N: 1},
	}), "node-1", analyze.ViewOptions{})
	if st.Samples != 3 || st.Processes != 2 || st.Skipped != 0 {
		t.Errorf("stats %+v, want 3 samples of 2 processes", st)
	}
	data, err := pprofileotlp.NewExportRequestFromProfiles(profs).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(data); err != nil {
		t.Fatal(err)
	}
	got := req.Profiles()
	d := got.Dictionary()
	strs := d.StringTable()
	if strs.At(0) != "" || d.MappingTable().At(0).FilenameStrindex() != 0 || d.FunctionTable().At(0).NameStrindex() != 0 ||
		d.LocationTable().At(0).Lines().Len() != 0 || d.StackTable().At(0).LocationIndices().Len() != 0 || d.AttributeTable().At(0).KeyStrindex() != 0 {
		t.Errorf("a dictionary table does not start with its zero value")
	}
	ids := map[string]string{}
	for _, m := range d.MappingTable().All() {
		attrs, err := pprofile.FromAttributeIndices(d.AttributeTable(), m, d)
		if err != nil {
			t.Fatal(err)
		}
		if id, ok := attrs.Get(AttrBuildID); ok {
			ids[strs.At(int(m.FilenameStrindex()))] = id.Str()
		}
	}
	if ids["/usr/bin/server"] != "0123abcd" || ids[kernelFile] != testcaptures.KernelBuildID {
		t.Errorf("build ids by mapping file: %v", ids)
	}
	tids := map[int64]int64{}
	for _, rp := range got.ResourceProfiles().All() {
		if h, _ := rp.Resource().Attributes().Get("host.name"); h.Str() != "node-1" {
			t.Errorf("host.name %q, want node-1", h.Str())
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				for _, s := range prof.Samples().All() {
					attrs, err := pprofile.FromAttributeIndices(d.AttributeTable(), s, d)
					if err != nil {
						t.Fatal(err)
					}
					tid, _ := attrs.Get("thread.id")
					tids[tid.Int()] += s.Values().At(0)
				}
			}
		}
	}
	if tids[11] != 2 || tids[20] != 1 || len(tids) != 2 {
		t.Errorf("samples by thread.id: %v, want 11:2 20:1", tids)
	}
}

// TestEncodeOffCPU encodes a capture recorded with --off-cpu and
// --blocking, in a view of all its kinds of samples (as Push makes): the process's resource holds its CPU profile (2 samples of
// "work") and its off-CPU profile (off_cpu nanoseconds, period type
// off_cpu, period 1, as export --format pprof names them), whose one
// sample is thread 11's 7 ms under [off-CPU: S sleeping], wait and main;
// the blocking call is left out, counted as skipped.
func TestEncodeOffCPU(t *testing.T) {
	profs, st := encodeCapture(t, testcaptures.OffCPU(t), "", analyze.ViewOptions{AllKinds: true})
	if st.Samples != 2 || st.OffCPU != 7e6 || st.OffCPUIntervals != 1 || st.Skipped != 1 || st.Processes != 1 {
		t.Errorf("stats %+v, want 2 samples, 7 ms off the CPU in 1 interval, 1 skipped, 1 process", st)
	}
	d := profs.Dictionary()
	strs := d.StringTable()
	if n := profs.ResourceProfiles().Len(); n != 1 {
		t.Fatalf("%d resources, want 1", n)
	}
	ps := profs.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles()
	got := map[string]string{}
	for _, prof := range ps.All() {
		typ := strs.At(int(prof.SampleType().TypeStrindex())) + "/" + strs.At(int(prof.SampleType().UnitStrindex()))
		var desc []string
		for _, s := range prof.Samples().All() {
			var names []string
			for _, li := range d.StackTable().At(int(s.StackIndex())).LocationIndices().All() {
				for _, ln := range d.LocationTable().At(int(li)).Lines().All() {
					names = append(names, strs.At(int(d.FunctionTable().At(int(ln.FunctionIndex())).NameStrindex())))
				}
			}
			attrs, err := pprofile.FromAttributeIndices(d.AttributeTable(), s, d)
			if err != nil {
				t.Fatal(err)
			}
			tid, _ := attrs.Get("thread.id")
			desc = append(desc, fmt.Sprintf("tid %d %v: %d", tid.Int(), names, s.Values().At(0)))
		}
		got[typ] = fmt.Sprintf("%v; period %s/%s %d", desc, strs.At(int(prof.PeriodType().TypeStrindex())), strs.At(int(prof.PeriodType().UnitStrindex())), prof.Period())
	}
	want := map[string]string{
		"samples/count":       "[tid 10 [work main]: 2]; period cpu/nanoseconds 1000000",
		"off_cpu/nanoseconds": "[tid 11 [[off-CPU: S sleeping] wait main]: 7000000]; period off_cpu/nanoseconds 1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("profiles:\n%v\nwant\n%v", got, want)
	}
}

// TestEncodeExec: a process that exec'd another program is a resource
// per program, each named by the program it ran at its samples, as perf
// gives each sample the comm its process had then.
func TestEncodeExec(t *testing.T) {
	profs, st := encodeCapture(t, testcaptures.CPUExec(t, []testcaptures.Stack{
		{PID: 20, TID: 20, MS: 1, Frames: []string{"spawn", "main"}, N: 2},
		{PID: 10, TID: 10, MS: 2, Frames: []string{"main"}, N: 1},
		{PID: 20, TID: 20, MS: 6, Frames: []string{"main"}, N: 3},
	}), "", analyze.ViewOptions{})
	if st.Samples != 6 || st.Processes != 3 {
		t.Errorf("stats %+v, want 6 samples in 3 resources", st)
	}
	got := map[string]int64{}
	for _, rp := range profs.ResourceProfiles().All() {
		attrs := rp.Resource().Attributes()
		pid, _ := attrs.Get("process.pid")
		name, _ := attrs.Get("process.executable.name")
		cmd, _ := attrs.Get("process.command_line")
		key := fmt.Sprintf("%d %s (%s)", pid.Int(), name.Str(), cmd.Str())
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				for _, s := range prof.Samples().All() {
					got[key] += s.Values().At(0)
				}
			}
		}
	}
	want := map[string]int64{"20 launcher (launcher --exec evil)": 2, "10 server (/usr/bin/server --port 80)": 1, "20 evil (evil)": 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("samples by resource %v, want %v", got, want)
	}
}

// encodeCapture loads the capture data, recorded on host (when set), and
// encodes the view vo of it, whole.
func encodeCapture(t *testing.T, data []byte, host string, vo analyze.ViewOptions) (pprofile.Profiles, Stats) {
	t.Helper()
	p, err := analyze.Load(bytes.NewReader(data), analyze.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		p.Hostname = host
	}
	v, err := p.View(vo)
	if err != nil {
		t.Fatal(err)
	}
	profs, st, err := Encode(v, Period{})
	if err != nil {
		t.Fatal(err)
	}
	return profs, st
}
