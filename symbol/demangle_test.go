package symbol

import (
	"path/filepath"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

func TestDemangle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"_ZN2ns5Klass6methodEi", "ns::Klass::method(int)"},
		{"_ZN2ns13free_functionEPKcl", "ns::free_function(char const*, long)"},
		{"_Z3fooi.cold", "foo(int) [clone .cold]"},
		{"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"},
		{"_ZN3std2rt10lang_start17h5f9d9ca1b1b1b1b1E.llvm.123", "std::rt::lang_start"},
		{"_RNvCs1234_7mycrate3foo", "mycrate::foo"},
		{"_ZN2ns5Klass6methodEi@plt", "ns::Klass::method(int)@plt"},
		{"strtol@plt", "strtol@plt"},
		{"_Z@plt", "_Z@plt"},
		{"main", "main"},
		{"fixture_leaf", "fixture_leaf"},
		{"_Z", "_Z"},
		{"_ZZZZ", "_ZZZZ"},
		{"_R", "_R"},
		{"", ""},
		{"_Zfoo bar", "_Zfoo bar"},
		{"_ZN" + strings.Repeat("1a", 10000) + "E", "_ZN" + strings.Repeat("1a", 10000) + "E"},
	} {
		if got := Demangle(tc.in); got != tc.want {
			t.Errorf("Demangle(%.40q) = %.60q, want %.60q", tc.in, got, tc.want)
		}
	}
}

// TestDemangleFixture compiles a C++ library and demangles the names read
// from its symbol table.
func TestDemangleFixture(t *testing.T) {
	testutils.LookPathOrSkip(t, "g++")
	lib := testutils.BuildC(t, filepath.Join("testdata", "klass.cpp"), "-shared", "-fPIC")
	tab, err := openFile(t, lib).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"ns::Klass::method(int)": false, "ns::free_function(char const*, long)": false, "klass_entry": false}
	for _, s := range tab.All() {
		d := Demangle(s.Name)
		if _, ok := want[d]; ok {
			want[d] = true
			if d != "klass_entry" && !strings.HasPrefix(s.Name, "_Z") {
				t.Errorf("%s is stored as %q, not mangled", d, s.Name)
			}
		}
	}
	for n, ok := range want {
		if !ok {
			t.Errorf("no symbol demangles to %q", n)
		}
	}
}

func BenchmarkDemangle(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Demangle("_ZN2ns5Klass6methodEi")
	}
}
