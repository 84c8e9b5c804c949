package analyze

import (
	"testing"

	"nsprof/capture"
	"nsprof/internal/testcaptures"
)

// TestGroupDSO: grouped by DSO, every sample is in the group of its leaf
// frame's object, once; the groups are sorted by weight; with the
// kernel's frames hidden, the kernel's samples go to the user code that
// entered it.
func TestGroupDSO(t *testing.T) {
	p, err := LoadBytes(testcaptures.Web(t), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, hide := range []bool{false, true} {
		v, err := p.View(ViewOptions{Inline: true, HideKernel: hide})
		if err != nil {
			t.Fatal(err)
		}
		groups := v.Group(v.Samples, GroupDSO)
		n := 0
		keys := map[string]bool{}
		for i, g := range groups {
			if keys[g.Key] {
				t.Errorf("hide %v: two groups %q", hide, g.Key)
			}
			keys[g.Key] = true
			if i > 0 && g.Weight > groups[i-1].Weight {
				t.Errorf("hide %v: group %q (%d) after %q (%d)", hide, g.Key, g.Weight, groups[i-1].Key, groups[i-1].Weight)
			}
			for _, s := range g.Samples {
				st := v.Stack(s.Stack)
				if dso := v.Funcs[v.Frames[st[0]].Func].DSO; dso != g.Key {
					t.Fatalf("hide %v: a sample of leaf DSO %q in group %q", hide, dso, g.Key)
				}
			}
			n += len(g.Samples)
		}
		if n != len(v.Samples) {
			t.Errorf("hide %v: %d samples in the groups, %d in the view", hide, n, len(v.Samples))
		}
		if keys["[kernel]"] == hide || !keys["server"] || !keys["evil"] {
			t.Errorf("hide %v: groups %v", hide, keys)
		}
	}
	if g, err := ParseGroupBy("dso"); err != nil || g != GroupDSO || g.String() != "dso" {
		t.Errorf("ParseGroupBy(dso) = %v, %v", g, err)
	}
}

// TestGroupState: grouped by state, the on-CPU samples and the off-CPU
// interval of a sleeping thread are apart, keyed "on-CPU" and by the
// off-CPU marker at the interval's leaf; the blocking call's stack (no
// off-CPU marker) is in the on-CPU group.
func TestGroupState(t *testing.T) {
	p, err := LoadBytes(testcaptures.OffCPU(t), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	wall, err := p.ValueIndex("wall")
	if err != nil {
		t.Fatal(err)
	}
	// Weighed by wall time: a group weighing nothing is left out.
	v, err := p.View(ViewOptions{Value: wall, AllKinds: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, g := range v.Group(v.Samples, GroupState) {
		got[g.Key] = len(g.Samples)
	}
	want := map[string]int{onCPUKey: 3, capture.OffCPUMarker('S'): 1}
	if len(got) != len(want) || got[onCPUKey] != 3 || got[capture.OffCPUMarker('S')] != 1 {
		t.Errorf("groups by state %v, want %v", got, want)
	}
}
