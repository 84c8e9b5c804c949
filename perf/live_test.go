package perf

import (
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"nsprof/internal/unix"
)

// startBeforeExec starts prog under a shell that blocks until release is
// called and then execs prog, so events can be attached before the exec.
func startBeforeExec(t *testing.T, prog string, args ...string) (cmd *exec.Cmd, release func()) {
	t.Helper()
	cmd = exec.Command("/bin/sh", append([]string{"-c", `read x; exec "$0" "$@"`, prog}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, func() {
		if _, err := stdin.Write([]byte("go\n")); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads records until io.EOF or the timeout, calling fn for each.
func readAll(t *testing.T, r *Reader, timeout time.Duration, fn func(*Record)) {
	t.Helper()
	readRecords(t, r, timeout, true, fn)
}

// readToEOF reads records until io.EOF, calling fn for each: the end of
// the events' targets must come before the timeout.
func readToEOF(t *testing.T, r *Reader, timeout time.Duration, fn func(*Record)) {
	t.Helper()
	readRecords(t, r, timeout, false, fn)
}

func readRecords(t *testing.T, r *Reader, timeout time.Duration, timeoutEnds bool, fn func(*Record)) {
	t.Helper()
	start := time.Now()
	r.SetDeadline(start.Add(timeout))
	var rec Record
	for {
		err := r.ReadInto(&rec)
		if errors.Is(err, io.EOF) || timeoutEnds && errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
		if err != nil {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
		fn(&rec)
	}
}

func buildIDOf(t *testing.T, path string) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			t.Fatal(err)
		}
		for len(b) >= 12 {
			nsz, dsz, typ := f.ByteOrder.Uint32(b), f.ByteOrder.Uint32(b[4:]), f.ByteOrder.Uint32(b[8:])
			name := (12 + nsz + 3) &^ 3
			end := name + (dsz+3)&^3
			if uint32(len(b)) < end {
				break
			}
			if typ == 3 && string(b[12:12+nsz]) == "GNU\x00" {
				return slices.Clone(b[name : name+dsz])
			}
			b = b[end:]
		}
	}
	t.Fatalf("%s has no build id note", path)
	return nil
}

func TestExecChild(t *testing.T) {
	busy := busyBinary(t)
	for _, tc := range []struct {
		name  string
		stack uint32
	}{{"fp", 0}, {"stack", 8192}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, release := startBeforeExec(t, busy, "0.4")
			r, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{UserStack: tc.stack})
			requirePerf(t, err)
			defer r.Close()
			start := uint64(unix.MonotonicNow())
			release()

			pid := uint32(cmd.Process.Pid)
			var (
				samples, userRegs, stacks int
				pids                      = map[uint32]int{}
				tids                      = map[uint32]bool{}
				counts                    = map[RecordType]int{}
				sawExec, sawBinary        bool
				forkChild                 uint32
				exits                     = map[uint32]bool{}
				inChain                   bool
				buildIDs                  = map[string][]byte{}
			)
			f := r.Format()
			readAll(t, r, 10*time.Second, func(rec *Record) {
				counts[rec.Type]++
				if tm := rec.Time(); tm < start || tm > uint64(unix.MonotonicNow()) {
					t.Errorf("%v time %d outside [%d, now]", rec.Type, tm, start)
				}
				switch rec.Type {
				case RecordSample:
					s := &rec.Sample
					samples++
					pids[s.PID]++
					tids[s.TID] = true
					if int(s.CPU) != rec.CPU {
						t.Errorf("sample cpu %d in ring of cpu %d", s.CPU, rec.CPU)
					}
					if len(s.Callchain) > 1 && slices.Contains(s.Callchain, ContextUser) {
						inChain = true
					}
					if s.RegsABI == RegsABI64 {
						userRegs++
						if ip, ok := f.UserReg(s, RegX86IP); ok && rec.Misc&MiscCPUModeMask == MiscUser && ip != s.IP {
							t.Errorf("user sample ip %#x, register ip %#x", s.IP, ip)
						}
						if sp, ok := f.UserReg(s, RegX86SP); !ok || sp == 0 {
							t.Errorf("no stack pointer in %d registers", len(s.Regs))
						}
					}
					if len(s.Stack) > 0 {
						stacks++
						if s.StackSize != uint64(tc.stack) {
							t.Errorf("stack size %d, want %d", s.StackSize, tc.stack)
						}
					}
				case RecordComm:
					if rec.Comm.Exec && rec.Comm.PID == pid && string(rec.Comm.Comm) == "busy" {
						sawExec = true
					}
				case RecordMmap2:
					m := &rec.Mmap
					name := string(m.Filename)
					if m.PID == pid && name == busy {
						sawBinary = true
					}
					if strings.HasPrefix(name, "/") && rec.Misc&MiscMmapBuildID == 0 {
						t.Errorf("MMAP2 of %s has no build id", name)
					}
					if id := m.BuildIDBytes(); id != nil {
						buildIDs[name] = slices.Clone(id)
					}
				case RecordFork:
					if rec.Task.PPID == pid && rec.Task.PID != pid {
						forkChild = rec.Task.PID
					}
				case RecordExit:
					exits[rec.Task.PID] = true
				}
			})
			t.Logf("records %v; samples by pid %v; %d tids; build ids of %d files", counts, pids, len(tids), len(buildIDs))
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			if samples < 100 || pids[pid] < 50 {
				t.Errorf("%d samples, %d of pid %d; want at least 100 and 50", samples, pids[pid], pid)
			}
			if forkChild == 0 || pids[forkChild] < 20 {
				t.Errorf("fork child %d has %d samples", forkChild, pids[forkChild])
			}
			if len(tids) < 3 {
				t.Errorf("samples from %d tids, want main thread, second thread and child", len(tids))
			}
			for p := range pids {
				if p != pid && p != forkChild {
					t.Errorf("sample of foreign pid %d", p)
				}
			}
			if !inChain {
				t.Error("no callchain with user frames")
			}
			if !sawExec || !sawBinary {
				t.Errorf("COMM exec seen %v, MMAP2 of %s seen %v", sawExec, busy, sawBinary)
			}
			if len(buildIDs) < 2 {
				t.Errorf("build ids of %d files, want the program and its libraries", len(buildIDs))
			}
			for name, id := range buildIDs {
				if want := buildIDOf(t, name); !bytes.Equal(id, want) {
					t.Errorf("%s: MMAP2 build id %x, ELF note %x", name, id, want)
				}
			}
			if !exits[pid] || !exits[forkChild] {
				t.Errorf("EXIT records for %v, want %d and %d", exits, pid, forkChild)
			}
			if tc.stack != 0 && (userRegs < samples/2 || stacks < samples/2) {
				t.Errorf("%d samples: %d with user registers, %d with stacks", samples, userRegs, stacks)
			}
		})
	}
}
