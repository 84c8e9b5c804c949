package analyze

import (
	"fmt"
	"slices"
	"testing"
)

// TestResolveMaps: a process's mappings are left as the kernel would
// have them, the latest (by time, then as read) replacing what it covers
// of the earlier ones.
func TestResolveMaps(t *testing.T) {
	m := func(start, end, off uint64, file, id string, time int64) Mapping {
		return Mapping{Start: start, End: end, Offset: off, File: file, BuildID: id, time: time}
	}
	cases := []struct {
		name     string
		in, want []Mapping
		replaced []addrSpan
	}{
		{
			name: "apart, unsorted",
			in:   []Mapping{m(0x5000, 0x6000, 0, "b", "", 2), m(0x1000, 0x2000, 0, "a", "", 1)},
			want: []Mapping{m(0x1000, 0x2000, 0, "a", "", 1), m(0x5000, 0x6000, 0, "b", "", 2)},
		},
		{
			// A forked go command's image, then the compiler it
			// execed: the compiler's text covers the start of the
			// parent's and ends inside its data, which keeps its tail
			// at the offset of that tail.
			name: "exec over an inherited image",
			in: []Mapping{
				m(0x400000, 0x900000, 0, "/go/bin/go", "g", 10),
				m(0x900000, 0xa00000, 0x500000, "/go/bin/go", "g", 10),
				m(0x400000, 0x980000, 0, "/go/pkg/tool/compile", "c", 20),
			},
			want: []Mapping{
				m(0x400000, 0x980000, 0, "/go/pkg/tool/compile", "c", 20),
				m(0x980000, 0xa00000, 0x580000, "/go/bin/go", "g", 10),
			},
			replaced: []addrSpan{{0x400000, 0x980000}},
		},
		{
			name: "a mapping punched in the middle of another",
			in:   []Mapping{m(0x1000, 0x9000, 0x100000, "big", "", 1), m(0x3000, 0x4000, 0, "small", "", 2)},
			want: []Mapping{
				m(0x1000, 0x3000, 0x100000, "big", "", 1),
				m(0x3000, 0x4000, 0, "small", "", 2),
				m(0x4000, 0x9000, 0x103000, "big", "", 1),
			},
			replaced: []addrSpan{{0x3000, 0x4000}},
		},
		{
			// A mapping of the image before an exec, read after the
			// new image's but older: the newer image stays.
			name:     "older mapping read later",
			in:       []Mapping{m(0x1000, 0x2000, 0, "new", "n", 20), m(0x1000, 0x2000, 0, "old", "o", 10)},
			want:     []Mapping{m(0x1000, 0x2000, 0, "new", "n", 20)},
			replaced: []addrSpan{{0x1000, 0x2000}},
		},
		{
			name:     "equal times: the one read last",
			in:       []Mapping{m(0x1000, 0x2000, 0, "first", "", 5), m(0x1000, 0x2000, 0, "second", "", 5)},
			want:     []Mapping{m(0x1000, 0x2000, 0, "second", "", 5)},
			replaced: []addrSpan{{0x1000, 0x2000}},
		},
		{
			// The same mapping read from /proc after the kernel's
			// record gave its build-id: the build-id is kept.
			name: "read again without its build-id",
			in:   []Mapping{m(0x1000, 0x2000, 0x3000, "lib", "ab", 1), m(0x1000, 0x2000, 0x3000, "lib", "", 2)},
			want: []Mapping{m(0x1000, 0x2000, 0x3000, "lib", "ab", 2)},
		},
		{
			name:     "another file over the same range keeps its own (no) build-id",
			in:       []Mapping{m(0x1000, 0x2000, 0, "lib", "ab", 1), m(0x1000, 0x2000, 0, "other", "", 2)},
			want:     []Mapping{m(0x1000, 0x2000, 0, "other", "", 2)},
			replaced: []addrSpan{{0x1000, 0x2000}},
		},
		{
			// The same file at the same place again, split by a
			// change of protection: the same code, nothing replaced.
			name: "the same file split",
			in:   []Mapping{m(0x1000, 0x5000, 0x2000, "lib", "ab", 1), m(0x2000, 0x3000, 0x3000, "lib", "ab", 2)},
			want: []Mapping{
				m(0x1000, 0x2000, 0x2000, "lib", "ab", 1),
				m(0x2000, 0x3000, 0x3000, "lib", "ab", 2),
				m(0x3000, 0x5000, 0x4000, "lib", "ab", 1),
			},
		},
	}
	for _, c := range cases {
		got, replaced, _ := resolveMaps(slices.Clone(c.in))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, fmtMaps(got), fmtMaps(c.want))
		}
		if !slices.Equal(replaced, c.replaced) {
			t.Errorf("%s: replaced %x, want %x", c.name, replaced, c.replaced)
		}
		for _, sp := range c.replaced {
			if !inSpans(replaced, sp.lo) || !inSpans(replaced, sp.hi-1) || inSpans(replaced, sp.hi) {
				t.Errorf("%s: inSpans wrong at the ends of %x", c.name, sp)
			}
		}
	}
}

func fmtMaps(ms []Mapping) string {
	s := ""
	for _, m := range ms {
		s += fmt.Sprintf("[%#x-%#x @%#x %s %q t%d] ", m.Start, m.End, m.Offset, m.File, m.BuildID, m.time)
	}
	return s
}
