package export

import (
	"bytes"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"

	"nsprof/analyze"
)

// xmlSafe is what a name becomes in XML: U+FFFD for each invalid byte
// and each character XML 1.0 does not allow.
func xmlSafe(s string) string {
	r := []rune(s)
	for i, c := range r {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			r[i] = '\uFFFD'
		}
	}
	return string(r)
}

// TestSVGHostileNames parses the flame graph with a strict XML decoder:
// it is well-formed, has exactly one script (ours), every hostile name
// comes back intact as attribute and title text, and frame widths add up.
func TestSVGHostileNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    analyze.ViewOptions
		by   analyze.GroupBy
	}{
		{"top-down", analyze.ViewOptions{}, analyze.GroupNone},
		{"inverted-by-process", analyze.ViewOptions{Invert: true}, analyze.GroupProcess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := loadTestView(t, tc.o)
			out := generate(t, v, FormatSVG, Options{Title: `<b>"title"</b> & ]]>`, By: tc.by})
			d := xml.NewDecoder(bytes.NewReader(out))
			d.Strict = true
			scripts, frames := 0, map[string]float64{}
			var stack []string
			var name string
			var titles []string
			var text strings.Builder
			for {
				tok, err := d.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("not well-formed XML: %v\n%s", err, out)
				}
				switch e := tok.(type) {
				case xml.StartElement:
					stack = append(stack, e.Name.Local)
					text.Reset()
					attr := map[string]string{}
					for _, a := range e.Attr {
						attr[a.Name.Local] = a.Value
					}
					switch e.Name.Local {
					case "script":
						scripts++
					case "g":
						name = attr["data-name"]
					case "rect":
						if w, err := strconv.ParseFloat(attr["width"], 64); err == nil && len(stack) > 1 && stack[len(stack)-2] == "g" {
							frames[name] += w
						}
					}
					for k := range attr {
						if strings.HasPrefix(k, "on") && e.Name.Local != "g" && e.Name.Local != "text" {
							t.Errorf("event handler %s on <%s>", k, e.Name.Local)
						}
					}
				case xml.CharData:
					text.Write(e)
				case xml.EndElement:
					if e.Name.Local == "title" {
						titles = append(titles, text.String())
					}
					stack = stack[:len(stack)-1]
				}
			}
			if scripts != 1 {
				t.Errorf("%d scripts, want 1", scripts)
			}
			for _, h := range hostile {
				want := xmlSafe(h)
				if _, ok := frames[want]; !ok {
					t.Errorf("no frame named %q", want)
				}
				found := false
				for _, ti := range titles {
					found = found || strings.HasPrefix(ti, want)
				}
				if !found {
					t.Errorf("no title for %q", want)
				}
			}
			if !bytes.Contains(out, []byte("&lt;b&gt;&quot;title&quot;&lt;/b&gt; &amp; ]]&gt;")) {
				t.Error("title not escaped")
			}
			if w := frames["all"]; w < 1179 || w > 1181 {
				t.Errorf("root frame %.1f px wide, want 1180", w)
			}
		})
	}
}

func TestXMLEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		"<a href='x'>": "&lt;a href=&apos;x&apos;&gt;",
		"a&b\"":        "a&amp;b&quot;",
		"\x00\x1f\t\n": "\uFFFD\uFFFD&#9;&#10;",
		"\xff":         "\uFFFD",
		"\uFFFE":       "\uFFFD",
		"héllo ✓":      "héllo ✓",
	} {
		if got := xmlEscape(in); got != want {
			t.Errorf("xmlEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFitText(t *testing.T) {
	for _, tc := range []struct {
		name string
		wide float64
		want string
	}{
		{"function", 1000, "function"},
		{"function", 6 + 5*svgCharW, "fun.."},
		{"function", 6 + 2*svgCharW, ""},
		{"ääääää", 6 + 4*svgCharW, "ää.."},
	} {
		if got := fitText(tc.name, tc.wide); got != tc.want {
			t.Errorf("fitText(%q, %v) = %q, want %q", tc.name, tc.wide, got, tc.want)
		}
	}
}

// TestSVGScriptConstants: the script refits labels and places zoomed
// frames with the renderer's character width and margin.
func TestSVGScriptConstants(t *testing.T) {
	want := "charW = " + strconv.FormatFloat(svgCharW, 'g', -1, 64) + ", pad = " + strconv.Itoa(svgPad) + ";"
	if !strings.Contains(svgScript, want) {
		t.Errorf("svgScript does not set %q", want)
	}
}
