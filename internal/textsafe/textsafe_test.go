package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"main.run", "main.run"},
		{`C:\path 'x' é 名前`, `C:\path 'x' é 名前`},
		{"\x1b]0;owned\a\x1b[2J", `\x1b]0;owned\a\x1b[2J`},
		{"a\nb\tc\rd\x00\x7f", `a\nb\tc\rd\x00\x7f`},
		{"csi\u009b1m bidi\u202e", `csi\u009b1m bidi\u202e`},
		{"bad\xff\xc2utf8", `bad\xff\xc2utf8`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if i := RawControl(Escape(c.in)); i >= 0 {
			t.Errorf("Escape(%q) has a control character at byte %d", c.in, i)
		}
	}
}

func TestName(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	if got := Name(long, 0); utf8.RuneCountInString(got) != MaxRunes || !strings.HasSuffix(got, "…") {
		t.Errorf("Name of 100 KB: %d runes", utf8.RuneCountInString(got))
	}
	if got := Name("\x1bé"+long, 5); got != `\x1b…` {
		t.Errorf("Name(…, 5) = %q", got)
	}
	if got := Lines("a\x1b\nb", "\n  "); got != "a\\x1b\n  b" {
		t.Errorf("Lines = %q", got)
	}
}

func TestJSONWriter(t *testing.T) {
	var b strings.Builder
	doc := `{"name": "a` + "\x7f\u009b\u00e9" + `"}`
	if _, err := JSONWriter(&b).Write([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	if want := `{"name": "a\u007f\u009bé"}`; b.String() != want {
		t.Errorf("JSONWriter wrote %q, want %q", b.String(), want)
	}
}
