package e2e

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A process that runs one program and then execs another with its code at
// the same addresses (two builds of testdata/execspin.c without PIE, as
// the Go toolchain's binaries all are at 0x400000: the go command's
// children before they exec a compiler) has each program's samples named
// in that program, as perf names them: the samples before the exec were
// charged to the second program's function at their addresses. With
// debug information the first program's function is named from the
// source lines the recorder describes by build-id; with its symbol table
// only, from the name the recorder gives its address alone.
func TestExecSameAddresses(t *testing.T) {
	for _, debug := range []string{"-g", "-g0"} {
		t.Run(debug, func(t *testing.T) {
			dir := t.TempDir()
			first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
			for _, b := range []string{first, second} {
				tool(t, "gcc", "-O1", debug, "-no-pie", "-fno-omit-frame-pointer", "-Wl,--build-id",
					"-DSPIN=spin_"+filepath.Base(b), "-o", b, testdata("execspin.c"))
			}
			a, b := symbolAddr(t, first, "spin_first"), symbolAddr(t, second, "spin_second")
			if a != b {
				t.Fatalf("spin_first at %#x, spin_second at %#x: the fixture needs them at one address", a, b)
			}
			out := filepath.Join(dir, "capture.syscap")
			nsprof(t, "record", "-F", "2000", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network",
				"--", first, "0.4", second, "0.4")
			r := reportJSON(t, out)
			if len(r.Groups) != 1 || r.Groups[0].Samples == 0 {
				t.Fatalf("report: %+v", r.Groups)
			}
			g := r.Groups[0]
			self := map[string]int{}
			var names []string
			for _, f := range g.Functions {
				self[f.Name+" "+f.DSO] += f.Self
				names = append(names, fmt.Sprintf("%s[%s](%d)", f.Name, f.DSO, f.Self))
			}
			// Each spins for as long as the other: about half of the
			// samples each (measured: 785-800 of 1602-1617).
			for _, want := range []string{"spin_first first", "spin_second second"} {
				if n := self[want]; n*10 < g.Samples*3 {
					t.Errorf("%s: self %d of %d samples, want about half; functions: %s", want, n, g.Samples, strings.Join(names, " "))
				}
			}
			checkExecComms(t, out)
		})
	}
}

// checkExecComms checks that the capture of execspin's first program
// exec'ing its second has each program's samples under that program's
// comm, as `perf report --sort comm` has them: in `report --by comm`
// and in the pprof export's comm labels; and that the processes view
// lists both programs.
func checkExecComms(t *testing.T, capture string) {
	t.Helper()
	byComm := map[string]map[string]int{} // comm -> function -> self
	for _, g := range reportJSON(t, capture, "--by", "comm").Groups {
		byComm[g.Key] = map[string]int{}
		for _, f := range g.Functions {
			byComm[g.Key][f.Name] += f.Self
		}
	}
	var procs struct {
		Processes []struct {
			Programs []struct {
				Comm string `json:"comm"`
			} `json:"programs"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(nsprof(t, "report", capture, "--processes", "--json")), &procs); err != nil {
		t.Fatal(err)
	}
	var programs []string
	for _, p := range procs.Processes {
		for _, pg := range p.Programs {
			programs = append(programs, pg.Comm)
		}
	}
	if strings.Join(programs, " ") != "first second" {
		t.Errorf("report --processes: programs %q, want the process's first and second", programs)
	}
	p := exportPprof(t, capture)
	labelled := map[string]map[string]int64{} // comm -> leaf function -> samples
	for _, s := range p.Sample {
		comm := strings.Join(s.Label["comm"], ",")
		if labelled[comm] == nil {
			labelled[comm] = map[string]int64{}
		}
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
			labelled[comm][s.Location[0].Line[0].Function.Name] += s.Value[0]
		}
	}
	for _, prog := range []string{"first", "second"} {
		own, other := "spin_"+prog, "spin_first"
		if prog == "first" {
			other = "spin_second"
		}
		if g := byComm[prog]; g[own] == 0 || g[other] != 0 {
			t.Errorf("report --by comm, group %q: %s self %d, %s self %d; want the first only (groups %v)", prog, own, g[own], other, g[other], byComm)
		}
		if l := labelled[prog]; l[own] == 0 || l[other] != 0 {
			t.Errorf("pprof samples labelled comm=%s: %s %d, %s %d; want the first only (labels %v)", prog, own, l[own], other, l[other], labelled)
		}
	}
}

// symbolAddr returns the address of the symbol name in the ELF file at
// path.
func symbolAddr(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("%s: no symbol %s", path, name)
	return 0
}
