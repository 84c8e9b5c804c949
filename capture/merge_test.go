package capture

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"nsprof/internal/testutils"
)

// TestSysprofCliMerges merges two captures of ours, each with a file of
// several chunks, with Sysprof's own `sysprof-cli --merge`, and reads the
// files back from the merge. Sysprof 3.46 aborted on FILE_CHUNK frames
// of more than 16 KiB ("malloc(): invalid size", or an assertion in
// sysprof_capture_reader_peek_frame), as nsprof wrote them.
func TestSysprofCliMerges(t *testing.T) {
	cli, err := exec.LookPath("sysprof-cli")
	if err != nil {
		testutils.RequireCI(t, "sysprof-cli not found (apt-get install sysprof): %v", err)
	}
	dir := t.TempDir()
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var paths []string
	for i, name := range []string{"a", "b"} {
		p := filepath.Join(dir, name+".syscap")
		w, err := CreateWithOptions(p, WriterOptions{StartTime: int64(i+1) * 1e9, Clock: func() int64 { return int64(i+2) * 1e9 }})
		if err != nil {
			t.Fatal(err)
		}
		h := FrameHeader{CPU: -1, PID: -1, Time: int64(i+1) * 1e9}
		if err := w.AddFileBytes(h, "/data/"+name, data); err != nil {
			t.Fatal(err)
		}
		if err := w.AddSample(int64(i+1)*1e9+1, 0, 10, 10, []uint64{ContextUser, 0x401000}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(cli, append([]string{"--merge"}, paths...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sysprof-cli --merge: %v: %s", err, stderr.Bytes())
	}
	r, err := NewReader(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var fs Files
	samples := 0
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the merge: %v", err)
		}
		switch f := f.(type) {
		case *FileChunk:
			fs.Add(f)
		case *Sample:
			samples++
		}
	}
	for _, name := range []string{"a", "b"} {
		got, ok, err := fs.Read("/data/" + name)
		if err != nil || !ok || !bytes.Equal(got, data) {
			t.Errorf("merged file /data/%s: %d bytes, found %v, %v; want the %d bytes written", name, len(got), ok, err, len(data))
		}
	}
	if samples != 2 {
		t.Errorf("%d samples in the merge, want 2", samples)
	}
}
