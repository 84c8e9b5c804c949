package perf

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var updateSeeds = flag.Bool("update-seeds", false, "capture live records into testdata/fuzz/FuzzDecodeRecord")

// FuzzDecodeRecord decodes arbitrary bytes under arbitrary formats. It
// checks that decoding never panics, that an error always leaves
// RecordNone, and that a used Record decodes to the same result as a
// fresh one.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(sampleRecord(1, 2, 3, []uint64{ContextUser, 1}), testFormat(false).SampleType, uint64(0), true)
	f.Add(record(RecordNamespaces, 0, idTrailer(nsBody(8, 9, 7), 8, 9, 5, 1, 7).b), testFormat(false).SampleType, uint64(0), true)
	f.Fuzz(func(t *testing.T, raw []byte, sampleType, regs uint64, idAll bool) {
		format := Format{SampleType: sampleType, RegsUser: regs, SampleIDAll: idAll}
		var fresh Record
		err := DecodeRecord(&fresh, raw, format)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.CPU != -1 {
				t.Fatalf("error %v is not a FormatError for cpu -1", err)
			}
			if fresh.Type != RecordNone {
				t.Fatalf("type %v after error %v", fresh.Type, err)
			}
			return
		}
		if want := RecordType(uint32(raw[0]) | uint32(raw[1])<<8 | uint32(raw[2])<<16 | uint32(raw[3])<<24); fresh.Type != want {
			t.Fatalf("type %v, header says %v", fresh.Type, want)
		}
		s := &fresh.Sample
		if 8*len(s.Callchain) > len(raw) || 8*len(s.Regs) > len(raw) || uint64(len(s.Stack)) > s.StackSize ||
			len(fresh.Mmap.Filename) > len(raw) || bytes.IndexByte(fresh.Mmap.Filename, 0) >= 0 ||
			fresh.Mmap.BuildIDSize > maxBuildID || bytes.IndexByte(fresh.Comm.Comm, 0) >= 0 {
			t.Fatalf("decoded values exceed the input: %s", summary(&fresh))
		}
		used := Record{Type: RecordSample}
		used.Sample.Callchain = []uint64{1, 2, 3, 4, 5, 6, 7, 8}
		used.Sample.Regs = []uint64{9, 9, 9}
		used.Sample.Stack = []byte("stale stale stale")
		used.Mmap.Filename = []byte("stale")
		used.Comm.Comm = []byte("stale")
		used.Raw = []byte("stale")
		if err := DecodeRecord(&used, raw, format); err != nil {
			t.Fatalf("second decode: %v", err)
		}
		if a, b := summary(&fresh), summary(&used); a != b {
			t.Fatalf("reused record differs:\n%s\n%s", a, b)
		}
	})
}

// summary prints the valid part of a record.
func summary(r *Record) string {
	var v any
	switch r.Type {
	case RecordSample:
		v = r.Sample
	case RecordMmap, RecordMmap2:
		v = r.Mmap
	case RecordComm:
		v = r.Comm
	case RecordFork, RecordExit:
		v = r.Task
	case RecordLost:
		v = r.Lost
	case RecordThrottle, RecordUnthrottle:
		v = r.Throttle
	case RecordLostSamples:
		v = r.LostSamples
	case RecordSwitchCPUWide:
		v = r.Switch
	case RecordNamespaces:
		v = r.Namespaces
	default:
		v = r.Raw
	}
	return fmt.Sprintf("%v misc %#x id %+v %+v", r.Type, r.Misc, r.ID, v)
}

// TestWriteFuzzSeeds captures one record of each kind from a real child,
// with and without build IDs and user stacks, and writes them as seeds.
// Run it with -update-seeds.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeRecord")
	write := func(name string, raw []byte, f Format) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint64(%#x)\nuint64(%#x)\nbool(%v)\n",
			raw, f.SampleType, f.RegsUser, f.SampleIDAll)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		suffix string
		opts   Options
	}{{"fp", Options{}}, {"stack", Options{UserStack: 128, NoBuildID: true}}} {
		cmd, release := startBeforeExec(t, busyBinary(t), "0.1")
		r, err := OpenWithOptions(Exec(cmd.Process.Pid), tc.opts)
		requirePerf(t, err)
		release()
		seen := map[string]bool{}
		r.SetDeadline(time.Now().Add(5 * time.Second))
		for {
			raw, err := nextRaw(r)
			if err != nil {
				break
			}
			var rec Record
			if err := DecodeRecord(&rec, raw, r.Format()); err != nil {
				t.Fatal(err)
			}
			name := rec.Type.String()
			if rec.Type == RecordSample && len(rec.Sample.Callchain) < 3 {
				continue
			}
			if !seen[name] {
				seen[name] = true
				write(name+"-"+tc.suffix, raw, r.Format())
			}
		}
		r.Close()
		cmd.Wait()
	}
	f := testFormat(false)
	write("LOST-synthetic", record(RecordLost, 0, idTrailer((&enc{}).u64(7).u64(12), 0, 0, 5, 1, 7).b), f)
	write("THROTTLE-synthetic", record(RecordThrottle, 0, idTrailer((&enc{}).u64(5).u64(7).u64(8), 0, 0, 5, 1, 7).b), f)
	write("LOST_SAMPLES-synthetic", record(RecordLostSamples, 0, idTrailer((&enc{}).u64(3), 0, 0, 5, 1, 7).b), f)
	write("MMAP-synthetic", record(RecordMmap, MiscUser, idTrailer((&enc{}).u32(5).u32(6).u64(0x1000).u64(0x2000).u64(0).str("/bin/x"), 5, 6, 99, 1, 7).b), f)
}

// nextRaw returns a copy of the next raw record of r's rings.
func nextRaw(r *Reader) ([]byte, error) {
	for {
		if r.pending {
			i, ferr := r.earliest()
			if ferr != nil {
				return nil, ferr
			}
			if i >= 0 {
				rg := r.res.rings[i]
				raw, _, ferr := rg.peek(r.scratch)
				r.next[i].known = false
				if ferr != nil {
					return nil, ferr
				}
				raw = bytes.Clone(raw)
				rg.consume(uint64(len(raw)))
				return raw, nil
			}
			r.pending = false
		}
		if r.loadHeads() {
			continue
		}
		if r.hungUp == len(r.res.fds) {
			return nil, os.ErrClosed
		}
		if err := r.res.poll.wait(time.Now().Add(time.Second), r.hup); err != nil {
			return nil, err
		}
	}
}
