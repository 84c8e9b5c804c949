package record

import (
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"sort"
	"syscall"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/perf"
)

// requirePerf stops the test unless perf events can be opened (root, or a
// permissive perf_event_paranoid). In CI that is a failure.
func requirePerf(t *testing.T) {
	t.Helper()
	rd, err := perf.Open(perf.Processes(os.Getpid()))
	if err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			testutils.RequireCI(t, "perf events not permitted (run as root): %v", err)
		}
		t.Fatalf("open perf events: %v", err)
	}
	rd.Close()
}

// recordTo records with opts into a new capture file and returns its path.
func recordTo(t *testing.T, ctx context.Context, opts Options) (string, Result) {
	t.Helper()
	if len(opts.Command) == 0 && len(opts.PIDs) == 0 {
		testutils.SystemWide(t, false)
	}
	path := t.TempDir() + "/test.syscap"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := capture.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	opts.Log, opts.Verbose = testWriter{t}, true
	res, err := Record(ctx, w, opts)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, res
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Logf("%s", p); return len(p), nil }

// captured is a capture read back, indexed for assertions.
type captured struct {
	frames    []capture.Frame
	samples   []*capture.Sample
	marks     []*capture.Mark
	processes map[int32][]string
	maps      map[int32][]*capture.Map
	forks     []*capture.Fork
	exits     map[int32]bool
	files     capture.Files
}

func load(t *testing.T, path string) *captured {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := &captured{processes: map[int32][]string{}, maps: map[int32][]*capture.Map{}, exits: map[int32]bool{}}
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("capture damaged: %v", err)
		}
		c.frames = append(c.frames, f)
		switch f := f.(type) {
		case *capture.Sample:
			c.samples = append(c.samples, f)
		case *capture.Mark:
			c.marks = append(c.marks, f)
		case *capture.Process:
			c.processes[f.PID] = append(c.processes[f.PID], f.Cmdline)
		case *capture.Map:
			c.maps[f.PID] = append(c.maps[f.PID], f)
		case *capture.Fork:
			c.forks = append(c.forks, f)
		case *capture.Exit:
			c.exits[f.PID] = true
		case *capture.FileChunk:
			c.files.Add(f)
		}
	}
	return c
}

// elfNamer names user addresses of one ELF file mapped in a capture,
// enough for tests to check call chains before nsprof has a symbolizer.
type elfNamer struct {
	path  string
	progs []elf.ProgHeader
	syms  []elf.Symbol
}

func newELFNamer(t *testing.T, path string) *elfNamer {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &elfNamer{path: path}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			s.progs = append(s.progs, p.ProgHeader)
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, sym := range syms {
		if elf.ST_TYPE(sym.Info) == elf.STT_FUNC && sym.Value != 0 {
			s.syms = append(s.syms, sym)
		}
	}
	sort.Slice(s.syms, func(i, j int) bool { return s.syms[i].Value < s.syms[j].Value })
	return s
}

// name returns the function containing addr in process pid, or "".
func (s *elfNamer) name(maps []*capture.Map, addr uint64) string {
	for _, m := range maps {
		if m.Filename != s.path || addr < m.Start || addr >= m.End {
			continue
		}
		off := addr - m.Start + m.Offset
		for _, p := range s.progs {
			if off < p.Off || off >= p.Off+p.Filesz {
				continue
			}
			v := off - p.Off + p.Vaddr
			i := sort.Search(len(s.syms), func(i int) bool { return s.syms[i].Value > v }) - 1
			if i >= 0 && v < s.syms[i].Value+s.syms[i].Size {
				return s.syms[i].Name
			}
		}
	}
	return ""
}

// userChain returns the names of the user frames of a sample, leaf first;
// return addresses are looked up one byte back, inside the call.
func (s *elfNamer) userChain(maps []*capture.Map, addrs []uint64) []string {
	var names []string
	user, first := false, true
	for _, a := range addrs {
		if capture.IsContext(a) {
			user = a == capture.ContextUser
			continue
		}
		if !user {
			continue
		}
		if !first {
			a--
		}
		first = false
		names = append(names, s.name(maps, a))
	}
	return names
}

// buildID returns the hex GNU build-id of the ELF file at path.
func buildID(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := f.Section(".note.gnu.build-id")
	if sec == nil {
		t.Fatalf("%s has no build-id", path)
	}
	b, _ := sec.Data()
	// namesz, descsz, type, "GNU\0", desc
	const hdr = 16
	if len(b) < hdr {
		t.Fatalf("%s: short build-id note", path)
	}
	return hexString(b[hdr:])
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}
