package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/procfmt"
	"nsprof/internal/testutils"
)

func TestLinesRoundTrip(t *testing.T) {
	recs := []AddrLines{
		{PID: 7, Addr: 0x401020, Frames: []SourceFrame{{"inl_leaf", "/src/a.c", 26}, {"inl_middle", "/src/a.c", 32}, {"inl_outer", "/src/a.c", 38}}},
		{PID: 7, Addr: 0x401000, Frames: []SourceFrame{{"main", "/src/a.c", 45}}},
		{PID: -1, Addr: 1, Frames: []SourceFrame{{"", "", 0}}},
		{PID: 3, Addr: 0xffffffffffffffff, Frames: []SourceFrame{{"tab\there", "new\nline", 1}}},
		{PID: 3, Addr: 5}, // no frames: not written
	}
	tab, err := DecodeLines(EncodeLines(recs))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 4 {
		t.Fatalf("%d records, want 4", tab.Len())
	}
	for _, r := range recs[:3] {
		got, ok := tab.Lookup(r.PID, r.Addr)
		if !ok || fmt.Sprint(got) != fmt.Sprint(r.Frames) {
			t.Errorf("Lookup(%d, %#x) = %v, %v; want %v", r.PID, r.Addr, got, ok, r.Frames)
		}
	}
	if got, _ := tab.Lookup(3, 0xffffffffffffffff); got[0].Function != "tab here" || got[0].File != "new line" {
		t.Errorf("separators in names: %+v", got)
	}
	if _, ok := tab.Lookup(7, 0x401021); ok {
		t.Error("Lookup found an address that is not in the table")
	}
	if _, ok := tab.Lookup(3, 5); ok {
		t.Error("a record without frames was written")
	}
}

// Records about files (by build-id and offset) are looked up by build-id,
// apart from the processes', references counting back across both kinds;
// a file with none has version 2's header, which older readers read.
func TestLinesObjects(t *testing.T) {
	inl := []SourceFrame{{"inl_leaf", "/src/a.c", 26}, {"outer", "/src/a.c", 38}}
	recs := []AddrLines{
		{PID: 7, Addr: 0x401020, Frames: []SourceFrame{{"main", "/src/m.c", 4}}},
		{Object: "ABCD", Addr: 0x1020, Frames: inl},
		{Object: "abcd", Addr: 0x1000, Frames: []SourceFrame{{"f", "/src/a.c", 1}}},
		{Object: "beef", Addr: 0x1020, Frames: inl},
		{PID: 8, Addr: 0x1020, Frames: inl},
	}
	b := EncodeLines(recs)
	if !bytes.HasPrefix(b, []byte(linesMagic+"\n")) {
		t.Fatalf("header %.20q, want %q", b, linesMagic)
	}
	if n := bytes.Count(b, []byte("inl_leaf")); n != 1 {
		t.Errorf("the chain is spelled out %d times, want 1:\n%s", n, b)
	}
	tab, err := DecodeLines(b)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != len(recs) {
		t.Errorf("%d records, want %d", tab.Len(), len(recs))
	}
	// Two file records with one inlined call each; the process's do not
	// count.
	if calls, n := tab.FileInlineFrames(); calls != 2 || n != 3 {
		t.Errorf("FileInlineFrames() = %d calls in %d records, want 2 in 3", calls, n)
	}
	for _, r := range recs {
		got, ok := tab.Lookup(r.PID, r.Addr)
		if r.Object != "" {
			got, ok = tab.LookupObject(strings.ToLower(r.Object), r.Addr)
		}
		if !ok || fmt.Sprint(got) != fmt.Sprint(r.Frames) {
			t.Errorf("%+v: got %v, %v", r, got, ok)
		}
	}
	for _, q := range []struct {
		id  string
		off uint64
	}{{"abcd", 0x1021}, {"beef", 0x1000}, {"cafe", 0x1020}, {"7", 0x401020}} {
		if got, ok := tab.LookupObject(q.id, q.off); ok {
			t.Errorf("LookupObject(%q, %#x) = %v, want none", q.id, q.off, got)
		}
	}
	if _, ok := tab.Lookup(0, 0x1020); ok {
		t.Error("a file's record was found as process 0's")
	}
	if got := tab.InlineFrames(); got != 1 {
		t.Errorf("InlineFrames = %d, want 1 (process 8's record only)", got)
	}
	if b := EncodeLines(recs[:1]); !bytes.HasPrefix(b, []byte(linesMagicV2+"\n")) {
		t.Errorf("without records of files: header %.20q, want %q", b, linesMagicV2)
	}
}

// Processes mapping the same file share the frames of its addresses: the
// file spells each chain out once and refers back to it, and decodes to
// the same frames for every process.
func TestLinesSharedFrames(t *testing.T) {
	shared := []SourceFrame{{"inl_leaf", "/src/a.c", 26}, {"outer", "/src/a.c", 38}}
	other := []SourceFrame{{"main", "/src/a.c", 45}}
	var recs []AddrLines
	for pid := int32(100); pid < 200; pid++ {
		recs = append(recs, AddrLines{PID: pid, Addr: 0x401020, Frames: shared}, AddrLines{PID: pid, Addr: 0x401000, Frames: other})
	}
	recs = append(recs, AddrLines{PID: 5, Addr: 0x401020, Frames: slices.Clone(shared)}) // equal, not shared: spelled out
	b := EncodeLines(recs)
	if n := bytes.Count(b, []byte("inl_leaf")); n != 2 {
		t.Errorf("the shared chain is spelled out %d times, want 2 (once shared, once a copy):\n%.300s", n, b)
	}
	tab, err := DecodeLines(b)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != len(recs) {
		t.Fatalf("%d records, want %d", tab.Len(), len(recs))
	}
	for _, r := range recs {
		got, ok := tab.Lookup(r.PID, r.Addr)
		if !ok || fmt.Sprint(got) != fmt.Sprint(r.Frames) {
			t.Errorf("Lookup(%d, %#x) = %v, %v; want %v", r.PID, r.Addr, got, ok, r.Frames)
		}
	}
	if got, want := tab.InlineFrames(), 101; got != want {
		t.Errorf("InlineFrames = %d, want %d", got, want)
	}
}

func TestDecodeLinesErrors(t *testing.T) {
	good := "1\t10\tf\tfile.c\t3\n"
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"nsprof-lines 4\n", "line 1: header"},
		{linesMagic + "\n" + good + "@zz\t10\tf\tfile.c\t3\n", "line 3: build-id"},
		{linesMagic + "\n" + good + "@\t10\tf\tfile.c\t3\n", "line 3: build-id"},
		{linesMagic + "\n" + good + "@" + strings.Repeat("ab", maxObjectID) + "\t10\tf\tfile.c\t3\n", "line 3: build-id"},
		{linesMagic + "\n" + good + "@zz\t11\t^1\n", "line 3: build-id"},
		{linesMagicV2 + "\n" + good + "@ab\t10\tf\tfile.c\t3\n", "line 3: pid"},
		{linesMagic + "\n" + good + "1\t11\t^2\n", "line 3: reference \"^2\": not one of the 1 records before"},
		{linesMagic + "\n" + good + "1\t11\t^0\n", "line 3: reference"},
		{linesMagic + "\n" + good + "1\t11\tf\n", "line 3: 3 fields"},
		{linesMagicV1 + "\n" + good + "1\t11\t^1\n", "line 3: 3 fields"},
		{linesMagic + "\n" + good + "1\t10\tf\tfile.c\n", "line 3: 4 fields"},
		{linesMagic + "\n" + good + "x\t10\tf\tfile.c\t3\n", "line 3: pid"},
		{linesMagic + "\n" + good + "1\tzz\tf\tfile.c\t3\n", "line 3: address"},
		{linesMagic + "\n" + good + "1\t10\tf\tfile.c\t-3\n", "line 3: line number"},
		{linesMagic + "\n" + good + "1\t10" + strings.Repeat("\tf\tx\t1", maxSourceFrames+1) + "\n", "line 3: 257 frames"},
	} {
		tab, err := DecodeLines([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeLines(%.30q): %v, want %q", tc.in, err, tc.want)
		}
		if strings.Contains(tc.in, good) && tab.Len() != 1 {
			t.Errorf("DecodeLines(%.30q) kept %d records before the damage, want 1", tc.in, tab.Len())
		}
	}
}

// FuzzDecodeLines decodes arbitrary bytes as a LinesFile: no panic, and
// what decodes encodes back to a file that decodes to the same records.
func FuzzDecodeLines(f *testing.F) {
	f.Add([]byte(linesMagic + "\n7\t401020\tinl_leaf\t/src/a.c\t26\tinl_outer\t/src/a.c\t38\n"))
	f.Add([]byte(linesMagic + "\n-1\t0\t\t\t0\n"))
	f.Add([]byte(linesMagic + "\n@AB12\t1020\tinl_leaf\t/src/a.c\t26\touter\t/src/a.c\t38\n7\t401020\t^1\n@cd\t10\t^2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, _ := DecodeLines(data)
		again, err := DecodeLines(EncodeLines(tab.records()))
		if err != nil {
			t.Fatalf("re-encoded table does not decode: %v", err)
		}
		if fmt.Sprint(again.records()) != fmt.Sprint(tab.records()) {
			t.Fatalf("round trip changed the records:\n%v\n%v", tab.records(), again.records())
		}
	})
}

// gzipOf returns data gzipped.
func gzipOf(t testing.TB, data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// DecodeLinesGzip, parsing as it inflates, gives what DecodeLinesMax
// gives over the inflated text: records, damage, bounds.
func TestDecodeLinesGzipAsWhole(t *testing.T) {
	long := "1\t20" + strings.Repeat("\t"+strings.Repeat("n", 400)+"\tfile.c\t7", 200) // longer than the reader's buffer
	good := "1\t10\tf\tfile.c\t3\n"
	for _, tc := range []struct {
		name, in string
		max      int
	}{
		{"records", linesMagic + "\n" + good + long + "\n2\t5\tg\th.c\t1\n", -1},
		{"no last newline", linesMagic + "\n" + good + "2\t5\tg\th.c\t1", -1},
		{"carriage returns", linesMagic + "\r\n" + good + "2\t5\tg\th.c\t1\r\n", -1},
		{"long last line", linesMagic + "\n" + long, -1},
		{"damage", linesMagic + "\n" + good + "1\tzz\tf\tfile.c\t3\n" + good, -1},
		{"empty", "", -1},
		{"header", "nsprof-lines 3\n" + good, -1},
		{"references", linesMagic + "\n" + good + long + "\n2\t10\t^2\n3\t20\t^2\n", -1},
		{"version 1", linesMagicV1 + "\n" + good + "2\t5\tg\th.c\t1\n", -1},
		{"too many", linesMagic + "\n" + good + good + good, 2},
		// The table is sized at its 1024th record, from the bound
		// too: a bound below it panicked (slices.Grow by -1).
		{"too many at the sizing", linesMagic + "\n" + strings.Repeat(good, 1030), 1023},
		{"as many as allowed", linesMagic + "\n" + good + good, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := DecodeLinesMax([]byte(tc.in), tc.max)
			got, gotErr := DecodeLinesGzip(LinesFile+".gz", gzipOf(t, []byte(tc.in)), tc.max)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("error %v, want %v", gotErr, wantErr)
			}
			if fmt.Sprint(got.records()) != fmt.Sprint(want.records()) {
				t.Errorf("records\n%v\nwant\n%v", got.records(), want.records())
			}
		})
	}
}

// A gzip trailer that says the text is smaller than what was read by
// the time the table is sized gives an error, not a panic.
func TestDecodeLinesGzipTrailerLies(t *testing.T) {
	z := gzipOf(t, []byte(linesMagic+"\n"+strings.Repeat("1\t10\tf\tfile.c\t3\n", 2000)))
	binary.LittleEndian.PutUint32(z[len(z)-4:], 10)
	if _, err := DecodeLinesGzip(LinesFile+".gz", z, -1); err == nil {
		t.Fatal("no error for a gzip trailer of the wrong size")
	}
}

// A gzip bomb stops at the bound, with the error Inflate gives.
func TestDecodeLinesGzipBomb(t *testing.T) {
	z := testutils.GzipBomb([]byte(linesMagic+"\n"), []byte("1\t10\tf\tfile.c\t3\n"), 300<<20)
	tab, err := DecodeLinesGzip(LinesFile+".gz", z, -1)
	if _, ok := errors.AsType[*InflateError](err); !ok {
		t.Fatalf("error %v, want an InflateError", err)
	}
	if tab.Len() != 0 {
		t.Errorf("%d records kept from a bomb", tab.Len())
	}
}

// FuzzDecodeLinesGzip: parsing while inflating agrees with parsing the
// inflated text.
func FuzzDecodeLinesGzip(f *testing.F) {
	f.Add([]byte(linesMagic+"\n7\t401020\tinl_leaf\t/src/a.c\t26\tinl_outer\t/src/a.c\t38\n"), 5)
	f.Add([]byte(linesMagic+"\r\n-1\t0\t\t\t0"), -1)
	f.Add([]byte(linesMagic+"\n@ab\t10\tf\ta.c\t1\n@ab\t11\t^1\n"), 1)
	// Past the 1024 records at which the table is sized.
	f.Add([]byte(linesMagic+"\n"+strings.Repeat("1\t10\tf\ta.c\t3\n", 1030)), 1023)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		want, wantErr := DecodeLinesMax(data, max)
		got, gotErr := DecodeLinesGzip(LinesFile+".gz", gzipOf(t, data), max)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || fmt.Sprint(got.records()) != fmt.Sprint(want.records()) {
			t.Fatalf("DecodeLinesGzip = %v, %v; DecodeLinesMax = %v, %v", got.records(), gotErr, want.records(), wantErr)
		}
	})
}

// TestLinesFieldParsers: the lines file's pid, address and count parsers
// agree with strconv on what the encoder writes and on what it does not:
// signs, bounds, letters, empty fields.
func TestLinesFieldParsers(t *testing.T) {
	ins := []string{"", "0", "1", "-1", "+7", "-", "+", "2147483647", "2147483648", "-2147483648", "-2147483649",
		"12a", "a", "ff", "FF", "7fffffffffffffff", "ffffffffffffffff", "1ffffffffffffffff", "0x10", " 1", "1 ",
		"999999999999999999", "1000000000000000000", "١"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = "0123456789abcdefABCDEF-+x"[r.IntN(25)]
		}
		ins = append(ins, string(b))
	}
	for _, in := range ins {
		pid, ok := parsePID([]byte(in))
		want, err := strconv.ParseInt(in, 10, 32)
		if ok != (err == nil) || ok && int64(pid) != want {
			t.Errorf("parsePID(%q) = %d, %v; strconv: %d, %v", in, pid, ok, want, err)
		}
		addr, ok := procfmt.ParseHex([]byte(in))
		wantAddr, err := strconv.ParseUint(in, 16, 64)
		if len(in) <= 16 && (ok != (err == nil) || ok && addr != wantAddr) {
			t.Errorf("ParseHex(%q) = %#x, %v; strconv: %#x, %v", in, addr, ok, wantAddr, err)
		}
		n, ok := parseCount([]byte(in))
		wantN, err := strconv.Atoi(in)
		if len(in) <= 18 && !strings.ContainsAny(in, "+-") && (ok != (err == nil) || ok && n != wantN) {
			t.Errorf("parseCount(%q) = %d, %v; strconv: %d, %v", in, n, ok, wantN, err)
		}
	}
}

// AddLinesFile embeds, compressed, the bytes EncodeLines gives, found
// under LinesFile as AddFileGzipLevel's are.
func TestAddLinesFile(t *testing.T) {
	shared := []SourceFrame{{"inl\tleaf", "/src/a.c", 26}, {"outer", "/src/a.c", 38}}
	var recs []AddrLines
	for pid := int32(100); pid < 3000; pid++ { // more than a buffer's worth
		recs = append(recs, AddrLines{PID: pid, Addr: 0x401020, Frames: shared},
			AddrLines{PID: pid, Addr: uint64(0x402000 + pid), Frames: []SourceFrame{{fmt.Sprint("f", pid), "/src/b.c", int(pid)}}})
	}
	recs = append(recs, AddrLines{Object: "ABCDEF0123", Addr: 0x1010, Frames: shared})
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddLinesFile(FrameHeader{CPU: -1, PID: -1}, recs, 1); err != nil {
		t.Fatal(err)
	}
	w.Close()
	fs := filesOf(t, buf.Bytes())
	got, err := fs.Lookup(LinesFile)
	if want := EncodeLines(recs); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("embedded lines file: %d bytes, %v; want EncodeLines' %d", len(got), err, len(want))
	}
}

// TestWriteLinesAllocs: writing a lines file allocates for its tables,
// not for each number it spells out (a string for every address and line
// was two allocations a record of a recording's bundle).
func TestWriteLinesAllocs(t *testing.T) {
	recs := make([]AddrLines, 2000)
	for i := range recs {
		recs[i] = AddrLines{Object: "0123abcd", Addr: 0x400000 + 16*uint64(i), Frames: []SourceFrame{
			{Function: "f", File: "a.go", Line: 1000 + i},
			{Function: "g", File: "b.go", Line: 2000 + i},
		}}
	}
	var b bytes.Buffer
	b.Grow(1 << 20)
	n := testing.AllocsPerRun(5, func() {
		b.Reset()
		writeLines(&b, recs)
	})
	if n > 100 {
		t.Errorf("writing %d records allocated %.0f times", len(recs), n)
	}
}

// TestWriteField: a name is written as strings.Replacer wrote it before,
// its tabs, newlines and carriage returns as spaces and every other byte
// (other control bytes, UTF-8) as it is.
func TestWriteField(t *testing.T) {
	clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	names := []string{"", "main.main", "a\tb", "\n", "x\r\ny", "\x01ctl\x1f", "naïve\t∑", strings.Repeat("f\t", 100)}
	for c := range 0x21 {
		names = append(names, "a"+string(rune(c))+"b")
	}
	for _, s := range names {
		var b bytes.Buffer
		writeField(&b, s)
		if got, want := b.String(), clean.Replace(s); got != want {
			t.Errorf("writeField(%q) wrote %q, want %q", s, got, want)
		}
	}
}
