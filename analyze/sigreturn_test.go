package analyze

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// sigProgram is a Go program that sends itself signals, so that its
// samples are taken in the signal handler, below the signal frame.
const sigProgram = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	for range 1000 {
		syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		<-c
	}
}
`

// buildStrippedGo builds sigProgram without cgo and with neither symbol
// table nor DWARF (-s -w), as a Go program is often shipped.
func buildStrippedGo(t *testing.T) string {
	t.Helper()
	goTool := testutils.LookPathOrSkip(t, "go")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(sigProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module sig\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sig")
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestGoSignalFrame checks that the return address of a signal frame in
// a stripped Go program, the start of the runtime's restorer, is named
// as the restorer and not as the function before it in the line table
// (runtime.cgoSigtramp, whose range runs up to the restorer).
func TestGoSignalFrame(t *testing.T) {
	bin := buildStrippedGo(t)
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	obj, err := symbol.NewFile(f)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := (&symbol.Loader{DebugDirs: []string{t.TempDir()}}).Load(obj, bin)
	if err != nil {
		t.Fatal(err)
	}
	if syms.Source() != "gopclntab" {
		t.Fatalf("symbols of the stripped program from %q, want gopclntab", syms.Source())
	}
	var restorer, handler uint64
	for _, s := range syms.Table().All() {
		switch s.Name {
		case "runtime.sigreturn__sigaction":
			restorer = s.Addr
		case "runtime.sigtramp":
			handler = s.Addr
		}
	}
	if restorer == 0 || handler == 0 {
		t.Fatalf("restorer %#x, sigtramp %#x in the line table", restorer, handler)
	}
	if s, _ := syms.Lookup(restorer - 1); s.Name != "runtime.cgoSigtramp" {
		t.Logf("restorer-1 in %q, not cgoSigtramp: the test may not fail without the fix", s.Name)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}

	// A non-PIE Go program is mapped at its link address, 0x400000.
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: testStart, EndTime: testStart + 10e6})
	if err != nil {
		t.Fatal(err)
	}
	h := capture.FrameHeader{PID: 400, Time: testStart}
	for _, fr := range []capture.Frame{
		&capture.Process{FrameHeader: h, Cmdline: bin},
		&capture.Map{FrameHeader: h, Start: 0x400000, End: 0x400000 + uint64(st.Size()), Inode: st.Sys().(*syscall.Stat_t).Ino, Filename: bin},
		&capture.Sample{FrameHeader: h, TID: 400, Addrs: []uint64{capture.ContextUser, handler + 4, restorer}},
	} {
		if err := w.WriteFrame(fr); err != nil {
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
	var names []string
	for _, fr := range p.Frames {
		names = append(names, p.Funcs[fr.Func].Name)
		if fr.Addr == restorer && p.Funcs[fr.Func].Name != "runtime.sigreturn__sigaction" {
			t.Errorf("signal frame's return address %#x named %q, want runtime.sigreturn__sigaction", fr.Addr, p.Funcs[fr.Func].Name)
		}
	}
	if len(names) != 2 || names[0] != "runtime.sigtramp" && names[1] != "runtime.sigtramp" {
		t.Errorf("frames named %q, want runtime.sigtramp and runtime.sigreturn__sigaction", names)
	}
}
