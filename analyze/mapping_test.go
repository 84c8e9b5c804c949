package analyze

import "testing"

func TestMappingBase(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6"},
		{"[vdso]", "[vdso]"},
		// Anonymous executable memory: JIT code without a perf map. It
		// was shown as "." (path.Base of "").
		{"", "[anon]"},
		{"//anon", "[anon]"},
	} {
		m := Mapping{File: c.file}
		if got := m.Base(); got != c.want {
			t.Errorf("Mapping{File: %q}.Base() = %q, want %q", c.file, got, c.want)
		}
	}
}
