package symbol

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePerfMap(t *testing.T) {
	const in = `7f0000001000 40 LazyCompile:~foo file:///a.js:1:10
0x7f0000002000 0x100 Builtin: ArgumentsAdaptorTrampoline
7f0000003000 20 java.lang.String::hashCode()
garbage
7f0000001000 80 LazyCompile:*foo file:///a.js:1:10
7f0000004000 0 empty
7f0000005000 10 truncat`
	tab, err := ParsePerfMap(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		want string
		ok   bool
	}{
		{0x7f0000001000, "LazyCompile:*foo file:///a.js:1:10", true}, // the later line wins
		{0x7f000000107f, "LazyCompile:*foo file:///a.js:1:10", true},
		{0x7f0000001080, "", false},
		{0x7f00000020ff, "Builtin: ArgumentsAdaptorTrampoline", true},
		{0x7f0000003010, "java.lang.String::hashCode()", true},
		{0x7f0000003020, "", false},
		{0x7f0000004000, "", false},
		{0x7f0000005000, "truncat", true},
	} {
		s, ok := tab.Lookup(tc.addr)
		if ok != tc.ok || s.Name != tc.want {
			t.Errorf("Lookup(%#x) = %q, %v; want %q, %v", tc.addr, s.Name, ok, tc.want, tc.ok)
		}
	}
}

func TestParsePerfMapAllBad(t *testing.T) {
	_, err := ParsePerfMap(strings.NewReader("\nnot a map\nxyz 10 foo\n"))
	se, ok := errors.AsType[*SyntaxError](err)
	if !ok || se.Line != 2 {
		t.Errorf("err = %v, want a *SyntaxError on line 2", err)
	}
	tab, err := ParsePerfMap(strings.NewReader(""))
	if err != nil || tab.Len() != 0 {
		t.Errorf("empty map: %d symbols, %v", tab.Len(), err)
	}
}
