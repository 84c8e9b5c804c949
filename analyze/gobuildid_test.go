package analyze

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// TestHostGoBuildID: a Go binary linked without a GNU build-id is
// recorded with its Go build-id (hex) on its MAP frames; the host
// symbolizer takes the host's file with that Go build-id and names its
// functions, as it does by GNU build-id; but not in a capture whose
// recorder says its bundle is complete.
func TestHostGoBuildID(t *testing.T) {
	goTool := testutils.LookPathOrSkip(t, "go")
	dir := t.TempDir()
	src := "package main\n\nfunc main() { println(\"hi\") }\n"
	for name, data := range map[string]string{"go.mod": "module hi\n\ngo 1.21\n", "main.go": src} {
		if err := os.WriteFile(dir+"/"+name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := dir + "/hi"
	cmd := exec.Command(goTool, "build", "-ldflags=-B=none", "-o", bin, ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := symbol.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	goID := f.GoBuildID()
	f.Close()
	if goID == nil {
		t.Fatal("no Go build-id")
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	ef.Close()
	if err != nil {
		t.Fatal(err)
	}
	var mainAddr uint64
	for _, s := range syms {
		if s.Name == "main.main" {
			mainAddr = s.Value
		}
	}
	if mainAddr == 0 {
		t.Fatal("no main.main")
	}
	for _, tc := range []struct {
		id string
		// complete writes a bundle (naming another address) that the
		// recorder says is complete: host files are then not read.
		complete bool
		want     bool
	}{
		{hex.EncodeToString(goID), false, true},
		{hex.EncodeToString([]byte("another/go/build/id")), false, false},
		{hex.EncodeToString(goID), true, false},
	} {
		var buf bytes.Buffer
		w, err := capture.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		h := capture.FrameHeader{PID: 10, Time: 1, CPU: -1}
		for _, fr := range []capture.Frame{
			&capture.Process{FrameHeader: h, Cmdline: bin},
			&capture.Map{FrameHeader: h, Start: 0x400000, End: 0x800000, Filename: bin, BuildID: tc.id},
			&capture.Sample{FrameHeader: h, TID: 10, Addrs: []uint64{capture.ContextUser, mainAddr + 1}},
		} {
			if err := w.WriteFrame(fr); err != nil {
				t.Fatal(err)
			}
		}
		if tc.complete {
			b, err := capture.EncodeSymbols([]capture.Symbol{{PID: 10, Begin: 0x700000, End: 0x700010, Name: "elsewhere"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AddMetadata(2, capture.MetaSymbolsComplete, "1"); err != nil {
				t.Fatal(err)
			}
			if err := w.AddSymbolsFile(capture.FrameHeader{PID: -1, CPU: -1, Time: 2}, b); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		p, err := LoadBytes(buf.Bytes(), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.View(ViewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		top := v.Top(v.Samples)
		if got := len(top) > 0 && top[0].Name == "main.main"; got != tc.want {
			t.Errorf("build-id %s, complete bundle %v: top %+v, want main.main named: %v", tc.id, tc.complete, top, tc.want)
		}
	}
}
