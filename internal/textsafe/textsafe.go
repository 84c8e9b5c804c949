// Package textsafe makes strings read from a capture safe to print: a
// function, file, process, mark or log name is the profiled program's to
// choose, and printed raw its control characters would drive the
// terminal (set its title, clear the screen) or break the layout of a
// table or a line-based format.
package textsafe

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxRunes bounds a name printed where no terminal width applies: long
// enough for any real C++ or Rust symbol a reader would read whole (they
// run to a few hundred characters), short enough that a 100 KB name does
// not make a report of 100 KB lines.
const MaxRunes = 512

// Escape returns s with every character that is not printable written as
// a Go escape, as `nsprof dump` quotes strings (%q): C0 controls and DEL
// as \a \b \f \n \r \t \v or \x1b, C1 controls and other non-printable
// runes (U+009B CSI, U+202E RIGHT-TO-LEFT OVERRIDE) as \u009b, and each
// byte of invalid UTF-8 as \xff. Backslashes are kept as they are, so
// printable names read unchanged. The result holds no byte below 0x20,
// no 0x7f and no C1 control.
func Escape(s string) string {
	i := unsafeIndex(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[s[i]>>4])
			b.WriteByte("0123456789abcdef"[s[i]&15])
		case safe(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // 'x' with x escaped
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// safe reports whether r prints as itself: what strconv.Quote keeps.
func safe(r rune) bool { return strconv.IsPrint(r) }

// unsafeIndex returns the index of the first byte of s that Escape
// changes, or -1.
func unsafeIndex(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !safe(r) {
			return i
		}
		i += size
	}
	return -1
}

// Cut returns s cut to n runes, ending in "…" when cut; n <= 0 keeps s.
func Cut(s string, n int) string {
	if n <= 0 || len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	if n == 1 {
		return "…"
	}
	i, k := 0, 0
	for k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + "…"
}

// Name returns s escaped and cut to width runes, or to MaxRunes when
// width is 0 (output not to a terminal).
func Name(s string, width int) string {
	if width <= 0 {
		width = MaxRunes
	}
	return Cut(Escape(s), width)
}

// Lines is Escape for text whose newlines are its own line breaks, such
// as a multi-line log message: each line is escaped, and the lines are
// joined by sep (for example "\n    " to indent them).
func Lines(s, sep string) string {
	if !strings.Contains(s, "\n") {
		return Escape(s)
	}
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = Escape(p)
	}
	return strings.Join(parts, sep)
}

// RawControl returns the byte index of the first control character in s,
// or -1: a C0 control (tab and newline included), DEL, or a C1 control
// (U+0080 to U+009F, also as a lone byte 0x80 to 0x9f of invalid UTF-8,
// which some terminals take as one). Tests use it on printed output.
func RawControl(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			r = rune(s[i])
		}
		if r < 0x20 || r >= 0x7f && r <= 0x9f {
			return i
		}
		i += size
	}
	return -1
}

// JSONWriter returns a writer passing JSON text to w with DEL and the C1
// controls, which encoding/json writes raw inside strings, written as
// \u007f and \u0080 to \u009f: the same document, with no control
// character a terminal would act on. Outside strings JSON text holds only
// ASCII without DEL, so the rewriting never changes the structure. A C1
// rune split across two writes passes raw; encoding/json writes a
// document in one.
func JSONWriter(w io.Writer) io.Writer { return jsonWriter{w} }

type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(p []byte) (int, error) {
	if !bytes.ContainsFunc(p, func(r rune) bool { return r == 0x7f || r >= 0x80 && r <= 0x9f }) {
		return j.w.Write(p)
	}
	out := make([]byte, 0, len(p)+64)
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		if r == 0x7f || r >= 0x80 && r <= 0x9f && size == 2 {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	if _, err := j.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
