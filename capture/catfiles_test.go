package capture

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// nsprofInput writes a capture of process pid as nsprof record would:
// a sample, then its off-CPU record, process file, source lines and
// symbol bundle (behind its METADATA frame).
func nsprofInput(t testing.TB, pid int32, start int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriterWithOptions(&buf, WriterOptions{StartTime: start, Clock: func() int64 { return start + 500 }})
	if err != nil {
		t.Fatal(err)
	}
	h := FrameHeader{CPU: -1, PID: -1, Time: start + 100}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteFrame(&Sample{FrameHeader: FrameHeader{PID: pid, Time: start + 10}, TID: pid, Addrs: []uint64{ContextUser, 0x401010}}))
	must(w.AddFileChunk(h, OffCPUFile, AppendOffCPU(nil, OffCPU{TID: pid, State: 'S', Time: start + 20, Duration: 5}), true))
	must(w.AddFileChunk(h, StacksFile, AppendStack(nil, StackRecord{Time: start + 20, PID: pid, TID: pid, Addrs: []uint64{ContextUser, 0x401010}}), true))
	must(w.AddFileChunk(h, CallsFile, AppendCall(nil, Call{PID: pid, TID: pid, Time: start + 30, Callee: 0x401010, Site: 0x401080, Count: 7}), true))
	p, err := EncodeProcessInfo(ProcessInfo{PID: int(pid), PPID: 1, Comm: fmt.Sprint("p", pid)})
	must(err)
	th, err := EncodeThreadInfo(ThreadInfo{TID: int(pid), PID: int(pid), Comm: "main"})
	must(err)
	must(w.AddFileBytes(h, ProcessFile, append(p, th...)))
	fr := []SourceFrame{{Function: "leaf", File: "a.c", Line: 3}, {Function: "hot", File: "a.c", Line: 9}}
	// The second record refers back to the first's frames, the third
	// (about a file, by build-id: no pid to map) to the second's.
	must(w.AddFileGzip(h, LinesFile, EncodeLines([]AddrLines{{PID: pid, Addr: 0x401010, Frames: fr}, {PID: pid, Addr: 0x401020, Frames: fr}, {Object: fmt.Sprintf("b%d", pid), Addr: 0x1010, Frames: fr}})))
	b, err := EncodeSymbols([]Symbol{{PID: pid, Begin: 0x401000, End: 0x4010ff, Name: fmt.Sprint("hot", pid), Tag: "app"}})
	must(err)
	must(w.AddSymbolsFile(h, b))
	must(w.Close())
	return buf.Bytes()
}

// TestCatFilesMergesNsprofFiles merges two nsprof captures: the output
// has one symbol bundle, source lines file, process file, off-CPU file,
// stacks file and calls file holding both inputs' records (their pids mapped), and the bundle comes
// right behind the one METADATA frame that announces it.
func TestCatFilesMergesNsprofFiles(t *testing.T) {
	a, b := nsprofInput(t, 10, 1000), nsprofInput(t, 20, 2000)
	var out bytes.Buffer
	opts := CatOptions{MapPID: func(id int32) int32 { return id + 100 }}
	if err := CatFiles(&out, []io.ReadSeeker{bytes.NewReader(a), bytes.NewReader(b)}, []string{"a", "b"}, opts); err != nil {
		t.Fatal(err)
	}
	_, frames, err := readAll(t, out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var files Files
	follows, bundleAfterGuard := 0, false
	for i, f := range frames {
		if m, ok := f.(*Metadata); ok && m.ID == MetaSymbolsFollow {
			follows++
			c, ok := frames[min(i+1, len(frames)-1)].(*FileChunk)
			bundleAfterGuard = ok && c.Path == SymbolsFile
		}
		if c, ok := f.(*FileChunk); ok {
			files.Add(c)
		}
	}
	if follows != 1 || !bundleAfterGuard {
		t.Errorf("%d %s frames, bundle right after: %v; want 1, true", follows, MetaSymbolsFollow, bundleAfterGuard)
	}
	for _, p := range []string{SymbolsFile, LinesFile + ".gz", ProcessFile, OffCPUFile, StacksFile, CallsFile} {
		n := 0
		for _, f := range frames {
			if c, ok := f.(*FileChunk); ok && c.Path == p && c.IsLast {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d files %s, want 1", n, p)
		}
	}

	sb, err := files.Lookup(SymbolsFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := DecodeSymbols(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int32{110, 120} {
		if s, ok := st.Lookup(pid, 0x401010); !ok || s.Name != fmt.Sprint("hot", pid-100) {
			t.Errorf("symbol of pid %d at 0x401010 = %+v, %v", pid, s, ok)
		}
	}
	lb, err := files.Lookup(LinesFile)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := DecodeLines(lb)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int32{110, 120} {
		for _, a := range []uint64{0x401010, 0x401020} {
			if fr, ok := lt.Lookup(pid, a); !ok || len(fr) != 2 || fr[0].Function != "leaf" {
				t.Errorf("lines of pid %d at %#x = %+v, %v", pid, a, fr, ok)
			}
		}
		id := fmt.Sprintf("b%d", pid-100)
		if fr, ok := lt.LookupObject(id, 0x1010); !ok || len(fr) != 2 || fr[0].Function != "leaf" {
			t.Errorf("lines of file %s at 0x1010 = %+v, %v", id, fr, ok)
		}
	}
	ps, ts, err := ReadProcessFile(&files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("process %d ppid %d %s", p.PID, p.PPID, p.Comm))
	}
	for _, th := range ts {
		got = append(got, fmt.Sprintf("thread %d of %d", th.TID, th.PID))
	}
	want := []string{"process 110 ppid 101 p10", "process 120 ppid 101 p20", "thread 110 of 110", "thread 120 of 120"}
	if !slices.Equal(got, want) {
		t.Errorf("process file: %q, want %q", got, want)
	}
	ob, err := files.Lookup(OffCPUFile)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := DecodeOffCPU(ob)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].TID != 110 || rs[1].TID != 120 || rs[1].Time != 2020 {
		t.Errorf("off-CPU records %+v, want tids 110 and 120", rs)
	}
	sk, err := files.Lookup(StacksFile)
	if err != nil {
		t.Fatal(err)
	}
	var stacks []string
	if err := DecodeStacks(sk, func(r *StackRecord) { stacks = append(stacks, fmt.Sprint(r.PID, r.TID, r.Time, r.Addrs)) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprint(110, 110, 1020, []uint64{ContextUser, 0x401010}), fmt.Sprint(120, 120, 2020, []uint64{ContextUser, 0x401010})}; !slices.Equal(stacks, want) {
		t.Errorf("stack records %q, want %q", stacks, want)
	}
	cb, err := files.Lookup(CallsFile)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := DecodeCalls(cb)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].PID != 110 || cs[1].TID != 120 || cs[1].Count != 7 {
		t.Errorf("call records %+v, want pids 110 and 120", cs)
	}
}

// TestCatFilesNamesDamagedBundle: an input whose symbol bundle cannot be
// decoded is named in the error, and the other input's symbols are kept.
func TestCatFilesNamesDamagedBundle(t *testing.T) {
	a := nsprofInput(t, 10, 1000)
	var bad bytes.Buffer
	w, err := NewWriterWithOptions(&bad, WriterOptions{StartTime: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddSymbolsFile(FrameHeader{PID: -1, Time: 1600}, []byte("short")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = CatFiles(&out, []io.ReadSeeker{bytes.NewReader(a), bytes.NewReader(bad.Bytes())}, []string{"a.syscap", "bad.syscap"}, CatOptions{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("bad.syscap: __symbols__")) {
		t.Fatalf("err = %v, want bad.syscap's __symbols__ named", err)
	}
	_, frames, rerr := readAll(t, out.Bytes())
	if rerr != nil {
		t.Fatal(rerr)
	}
	var files Files
	for _, f := range frames {
		if c, ok := f.(*FileChunk); ok {
			files.Add(c)
		}
	}
	sb, err := files.Lookup(SymbolsFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := DecodeSymbols(sb); err != nil || st.Len() != 1 {
		t.Errorf("merged bundle: %v, %v; want a.syscap's one symbol", st, err)
	}
}

// TestCatFilesRefusesLinesReferenceOutside: a source-lines record of an
// input referring back past that input's first record would take another
// input's frames once merged; the input is named and its lines refused.
func TestCatFilesRefusesLinesReferenceOutside(t *testing.T) {
	a := nsprofInput(t, 10, 1000)
	var bad bytes.Buffer
	w, err := NewWriterWithOptions(&bad, WriterOptions{StartTime: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(FrameHeader{PID: -1, Time: 1600}, LinesFile, []byte(linesMagic+"\n20\t401010\tf\ta.c\t1\n20\t401020\t^2\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = CatFiles(&out, []io.ReadSeeker{bytes.NewReader(a), bytes.NewReader(bad.Bytes())}, []string{"a.syscap", "bad.syscap"}, CatOptions{})
	if err == nil || !strings.Contains(err.Error(), "bad.syscap") || !strings.Contains(err.Error(), `line 3: reference "^2": not one of the 1 records before`) {
		t.Fatalf("err = %v, want bad.syscap's line 3 named", err)
	}
}
