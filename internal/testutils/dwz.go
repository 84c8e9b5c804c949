package testutils

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// DWZOptions describes the programs [BuildDWZ] builds.
type DWZOptions struct {
	// Header is included by both programs (as dwz.h): the DIEs of its
	// functions, alike in both, are what dwz -m moves into the
	// supplementary file.
	Header string
	// MainA and MainB follow the include in each program.
	MainA, MainB string
	// CFlags are more gcc flags (gcc gets -O2 -g first).
	CFlags []string
	// Common is the host path dwz writes the supplementary file at;
	// Link the path the debug files' links give (Common when empty).
	Common, Link string
	// DWARF5 has dwz write DWARF 5's links (.debug_sup,
	// DW_FORM_ref_sup4, DW_FORM_strp_sup) instead of GNU's
	// (.gnu_debugaltlink, DW_FORM_GNU_ref_alt, DW_FORM_GNU_strp_alt).
	DWARF5 bool
}

// DWZFixture is what [BuildDWZ] built.
type DWZFixture struct {
	// Bin is program a, stripped, with a .gnu_debuglink to Debug.
	Bin, Debug string
	// Common is the supplementary file.
	Common string
}

// BuildDWZ builds, in dir, two programs as o says, keeps the debug
// information of each in a debug file of its own, and has dwz -m move
// what the two share into one supplementary file, as Debian and Fedora
// build their debug packages. It fails the test unless the inlined calls
// of program a's debug file do refer into that file.
func BuildDWZ(t *testing.T, dir string, o DWZOptions) DWZFixture {
	t.Helper()
	dwz := LookPathOrSkip(t, "dwz")
	if err := os.WriteFile(filepath.Join(dir, "dwz.h"), []byte(o.Header), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, main := range map[string]string{"a": o.MainA, "b": o.MainB} {
		src := filepath.Join(dir, name+".c")
		if err := os.WriteFile(src, []byte("#include \"dwz.h\"\n"+main), 0o644); err != nil {
			t.Fatal(err)
		}
		full := filepath.Join(dir, name+".full")
		runTool(t, "gcc", append(append([]string{"-O2", "-g"}, o.CFlags...), "-o", full, src)...)
		runTool(t, "objcopy", "--only-keep-debug", full, filepath.Join(dir, name+".debug"))
	}
	fx := DWZFixture{Bin: filepath.Join(dir, "a"), Debug: filepath.Join(dir, "a.debug"), Common: o.Common}
	link := o.Link
	if link == "" {
		link = o.Common
	}
	args := []string{"-m", o.Common, "-M", link, fx.Debug, filepath.Join(dir, "b.debug")}
	origin := "DW_FORM_GNU_ref_alt"
	if o.DWARF5 {
		args, origin = append([]string{"-5"}, args...), "DW_FORM_ref_sup4"
	}
	if out, err := exec.Command(dwz, args...).CombinedOutput(); err != nil {
		t.Fatalf("dwz: %v\n%s", err, out)
	}
	if abbrev := runTool(t, "readelf", "--debug-dump=abbrev", fx.Debug); !strings.Contains(abbrev, "DW_AT_abstract_origin "+origin) {
		t.Fatalf("dwz wrote no abstract origin of form %s:\n%s", origin, abbrev)
	}
	runTool(t, "strip", "-o", fx.Bin, filepath.Join(dir, "a.full"))
	runTool(t, "objcopy", "--add-gnu-debuglink="+fx.Debug, fx.Bin)
	return fx
}

// runTool runs a tool and returns its output; a failure fails the test.
func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(LookPathOrSkip(t, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
