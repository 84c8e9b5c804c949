package analyze

import (
	"slices"
	"strings"
	"testing"
)

// shapeRef applies HideKernel and focus to the sample table by name, as
// ViewOptions describe them, naively.
func shapeRef(o ViewOptions) []testSample {
	var out []testSample
	for _, s := range testSamples {
		var st []string
		for _, name := range s.stack {
			if o.HideKernel && syms[name].kernel {
				continue
			}
			st = append(st, name)
		}
		cut := func(match func(string) bool) {
			for i := len(st) - 1; i >= 0; i-- {
				if match(st[i]) {
					st = st[:i+1]
					return
				}
			}
			st = nil
		}
		if o.Focus != "" {
			cut(func(n string) bool { return n == o.Focus })
		}
		if o.FocusDSO != "" {
			cut(func(n string) bool {
				return strings.Contains(strings.ToLower(syms[n].dso), strings.ToLower(o.FocusDSO))
			})
		}
		if len(st) > 0 {
			s.stack = st
			out = append(out, s)
		}
	}
	return out
}

func TestView(t *testing.T) {
	p := loadTest(t)
	for _, tc := range []struct {
		name string
		o    ViewOptions
	}{
		{"zero", ViewOptions{}},
		{"hide-kernel", ViewOptions{HideKernel: true}},
		{"focus", ViewOptions{Focus: "foo"}},
		{"focus-recursive", ViewOptions{Focus: "rec"}},
		{"focus-dso", ViewOptions{FocusDSO: "LIBC"}},
		{"focus-hide-kernel", ViewOptions{Focus: "memcpy", HideKernel: true}},
		{"focus-none", ViewOptions{Focus: "nosuchfunction"}},
		{"filter-focus", ViewOptions{Filter: Filter{TIDs: []int32{101}}, Focus: "foo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := p.View(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			want := shapeRef(tc.o)
			if len(tc.o.Filter.TIDs) > 0 {
				want = slices.DeleteFunc(want, func(s testSample) bool { return !slices.Contains(tc.o.Filter.TIDs, s.tid) })
			}
			// The reference top of the shaped table.
			self, total, n := map[string]int{}, map[string]int{}, 0
			paths := map[string]int{}
			for _, s := range want {
				n += s.n
				self[s.stack[0]] += s.n
				seen := map[string]bool{}
				for _, name := range s.stack {
					if !seen[name] {
						seen[name] = true
						total[name] += s.n
					}
				}
				root := slices.Clone(s.stack)
				slices.Reverse(root)
				paths[strings.Join(root, ">")] += s.n
			}
			if len(v.Samples) != n {
				t.Fatalf("%d samples, want %d", len(v.Samples), n)
			}
			top := v.Top(v.Samples)
			if len(top) != len(total) {
				t.Errorf("%d functions, want %d: %+v", len(top), len(total), top)
			}
			for _, s := range top {
				if s.Self != self[s.Name] || s.Total != total[s.Name] {
					t.Errorf("%s: self %d total %d, want %d %d", s.Name, s.Self, s.Total, self[s.Name], total[s.Name])
				}
			}
			got := map[string]int{}
			var buf []FuncID
			for _, s := range v.Samples {
				buf = v.Path(s.Stack, buf[:0])
				var names []string
				for _, fn := range buf {
					names = append(names, v.Funcs[fn].Name)
				}
				got[strings.Join(names, ">")]++
			}
			if !mapsEqual(got, paths) {
				t.Errorf("paths %v, want %v", got, paths)
			}
			// The view's samples refer to its own stacks: the original
			// profile is untouched.
			checkTop(t, p, p.Samples, all)
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestViewInvert(t *testing.T) {
	p := loadTest(t)
	v, err := p.View(ViewOptions{Invert: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf []FuncID
	for _, s := range v.Samples {
		buf = v.Path(s.Stack, buf[:0])
		st := p.Stack(s.Stack)
		if p.Frames[st[0]].Func != buf[0] {
			t.Fatalf("inverted path starts at %s, not the leaf %s", p.Funcs[buf[0]].Name, p.Funcs[p.Frames[st[0]].Func].Name)
		}
	}
	// The inverted view's default tree is the callers tree, and asking it
	// for the other way round gives the top-down tree.
	if got, want := treePaths(v.CallTree(v.Samples, TreeOptions{})), refPaths(true, 0); !mapsEqual(got, want) {
		t.Errorf("inverted call tree %v, want %v", got, want)
	}
	if got, want := treePaths(v.CallTree(v.Samples, TreeOptions{BottomUp: true})), refPaths(false, 0); !mapsEqual(got, want) {
		t.Errorf("inverted bottom-up tree %v, want %v", got, want)
	}
}

func TestGroupComm(t *testing.T) {
	p := loadTest(t)
	groups := p.Group(p.Samples, GroupComm)
	want := map[string]int{}
	for _, s := range testSamples {
		want[p.Process(s.pid).Comm] += s.n
	}
	if len(groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(groups), len(want))
	}
	for _, g := range groups {
		if len(g.Samples) != want[g.Key] {
			t.Errorf("group %s: %d samples, want %d", g.Key, len(g.Samples), want[g.Key])
		}
	}
	if g, err := ParseGroupBy("comm"); err != nil || g != GroupComm {
		t.Errorf("ParseGroupBy(comm) = %v, %v", g, err)
	}
}
