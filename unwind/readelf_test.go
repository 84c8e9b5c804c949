package unwind

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

const libcPath = "/usr/lib/x86_64-linux-gnu/libc.so.6"

// oracleRow is one row of readelf --debug-dump=frames-interp, reduced to
// the columns a table keeps.
type oracleRow struct {
	loc          uint64
	cfa, bp, ra  string
	fdeBegin, fe uint64
}

var fdeLine = regexp.MustCompile(`FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)`)

// readelfRows runs readelf on path and returns its rows for section
// (".eh_frame" or ".debug_frame").
func readelfRows(t *testing.T, path, sect string) []oracleRow {
	t.Helper()
	readelf := testutils.LookPathOrSkip(t, "readelf")
	// readelf 2.40 exits 1 on libc although it prints every entry.
	out, err := exec.Command(readelf, "--debug-dump=frames-interp", path).Output()
	if _, exit := err.(*exec.ExitError); err != nil && (!exit || len(out) == 0) {
		t.Fatalf("readelf %s: %v", path, err)
	}
	var rows []oracleRow
	in := false
	var cols []string
	var begin, end uint64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Contents of the ") {
			in = strings.Contains(line, sect+" section")
			continue
		}
		if !in {
			continue
		}
		f := fields(line)
		switch {
		case len(f) == 0:
			cols = nil
		case fdeLine.MatchString(line):
			m := fdeLine.FindStringSubmatch(line)
			begin, _ = strconv.ParseUint(m[1], 16, 64)
			end, _ = strconv.ParseUint(m[2], 16, 64)
			cols = []string{}
		case strings.Contains(line, " CIE"):
			cols = nil
		case f[0] == "LOC":
			if cols != nil {
				cols = f
			}
		case cols != nil && len(cols) > 0:
			loc, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				t.Fatalf("readelf line %q", line)
			}
			r := oracleRow{loc: loc, cfa: f[1], bp: "u", ra: "u", fdeBegin: begin, fe: end}
			for i, c := range cols[2:] {
				if 2+i >= len(f) {
					break
				}
				switch c {
				case "rbp":
					r.bp = norm(f[2+i])
				case "ra":
					r.ra = norm(f[2+i])
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// fields splits a readelf line, keeping a register rule such as
// "r9 (r9)" as one field.
func fields(line string) []string {
	var out []string
	for _, w := range strings.Fields(line) {
		if strings.HasPrefix(w, "(") && len(out) > 0 {
			out[len(out)-1] += " " + w
			continue
		}
		out = append(out, w)
	}
	return out
}

var regRule = regexp.MustCompile(`^r[0-9a-z]+( \([a-z0-9]+\))?$`)

// norm maps readelf's register rules onto what a table distinguishes.
func norm(s string) string {
	switch {
	case s == "s":
		return "u"
	case s == "vexp":
		return "exp"
	case regRule.MatchString(s):
		return "r"
	}
	return s
}

var dwarfNames = []string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"}

// format prints a row as readelf does.
func (r *row) format() (cfa, bp, ra string) {
	switch r.cfa {
	case cfaSP:
		cfa = fmt.Sprintf("rsp%+d", r.cfaOff)
	case cfaBP:
		cfa = fmt.Sprintf("rbp%+d", r.cfaOff)
	case cfaReg:
		name := fmt.Sprintf("r%d", r.arg)
		if int(r.arg) < len(dwarfNames) {
			name = dwarfNames[r.arg]
		}
		cfa = fmt.Sprintf("%s%+d", name, r.cfaOff)
	default:
		cfa = "exp"
	}
	rule := func(k ruleKind, off int16) string {
		switch k {
		case ruleCFA:
			return fmt.Sprintf("c%+d", off)
		case ruleValCFA:
			return fmt.Sprintf("v%+d", off)
		case ruleSP, ruleExpr:
			return "exp"
		case ruleReg:
			return "r"
		}
		return "u"
	}
	return cfa, rule(r.bp, r.bpOff), rule(r.ra, r.raOff)
}

// compareOracle checks that t agrees with readelf at every readelf row and
// at every row of t.
func compareOracle(t *testing.T, tab *Table, want []oracleRow) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("readelf printed no rows")
	}
	bad := 0
	check := func(at uint64, w oracleRow) {
		r := tab.find(at)
		if r == nil {
			bad++
			if bad < 10 {
				t.Errorf("%#x: no row; readelf has %s %s %s", at, w.cfa, w.bp, w.ra)
			}
			return
		}
		cfa, bp, ra := r.format()
		if cfa != w.cfa || bp != w.bp || ra != w.ra {
			bad++
			if bad < 10 {
				t.Errorf("%#x (FDE %#x..%#x): got %s %s %s, readelf %s %s %s", at, w.fdeBegin, w.fe, cfa, bp, ra, w.cfa, w.bp, w.ra)
			}
		}
	}
	for i, w := range want {
		check(w.loc, w)
		// Our rows inside this readelf row's range agree with it too.
		next := w.fe
		if i+1 < len(want) && want[i+1].fdeBegin == w.fdeBegin {
			next = want[i+1].loc
		}
		check(next-1, w)
	}
	if bad > 0 {
		t.Fatalf("%d of %d readelf rows disagree", bad, len(want))
	}
	t.Logf("%d readelf rows agree; table has %d rows from %d FDEs (%d bytes)", len(want), tab.Len(), tab.fdes, tab.Size())
}

func loadFile(t *testing.T, path string) *Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := Load(f, nil)
	if err != nil {
		t.Fatalf("Load %s: %v", path, err)
	}
	return tab
}

func TestReadelfLibc(t *testing.T) {
	if _, err := os.Stat(libcPath); err != nil {
		testutils.RequireCI(t, "%s: %v", libcPath, err)
	}
	compareOracle(t, loadFile(t, libcPath), readelfRows(t, libcPath, ".eh_frame"))
}

func TestReadelfFixtureEHFrame(t *testing.T) {
	bin := testutils.BuildFixture(t, "omitfp", "-O2", "-fomit-frame-pointer")
	compareOracle(t, loadFile(t, bin), readelfRows(t, bin, ".eh_frame"))
}

func TestReadelfFixtureDebugFrame(t *testing.T) {
	// Without asynchronous unwind tables GCC writes .debug_frame only.
	bin := testutils.BuildFixture(t, "omitfp", "-O2", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-exceptions")
	want := readelfRows(t, bin, ".debug_frame")
	compareOracle(t, loadFile(t, bin), want)
}
