package capture

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// TestGolden checks the byte image of a capture of every frame type in both
// byte orders, and its text dump, against files in testdata/golden. Any
// change to the encoding or the dump format shows up as a diff here.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order binary.ByteOrder
	}{{"all-le", binary.LittleEndian}, {"all-be", binary.BigEndian}} {
		t.Run(tc.name, func(t *testing.T) {
			b := writeAll(t, WriterOptions{
				ByteOrder:     tc.order,
				NewFrameTypes: true,
				StartTime:     999_000_000,
				CaptureTime:   time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
			}, allFrames())
			hdr, frames, err := readAll(t, b)
			if err != nil {
				t.Fatal(err)
			}
			d := Dumper{Start: hdr.StartTime}
			var text bytes.Buffer
			for _, f := range frames {
				text.Write(d.Append(nil, f))
				text.WriteByte('\n')
			}
			bin := filepath.Join("testdata", "golden", tc.name+".syscap")
			txt := filepath.Join("testdata", "golden", tc.name+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(bin), 0o755)
				os.WriteFile(bin, b, 0o644)
				os.WriteFile(txt, text.Bytes(), 0o644)
			}
			wantBin, err := os.ReadFile(bin)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			wantTxt, _ := os.ReadFile(txt)
			if !bytes.Equal(b, wantBin) {
				t.Errorf("%s: encoding changed (%d bytes, golden %d)", bin, len(b), len(wantBin))
			}
			if !bytes.Equal(text.Bytes(), wantTxt) {
				t.Errorf("%s: dump changed:\n got:\n%s\nwant:\n%s", txt, text.Bytes(), wantTxt)
			}
			// The checked-in file reads back to the same dump.
			_, again, err := readAll(t, wantBin)
			if err != nil || !equalFrames(again, frames) {
				t.Errorf("golden capture reads back differently: %v", err)
			}
		})
	}
}
