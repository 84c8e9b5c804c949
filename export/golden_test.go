package export

import (
	"bytes"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenFormats are the formats of the golden files, pprof decoded and
// printed by github.com/google/pprof/profile.
var goldenFormats = []struct {
	f   Format
	ext string
}{
	{FormatPprof, "pprof.txt"}, {FormatSpeedscope, "speedscope.json"}, {FormatFolded, "folded"}, {FormatSVG, "svg"},
}

// goldenOutput returns what is compared for format f: pprof decoded and
// printed (the gzipped bytes are not stable across compressors), the
// others as written.
func goldenOutput(t *testing.T, f Format, data []byte) []byte {
	t.Helper()
	if f != FormatPprof {
		return data
	}
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decoding the pprof export: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("pprof export: %v", err)
	}
	return []byte(p.String())
}

// TestGoldenExports exports the golden captures (nsprof's CPU samples, a
// --memprof heap, Sysprof's sysprof-cli capture, a --memprof capture
// nsprof recorded) in every format, as
// `nsprof export` does (pprof without inline frames, the others with),
// the heap with --memory too, and compares each with
// testdata/golden/CAPTURE[.memory].FORMAT.
func TestGoldenExports(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"cpu", testcaptures.CPU(t)},
		{"memprof", testcaptures.Memory(t)},
		{"sysprof-cli", testcaptures.Sysprof(t)},
		{"nsprof-memprof", testcaptures.Memprof(t)},
	} {
		p, err := analyze.Load(bytes.NewReader(c.data), analyze.LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, gf := range goldenFormats {
			t.Run(c.name+"."+gf.ext, func(t *testing.T) {
				v, err := p.View(analyze.ViewOptions{Inline: gf.f != FormatPprof})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := Generate(&buf, v, gf.f, Options{Title: c.name + ".syscap"}); err != nil {
					t.Fatal(err)
				}
				testcaptures.Golden(t, filepath.Join("testdata", "golden", c.name+"."+gf.ext), goldenOutput(t, gf.f, buf.Bytes()), *update)
			})
			if c.name != "memprof" && c.name != "nsprof-memprof" {
				continue
			}
			t.Run(c.name+".memory."+gf.ext, func(t *testing.T) {
				vi, err := p.ValueIndex(analyze.AllocSpaceType.Type)
				if err != nil {
					t.Fatal(err)
				}
				v, err := p.View(analyze.ViewOptions{Inline: gf.f != FormatPprof, Value: vi})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := Generate(&buf, v, gf.f, Options{Title: c.name + ".syscap"}); err != nil {
					t.Fatal(err)
				}
				testcaptures.Golden(t, filepath.Join("testdata", "golden", c.name+".memory."+gf.ext), goldenOutput(t, gf.f, buf.Bytes()), *update)
			})
		}
	}
}

// TestGoldenExportOptions exports the CPU capture with the options that
// change the output: grouping, inverting, a focus, the SVG's width, and
// the heap weighed by another value.
func TestGoldenExportOptions(t *testing.T) {
	cpu, mem := testcaptures.CPU(t), testcaptures.Memory(t)
	for _, tc := range []struct {
		name string
		data []byte
		f    Format
		vo   analyze.ViewOptions
		o    Options
		// value is the sample type the view weighs, "" the default.
		value string
	}{
		{"cpu.by-process.folded", cpu, FormatFolded, analyze.ViewOptions{Inline: true}, Options{By: analyze.GroupProcess}, ""},
		{"cpu.by-container.speedscope.json", cpu, FormatSpeedscope, analyze.ViewOptions{Inline: true}, Options{By: analyze.GroupContainer}, ""},
		{"cpu.invert.hide-kernel.folded", cpu, FormatFolded, analyze.ViewOptions{Inline: true, Invert: true, HideKernel: true}, Options{}, ""},
		{"cpu.focus.width-600.svg", cpu, FormatSVG, analyze.ViewOptions{Inline: true, Focus: "work"}, Options{Width: 600}, ""},
		{"cpu.pid-20.pprof.txt", cpu, FormatPprof, analyze.ViewOptions{Filter: analyze.Filter{PIDs: []int32{20}}}, Options{}, ""},
		{"memprof.inuse-objects.folded", mem, FormatFolded, analyze.ViewOptions{Inline: true}, Options{}, "inuse_objects"},
		{"memprof.inuse-space.pprof.txt", mem, FormatPprof, analyze.ViewOptions{}, Options{}, "inuse_space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := analyze.Load(bytes.NewReader(tc.data), analyze.LoadOptions{NoHostFiles: true})
			if err != nil {
				t.Fatal(err)
			}
			if tc.vo.Value, err = p.ValueIndex(tc.value); err != nil {
				t.Fatal(err)
			}
			v, err := p.View(tc.vo)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Generate(&buf, v, tc.f, tc.o); err != nil {
				t.Fatal(fmt.Errorf("%v: %w", tc.f, err))
			}
			testcaptures.Golden(t, filepath.Join("testdata", "golden", "options", tc.name), goldenOutput(t, tc.f, buf.Bytes()), *update)
		})
	}
}
