package symbol

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// addr2lineFrames asks binutils' addr2line -i -f -C for the inline chain
// at each address: function, file base name and line, innermost first.
func addr2lineFrames(t *testing.T, bin string, addrs []uint64) [][]Frame {
	t.Helper()
	a2l := testutils.LookPathOrSkip(t, "addr2line")
	var in bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&in, "%#x\n", a)
	}
	cmd := exec.Command(a2l, "-a", "-i", "-f", "-C", "-e", bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	var res [][]Frame
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "0x") {
			res = append(res, nil)
			continue
		}
		if len(res) == 0 || !sc.Scan() {
			t.Fatalf("addr2line output out of step at %q", line)
		}
		loc := sc.Text()
		if i := strings.Index(loc, " (discriminator"); i >= 0 {
			loc = loc[:i]
		}
		file, ln, _ := strings.Cut(loc, ":")
		n, _ := strconv.Atoi(ln)
		res[len(res)-1] = append(res[len(res)-1], Frame{Function: line, File: filepath.Base(file), Line: n})
	}
	if len(res) != len(addrs) {
		t.Fatalf("addr2line answered %d of %d addresses", len(res), len(addrs))
	}
	return res
}

// Every address of a function with two levels of always_inline calls
// gets the chain binutils' addr2line gives, and the hot loop's addresses
// name inl_leaf inside inl_middle inside inl_outer.
func TestFramesMatchAddr2line(t *testing.T) {
	bin := testutils.BuildFixture(t, "inlined", "-O2")
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, _ := ef.Symbols()
	var addrs []uint64
	for _, s := range syms {
		if s.Name == "inl_outer" || s.Name == "main" {
			for a := s.Value; a < s.Value+s.Size; a++ {
				addrs = append(addrs, a)
			}
		}
	}
	if len(addrs) == 0 {
		t.Fatal("no inl_outer/main in the fixture's .symtab")
	}
	l := &Loader{}
	s, err := l.Load(openFile(t, bin), bin)
	if err != nil {
		t.Fatal(err)
	}
	want := addr2lineFrames(t, bin, addrs)
	leafChains, bad := 0, 0
	for i, a := range addrs {
		got := s.Frames(a)
		for j := range got {
			got[j].File = filepath.Base(got[j].File)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			if bad++; bad <= 10 {
				t.Errorf("%#x: Frames = %v, addr2line %v", a, got, want[i])
			}
		}
		if len(got) == 3 && got[0].Function == "inl_leaf" && got[1].Function == "inl_middle" && got[2].Function == "inl_outer" {
			leafChains++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d addresses differ from addr2line", bad, len(addrs))
	}
	if leafChains == 0 {
		t.Error("no address names inl_leaf <- inl_middle <- inl_outer")
	}
	t.Logf("%d addresses, %d in inl_leaf inlined twice", len(addrs), leafChains)
}
