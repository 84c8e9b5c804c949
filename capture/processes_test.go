package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestProcessFileRoundTrip writes processes and threads with the Writer,
// one line long enough to span several FILE_CHUNK frames, and reads them
// back from the capture's frames.
func TestProcessFileRoundTrip(t *testing.T) {
	long := strings.Repeat("x", 3*MaxFileChunkData)
	ps := []ProcessInfo{
		{Time: 5, PID: 100, NSpid: []int{100, 1}, Comm: "app", Cmdline: []string{"app"}, CmdlineRedacted: true, UID: 1000,
			Container: &ContainerInfo{Kind: "podman", ID: "abcdef0123456789", Name: "web", Rootless: true}},
		{Time: 6, PID: 200, Comm: "tool", Cmdline: []string{"/bin/tool", long}, Err: "maps: gone"},
	}
	ts := []ThreadInfo{{Time: 7, TID: 101, PID: 100, NSpid: []int{101, 2}}, {Time: 8, TID: 101, PID: 100, Exited: true}}
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		if err := w.AddProcessInfo(ps[i]); err != nil {
			t.Fatal(err)
		}
		if err := w.AddThreadInfo(ts[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.CloseProcessFile(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var files Files
	chunks := 0
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := f.(*FileChunk); ok {
			files.Add(c)
			chunks++
		}
	}
	if chunks < 6 {
		t.Errorf("%d chunks, want the long line split", chunks)
	}
	gotP, gotT, err := ReadProcessFile(&files)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		ps[i].Kind = KindProcess
		ts[i].Kind = KindThread
	}
	if !reflect.DeepEqual(gotP, ps) {
		t.Errorf("processes:\n%+v\nwant\n%+v", gotP, ps)
	}
	if !reflect.DeepEqual(gotT, ts) {
		t.Errorf("threads:\n%+v\nwant\n%+v", gotT, ts)
	}
	if p, th, err := ReadProcessFile(&Files{}); p != nil || th != nil || err != nil {
		t.Errorf("no process file: %v %v %v", p, th, err)
	}
}

// TestDecodeProcessFileErrors: a damaged line is named by its number, the
// lines before it are kept, and unknown kinds are skipped.
func TestDecodeProcessFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		procs      int
		err        string
	}{
		{"unknown kind", `{"kind":"later","x":1}` + "\n" + `{"kind":"process","pid":3}` + "\n", 1, ""},
		{"bad json", `{"kind":"process","pid":3}` + "\n{\n", 1, ProcessFile + " line 2: "},
		{"bad field", `{"kind":"process","pid":"three"}` + "\n", 0, ProcessFile + " line 1: "},
		{"empty line", `{"kind":"process","pid":3}` + "\n\n", 1, ProcessFile + " line 2: "},
		{"too long", `{"kind":"process","pid":3}` + "\n" + strings.Repeat(" ", maxProcessLine+1), 1, ProcessFile + " line 2: "},
	} {
		ps, _, err := DecodeProcessFile([]byte(tc.data))
		if len(ps) != tc.procs {
			t.Errorf("%s: %d processes, want %d", tc.name, len(ps), tc.procs)
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// FuzzDecodeProcessFile decodes arbitrary bytes as a ProcessFile: no
// panic, and what decodes encodes back to a file that decodes to the same
// lines.
func FuzzDecodeProcessFile(f *testing.F) {
	f.Add([]byte(`{"kind":"process","time":1,"pid":100,"nspid":[100,1],"comm":"app","cmdline":["app","-x"],"cmdline_redacted":true,"uid":0,"container":{"kind":"podman","id":"ab","name":"web"}}` + "\n"))
	f.Add([]byte(`{"kind":"thread","time":2,"tid":101,"pid":100,"nspid":[101,2],"exited":true}` + "\n"))
	f.Add([]byte(`{"kind":"process","pid":1}` + "\n" + `{"kind":`))
	for _, l := range oddProcessLines {
		f.Add([]byte(l + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, ts, err := DecodeProcessFile(data)
		checkOnePass(t, data, ps, ts, err)
		enc := encodeAll(t, ps, ts)
		ps2, ts2, err := DecodeProcessFile(enc)
		if err != nil {
			t.Fatalf("re-encoded file does not decode: %v\n%s", err, enc)
		}
		if again := encodeAll(t, ps2, ts2); !bytes.Equal(again, enc) {
			t.Fatalf("round trip changed the lines:\n%s\n%s", enc, again)
		}
	})
}

// oddProcessLines are lines that a single decoding of either kind may
// read differently from a decoding of the line's own kind.
var oddProcessLines = []string{
	`{"kind":"thread","tid":5,"pid":4,"uid":"root","cmdline":7}`,
	`{"kind":"process","pid":4,"tid":"five","exited":"yes"}`,
	`{"kind":"thread","kind":"process","pid":4,"tid":5}`,
	`{"KIND":"thread","TID":5,"Pid":4,"comm":"a","Comm":"b"}`,
	`{"kind":"thread","tid":5,"tid":6,"nspid":[6,1],"exited":true,"container":{"kind":1}}`,
	`{"kind":"process","pid":4,"container":{"kind":"host"},"exited":true,"tid":9}`,
	`{"kind":"thread","tid":5} trailing`,
}

// TestDecodeProcessFileOnePass: lines decoded once as either kind give
// what decoding each as its own kind gives, errors included.
func TestDecodeProcessFileOnePass(t *testing.T) {
	for _, l := range oddProcessLines {
		data := []byte(l + "\n")
		ps, ts, err := DecodeProcessFile(data)
		checkOnePass(t, data, ps, ts, err)
	}
}

// checkOnePass fails t unless ps, ts and err are what decoding data's
// lines by their kind, then as that kind, gives.
func checkOnePass(t *testing.T, data []byte, ps []ProcessInfo, ts []ThreadInfo, err error) {
	t.Helper()
	var wps []ProcessInfo
	var wts []ThreadInfo
	var werr error
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxProcessLine)
	for n := 1; werr == nil && sc.Scan(); n++ {
		var k struct {
			Kind string `json:"kind"`
		}
		if werr = json.Unmarshal(sc.Bytes(), &k); werr != nil {
			break
		}
		switch k.Kind {
		case KindProcess:
			var p ProcessInfo
			if werr = json.Unmarshal(sc.Bytes(), &p); werr == nil {
				wps = append(wps, p)
			}
		case KindThread:
			var th ThreadInfo
			if werr = json.Unmarshal(sc.Bytes(), &th); werr == nil {
				wts = append(wts, th)
			}
		}
	}
	if werr == nil {
		werr = sc.Err()
	}
	if !reflect.DeepEqual(ps, wps) || !reflect.DeepEqual(ts, wts) || (err == nil) != (werr == nil) {
		t.Errorf("%q: decoded\n%+v %+v %v\nwant\n%+v %+v %v", data, ps, ts, err, wps, wts, werr)
	}
}

// encodeAll encodes the processes, then the threads.
func encodeAll(t *testing.T, ps []ProcessInfo, ts []ThreadInfo) []byte {
	t.Helper()
	var out []byte
	for _, p := range ps {
		b, err := EncodeProcessInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	for _, th := range ts {
		b, err := EncodeThreadInfo(th)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}
