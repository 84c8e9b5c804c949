package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nsprof/capture"
	"nsprof/internal/textsafe"
)

// fuzzViews are the report views and text exports FuzzReport renders each
// input with: the table, the tree, JSON, the timeline views that print
// names and messages, and folded stacks. TestReportHostileNames tries all
// the others on its capture.
var fuzzViews = [][]string{
	{"report", "--partial"}, {"report", "--partial", "--tree", "--depth", "0", "--min-percent", "0"},
	{"report", "--partial", "--json"}, {"report", "--partial", "--marks"},
	{"report", "--partial", "--processes"}, {"report", "--partial", "--logs"},
	{"export", "--partial", "--format", "folded"},
}

// fuzzAllocBound is the most one view of an input of n bytes may allocate
// in all (runtime.MemStats.TotalAlloc, which bounds the peak heap from
// above): 64 MiB for the program's own tables and buffers, plus 256 bytes
// per input byte. The embedded files decompress to at most 32 times their
// stored size (capture.MaxInflateRatio), the lines file decodes to at most
// some 13 times the address bytes of the samples, and the report's tables
// cost a few times the frames they come from.
func fuzzAllocBound(n int) uint64 { return 64<<20 + 256*uint64(n) }

// FuzzReport loads hostile captures (gzip bombs, damaged frames, names
// with terminal escapes and huge names, and what the fuzzer makes of them)
// and renders them with every report view: no line of any output may hold
// a raw control character, and no view may allocate more than
// fuzzAllocBound.
func FuzzReport(f *testing.F) {
	for _, s := range hostileSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.syscap")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var most uint64
		for _, args := range fuzzViews {
			what := strings.Join(args, " ")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			stdout, stderr, _ := nsprof(t, nil, append(slices.Clip(args), path)...)
			runtime.ReadMemStats(&after)
			n := after.TotalAlloc - before.TotalAlloc
			if n > fuzzAllocBound(len(data)) {
				t.Errorf("%s: allocated %d bytes for a %d-byte capture, more than %d", what, n, len(data), fuzzAllocBound(len(data)))
			}
			most = max(most, n)
			for _, out := range []string{stdout, stderr} {
				for i, l := range strings.Split(out, "\n") {
					if j := textsafe.RawControl(l); j >= 0 {
						t.Fatalf("%s: line %d has control character %q at byte %d: %.300q", what, i+1, l[j:j+1], j, l)
					}
				}
			}
		}
		t.Logf("%d-byte capture: at most %d bytes allocated by a view (bound %d)", len(data), most, fuzzAllocBound(len(data)))
	})
}

// hostileSeeds returns captures for FuzzReport: one with hostile names
// (of 2 KB, to keep the inputs small), one with gzip bombs of 16 MiB
// (refused at 1 MiB), one with a lines file of more records than
// addresses, and each of them cut short and damaged in a frame.
func hostileSeeds(tb testing.TB) [][]byte {
	dir := tb.TempDir()
	var seeds [][]byte
	add := func(name string, write func(testing.TB, string)) {
		path := filepath.Join(dir, name)
		write(tb, path)
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		flip := bytes.Clone(b)
		flip[capture.HeaderSize+2] ^= 0xff // the first frame's length
		seeds = append(seeds, b, b[:len(b)*2/3], flip)
	}
	add("hostile.syscap", func(tb testing.TB, path string) { writeHostileCaptureLen(tb, path, 2000) })
	add("bomb.syscap", func(tb testing.TB, path string) { writeBombCaptureSize(tb, path, nil, 16<<20) })
	var text bytes.Buffer
	text.WriteString("nsprof-lines 1\n")
	for a := range 2_000 {
		text.WriteString("10\t" + strconv.FormatInt(0x400000+int64(a), 16) + "\tf\tf.c\t1\n")
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(text.Bytes())
	zw.Close()
	add("lines.syscap", func(tb testing.TB, path string) { writeBombCaptureSize(tb, path, z.Bytes(), 1<<20) })
	return seeds
}
