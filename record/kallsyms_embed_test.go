package record

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"nsprof/capture"
	"nsprof/proc"
	"nsprof/symbol"
)

// TestKallsymsExcerptEmbedded names kernel addresses of a process and of
// the idle task from a 4 MB kallsyms, and checks that the capture embeds
// an excerpt naming each of them as the whole text does, and the whole
// text when no bundle named them (--no-decode).
func TestKallsymsExcerptEmbedded(t *testing.T) {
	dir := t.TempDir()
	var text bytes.Buffer
	const base uint64 = 0xffffffff81000000
	for i := 0; text.Len() < 4<<20; i++ {
		fmt.Fprintf(&text, "%016x T kernel_function_%d\n", base+uint64(i)*16, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "kallsyms"), text.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	full, err := symbol.NewKallsyms(text.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	process, idle := base+5*16+3, base+70_000*16+9
	for _, excerpt := range []bool{true, false} {
		path := filepath.Join(dir, fmt.Sprintf("x-%v.syscap", excerpt))
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := capture.NewWriter(out)
		if err != nil {
			t.Fatal(err)
		}
		r := &recorder{w: w, opts: &Options{Log: io.Discard, FS: proc.FS{Root: dir}}, sym: newSymbolizer()}
		r.sym.sampled(0, []uint64{capture.ContextKernel, idle}, false, 0)
		if excerpt {
			k, err := r.kernelTable()
			if err != nil {
				t.Fatalf("kernel table: %v", err)
			}
			if sym, ok := lookupOne(k, process); !ok || sym.Name != "kernel_function_5" {
				t.Errorf("kernel address %#x named %q (%v), want kernel_function_5", process, sym.Name, ok)
			}
		}
		r.embedKallsyms(excerpt)
		if r.writeErr != nil {
			t.Fatal(r.writeErr)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		out.Close()
		got := embeddedKallsyms(t, load(t, path))
		if !excerpt {
			if !bytes.Equal(got, text.Bytes()) {
				t.Errorf("without a bundle, %d bytes embedded, want the whole text (%d)", len(got), text.Len())
			}
			continue
		}
		if len(got) > 1024 {
			t.Errorf("an excerpt of %d bytes for two addresses", len(got))
		}
		part, err := symbol.NewKallsyms(got)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []uint64{process, idle} {
			want, _ := full.Lookup(a)
			if sym, ok := part.Lookup(a); !ok || sym != want {
				t.Errorf("%#x: the excerpt names %+v (%v), the text %+v", a, sym, ok, want)
			}
		}
	}
}

// TestKallsymsNotRead checks that a capture with no kernel address
// sampled neither reads nor embeds a kallsyms.
func TestKallsymsNotRead(t *testing.T) {
	dir := t.TempDir() // no kallsyms in it: reading it would fail
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	r := &recorder{w: w, opts: &Options{Log: &log, FS: proc.FS{Root: dir}}, sym: newSymbolizer()}
	r.sym.sampled(42, []uint64{capture.ContextUser, 0x401000}, false, 0)
	r.embedKallsyms(true)
	if r.kern != nil || log.Len() > 0 {
		t.Errorf("kallsyms read (log %q)", log.String())
	}
}
