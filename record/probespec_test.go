package record

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseProbeSpec(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     ProbeSpec
		err      string
	}{
		{"name", "libglib-2.0:g_main_context_dispatch", ProbeSpec{"libglib-2.0", "g_main_context_dispatch"}, ""},
		{"path with colon", "/opt/a:b/libx.so:f", ProbeSpec{"/opt/a:b/libx.so", "f"}, ""},
		{"glob", "prog:work_*", ProbeSpec{"prog", "work_*"}, ""},
		{"no function", "libfoo", ProbeSpec{}, "want LIB:FUNCTION"},
		{"empty function", "libfoo:", ProbeSpec{}, "want LIB:FUNCTION"},
		{"empty library", ":f", ProbeSpec{}, "want LIB:FUNCTION"},
		{"bad glob", "libfoo:[a", ProbeSpec{}, "function pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProbeSpec(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseProbeSpec(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseProbeSpec(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestProbeSpecMatches(t *testing.T) {
	for _, tc := range []struct {
		lib, file string
		want      bool
	}{
		{"libglib-2.0", "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0.7400.6", true},
		{"glib-2.0", "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0", true},
		{"libglib-2.0.so.0", "libglib-2.0.so.0", true},
		{"libc", "/lib/x86_64-linux-gnu/libc.so.6", true},
		{"libc", "/lib/x86_64-linux-gnu/libcrypt.so.1", false},
		{"libglib-2.0", "/usr/lib/x86_64-linux-gnu/libglibmm-2.4.so.1", false},
		{"prog", "/opt/app/bin/prog", true},
		{"prog", "/opt/app/bin/prog2", false},
		{"/opt/app/bin/prog", "/opt/app/bin/prog", true},
		{"/opt/app/bin/prog", "/usr/bin/prog", false},
	} {
		if got := (ProbeSpec{Lib: tc.lib, Func: "f"}).matchesFile(tc.file); got != tc.want {
			t.Errorf("%s matches %s: %v, want %v", tc.lib, tc.file, got, tc.want)
		}
	}
	s := ProbeSpec{Lib: "x", Func: "g_main_*"}
	if !s.matchesFunc("g_main_context_dispatch") || s.matchesFunc("g_idle_add") {
		t.Errorf("%v: glob matches wrong functions", s)
	}
}

// TestLdConfDirs reads an ld.so.conf with includes, comments and a
// relative include, in order.
func TestLdConfDirs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ld.so.conf", "/first # a comment\ninclude conf.d/*.conf\n\nrelative/ignored\n/last\n")
	write("conf.d/a.conf", "# multiarch\n/a1\n/a2\n")
	write("conf.d/b.conf", "/b\ninclude\t"+filepath.Join(dir, "deep.conf")+"\n")
	write("deep.conf", "/deep\n")
	got := ldConfDirs(filepath.Join(dir, "ld.so.conf"), 0)
	want := []string{"/first", "/a1", "/a2", "/b", "/deep", "/last"}
	if !slices.Equal(got, want) {
		t.Errorf("ldConfDirs = %v, want %v", got, want)
	}
}

// TestLinkedFiles finds the C library that a program of the host links,
// through this machine's ld.so.conf, as the dynamic linker does.
func TestLinkedFiles(t *testing.T) {
	files, err := linkedFiles("/bin/sh", "")
	if err != nil {
		t.Fatal(err)
	}
	if files[0] != "/bin/sh" || !slices.ContainsFunc(files, (ProbeSpec{Lib: "libc", Func: "x"}).matchesFile) {
		t.Errorf("linkedFiles(/bin/sh) = %v, want /bin/sh and libc.so.6", files)
	}
	if _, err := linkedFiles("/etc/passwd", ""); err == nil {
		t.Error("linkedFiles of a text file: no error")
	}
}
