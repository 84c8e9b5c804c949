package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

// diffStacks are the CPU capture's stacks changed: hot takes fewer
// samples, fresh is new, read is gone from pid 10.
var diffStacks = []testcaptures.Stack{
	{PID: 10, TID: 10, MS: 1, Frames: []string{"hot", "work", "main"}, N: 2},
	{PID: 10, TID: 11, MS: 2, Frames: []string{"fresh", "work", "main"}, N: 4},
	{PID: 10, TID: 11, MS: 3, Frames: []string{"work", "main"}, N: 2},
	{PID: 20, TID: 21, MS: 6, Frames: []string{testcaptures.Hostile[4], "main"}, N: 2},
}

// TestGoldenDiff renders the CPU capture compared with a changed one, as
// text and JSON, and checks the JSON's shares against each capture's own
// function table.
func TestGoldenDiff(t *testing.T) {
	base := loadGolden(t, "cpu", testcaptures.CPU(t), analyze.ViewOptions{Inline: true})
	cur := loadGolden(t, "changed", testcaptures.CPUOf(t, diffStacks), analyze.ViewOptions{Inline: true})
	for _, f := range []Format{Text, JSON} {
		var buf bytes.Buffer
		o := cliDefaults
		o.Format, o.File, o.BaseFile = f, "changed.syscap", "cpu.syscap"
		if err := Generate(&buf, Data{View: cur.view, Base: base.view}, o); err != nil {
			t.Fatal(err)
		}
		testcaptures.Golden(t, filepath.Join("testdata", "golden", "options", "cpu.diff."+formatExt(f)), buf.Bytes(), *update)
		if f != JSON {
			continue
		}
		var doc struct {
			Capture, Base struct{ File string }
			Diff          []analyze.FuncDiff
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Capture.File != "changed.syscap" || doc.Base.File != "cpu.syscap" {
			t.Errorf("files %q and base %q", doc.Capture.File, doc.Base.File)
		}
		// The names JSON can carry as they are (not the hostile one
		// of invalid UTF-8, which it carries replaced).
		share := func(v *analyze.View) map[string][2]float64 {
			m := map[string][2]float64{}
			for _, s := range v.Profile.Top(v.Samples) {
				if utf8.ValidString(s.Name) {
					m[s.Name+"|"+s.DSO] = [2]float64{s.SelfPercent, s.TotalPercent}
				}
			}
			return m
		}
		was, is := share(base.view), share(cur.view)
		seen := map[string]bool{}
		for _, d := range doc.Diff {
			k := d.Name + "|" + d.DSO
			if strings.ContainsRune(d.Name, utf8.RuneError) {
				continue
			}
			seen[k] = true
			if was[k][0] != d.BaseSelfPercent || was[k][1] != d.BaseTotalPercent || is[k][0] != d.SelfPercent || is[k][1] != d.TotalPercent {
				t.Errorf("%s: shares %v→%v %v→%v, the captures' tables say %v and %v", k, d.BaseSelfPercent, d.SelfPercent, d.BaseTotalPercent, d.TotalPercent, was[k], is[k])
			}
		}
		for k := range was {
			if !seen[k] {
				t.Errorf("%s of the base is not compared", k)
			}
		}
		for k := range is {
			if !seen[k] {
				t.Errorf("%s of the capture is not compared", k)
			}
		}
		if len(doc.Diff) == 0 || !strings.HasPrefix(doc.Diff[0].Name, "fresh") && !strings.HasPrefix(doc.Diff[0].Name, "hot") {
			t.Errorf("the largest change first: %+v", doc.Diff[:min(1, len(doc.Diff))])
		}
	}
	// A comparison is of the top view, ungrouped.
	for _, o := range []Options{{View: ViewTree}, {By: analyze.GroupProcess}} {
		if err := Generate(&bytes.Buffer{}, Data{View: cur.view, Base: base.view}, o); err == nil || !strings.Contains(err.Error(), "base capture") {
			t.Errorf("%v by %v: %v, want an error of the comparison", o.View, o.By, err)
		}
	}
}
