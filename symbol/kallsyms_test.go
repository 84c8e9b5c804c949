package symbol

import (
	"errors"
	"os"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

const kallsymsFixture = `ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000010 t __pfx_do_one
ffffffff81000020 t do_one
ffffffff81000080 D some_data
ffffffff81000100 W weak_fn
ffffffff81000200 T _etext
ffffffffc0a01000 t mod_fn	[e1000e]
ffffffffc0a01040 T mod_fn2	[e1000e]
`

func TestKallsyms(t *testing.T) {
	tab, err := NewKallsyms([]byte(kallsymsFixture))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff81000000, "_text"}, // alias with fewer underscores than _stext... and shorter
		{0xffffffff8100000f, "_text"},
		{0xffffffff81000015, "__pfx_do_one"},
		{0xffffffff81000090, "do_one"}, // data symbols are not boundaries
		{0xffffffff81000150, "weak_fn"},
		{0xffffffffc0a01001, "mod_fn [e1000e]"},
		{0xffffffffc0a01050, "mod_fn2 [e1000e]"},
	} {
		s, ok := tab.Lookup(tc.addr)
		if !ok || s.Name != tc.want {
			t.Errorf("Lookup(%#x) = %q, %v; want %q", tc.addr, s.Name, ok, tc.want)
		}
	}
	// _etext is the last core-kernel symbol: it must not claim the gap
	// up to the modules.
	if s, ok := tab.Lookup(0xffffffff90000000); ok {
		t.Errorf("Lookup in the gap before the modules = %q", s.Name)
	}
	if sym, mod := SplitModule("mod_fn [e1000e]"); sym != "mod_fn" || mod != "e1000e" {
		t.Errorf("SplitModule = %q, %q", sym, mod)
	}
	if sym, mod := SplitModule("schedule"); sym != "schedule" || mod != "" {
		t.Errorf("SplitModule = %q, %q", sym, mod)
	}
}

// TestKallsymsAliases checks the choice among symbols at one address:
// global, then weak, then local; then fewer leading underscores, then the
// shorter name.
func TestKallsymsAliases(t *testing.T) {
	k, err := NewKallsyms([]byte("ffffffff81000000 t loc\n" +
		"ffffffff81000000 W weak\n" +
		"ffffffff81000100 t a_local\n" +
		"ffffffff81000100 w b_weak\n" +
		"ffffffff81000200 t __x\n" +
		"ffffffff81000200 t yy\n" +
		"ffffffff81000300 T glob\n" +
		"ffffffff81000300 W weak2\n"))
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[uint64]string{
		0xffffffff81000000: "weak", 0xffffffff81000100: "b_weak",
		0xffffffff81000200: "yy", 0xffffffff81000300: "glob",
	} {
		if s, ok := k.Lookup(addr + 1); !ok || s.Name != want || s.Addr != addr {
			t.Errorf("Lookup(%#x) = %+v, %t; want %s", addr+1, s, ok, want)
		}
	}
	if k.Len() != 4 {
		t.Errorf("Len = %d, want 4 (one per address)", k.Len())
	}
}

func TestKallsymsEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "ffffffff81000000 D data\n"} {
		if _, err := NewKallsyms([]byte(in)); !errors.Is(err, ErrNoKernelText) {
			t.Errorf("NewKallsyms(%q): %v, want ErrNoKernelText", in, err)
		}
	}
}

func TestKallsymsRestricted(t *testing.T) {
	const restricted = "0000000000000000 T _stext\n0000000000000000 t do_one\n0000000000000000 t mod_fn\t[e1000e]\n"
	if _, err := NewKallsyms([]byte(restricted)); !errors.Is(err, ErrRestrictedKernel) {
		t.Errorf("err = %v, want ErrRestrictedKernel", err)
	}
}

func TestKallsymsMalformed(t *testing.T) {
	for _, in := range []string{
		"ffffffff81000000 T\n",
		"zzzz T foo\n",
		"ffffffff81000000 TT foo\n",
		"ffffffff81000000\n",
		"ffffffff81000000 t \t[mod]\n",
		"12345678901234567 T toolong\n",
	} {
		_, err := NewKallsyms([]byte("ffffffff81000000 T ok\n" + in))
		se, ok := errors.AsType[*SyntaxError](err)
		if !ok || se.Line != 2 {
			t.Errorf("NewKallsyms(%q): %v, want a *SyntaxError on line 2", in, err)
		}
	}
}

// TestKallsymsHost indexes the real /proc/kallsyms and checks that a
// well-known function is found at the address the file gives it.
func TestKallsymsHost(t *testing.T) {
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		testutils.RequireCI(t, "/proc/kallsyms: %v", err)
	}
	tab, err := NewKallsyms(data)
	if errors.Is(err, ErrRestrictedKernel) && os.Geteuid() != 0 {
		t.Skipf("not root: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() < 1000 {
		t.Fatalf("only %d kernel text symbols", tab.Len())
	}
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && (f[2] == "schedule" || f[2] == "do_syscall_64") && strings.EqualFold(f[1], "t") {
			var addr uint64
			for _, c := range f[0] {
				addr = addr<<4 | uint64(strings.IndexRune("0123456789abcdef", c))
			}
			s, ok := tab.Lookup(addr + 1)
			if !ok || s.Name != f[2] {
				t.Errorf("Lookup(%s+1) = %q, %v", f[2], s.Name, ok)
			}
			found++
		}
	}
	if found == 0 {
		t.Error("neither schedule nor do_syscall_64 in /proc/kallsyms")
	}
}

func BenchmarkKallsyms(b *testing.B) {
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := NewKallsyms(data); err != nil {
			b.Skip(err)
		}
	}
}
