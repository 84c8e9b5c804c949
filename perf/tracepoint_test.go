package perf

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

const cloneFormat = `name: sys_exit_clone
ID: 195
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:long ret;	offset:16;	size:8;	signed:1;
	field:char comm[16];	offset:24;	size:16;	signed:0;

print fmt: "0x%lx", REC->ret
`

func TestParseTracepointFormat(t *testing.T) {
	tp, err := ParseTracepointFormat(strings.NewReader(cloneFormat))
	if err != nil {
		t.Fatal(err)
	}
	if tp.ID != 195 || tp.Fields["ret"] != (TracepointField{16, 8, true}) || tp.Fields["comm"] != (TracepointField{24, 16, false}) {
		t.Fatalf("parsed %+v", tp)
	}
	raw := make([]byte, 40)
	raw[0], raw[1] = 195, 0
	for i := 16; i < 24; i++ {
		raw[i] = 0xff // -1
	}
	if v, ok := tp.Int(raw, "ret"); !ok || v != -1 || !tp.Matches(raw) {
		t.Fatalf("ret = %d %t", v, ok)
	}
	if _, ok := tp.Int(raw[:20], "ret"); ok {
		t.Fatal("field past the data read")
	}
	if v, ok := tp.Fields["ret"].Int(raw); !ok || v != -1 {
		t.Fatalf("ret read through its field = %d %t", v, ok)
	}
	if _, ok := tp.Fields["comm"].Int(raw); ok {
		t.Fatal("a 16-byte field read as an integer")
	}
	if _, ok := tp.Int(raw, "nonesuch"); ok {
		t.Fatal("a missing field read")
	}
	for _, bad := range []string{"ID: x\n", "field:int a;\toffset:-1;\tsize:4;\n", "no id\n"} {
		if _, err := ParseTracepointFormat(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestTracepointCloneExit records the exits of the task-creating syscalls
// for a shell that starts commands (dash uses vfork, glibc's fork clone,
// pthread_create clone3): in the parent, each return value is the new
// task's id, which a FORK record names.
func TestTracepointCloneExit(t *testing.T) {
	var tps []*Tracepoint
	var names []string
	var err error
	for _, name := range []string{"syscalls:sys_exit_clone", "syscalls:sys_exit_clone3", "syscalls:sys_exit_fork", "syscalls:sys_exit_vfork"} {
		var tp *Tracepoint
		if tp, err = LookupTracepoint(name); err != nil {
			break
		}
		tps = append(tps, tp)
		names = append(names, name)
	}
	if errors.Is(err, ErrNoTracefs) || errors.Is(err, os.ErrNotExist) {
		testutils.RequireCI(t, "tracefs: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := exec.LookPath("sh")
	cmd, release := startBeforeExec(t, sh, "-c", "/bin/true; /bin/true; /bin/true")
	r, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{Tracepoints: names})
	requirePerf(t, err)
	defer r.Close()
	release()
	forks := map[int64]bool{}
	var rets []int64
	readAll(t, r, 5*time.Second, func(rec *Record) {
		switch rec.Type {
		case RecordFork:
			forks[int64(rec.Task.TID)] = true
		case RecordSample:
			for _, tp := range tps {
				if tp.Matches(rec.Sample.RawData) {
					ret, ok := tp.Int(rec.Sample.RawData, "ret")
					if ok && ret > 0 { // 0 is the child's own return
						rets = append(rets, ret)
					}
				}
			}
		}
	})
	if len(rets) != 3 {
		t.Fatalf("%d clone returns in the parent, want 3 (forks %v)", len(rets), forks)
	}
	for _, ret := range rets {
		if !forks[ret] {
			t.Errorf("clone returned %d, not a forked task %v", ret, forks)
		}
	}
}

// TestUserStackTracepoint: a UserStackTracepoint's hits carry the user
// part of the callchain alone (no kernel context), a StackTracepoint's
// the kernel part too, and a plain Tracepoint's none.
func TestUserStackTracepoint(t *testing.T) {
	const enter, exit, sw = "raw_syscalls:sys_enter", "raw_syscalls:sys_exit", "sched:sched_switch"
	var tps [3]*Tracepoint
	var err error
	for i, name := range []string{enter, exit, sw} {
		if tps[i], err = LookupTracepoint(name); err != nil {
			break
		}
	}
	if errors.Is(err, ErrNoTracefs) || errors.Is(err, os.ErrNotExist) {
		testutils.RequireCI(t, "tracefs: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := exec.LookPath("sh")
	cmd, release := startBeforeExec(t, sh, "-c", "/bin/true; /bin/true; sleep 0.01")
	r, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{Tracepoints: []string{exit},
		StackTracepoints: []string{sw}, UserStackTracepoints: []string{enter}})
	requirePerf(t, err)
	defer r.Close()
	release()
	var hits, kernel, user [3]int
	readAll(t, r, 5*time.Second, func(rec *Record) {
		if rec.Type != RecordSample {
			return
		}
		for i, tp := range tps {
			if !tp.Matches(rec.Sample.RawData) {
				continue
			}
			hits[i]++
			if slices.Contains(rec.Sample.Callchain, ContextKernel) {
				kernel[i]++
			}
			if slices.Contains(rec.Sample.Callchain, ContextUser) {
				user[i]++
			}
		}
	})
	t.Logf("hits %v, with kernel frames %v, with user frames %v (sys_enter, sys_exit, sched_switch)", hits, kernel, user)
	if hits[0] == 0 || kernel[0] != 0 || user[0] < hits[0]*9/10 {
		t.Errorf("%s as a UserStackTracepoint: %d hits, %d with kernel frames (want 0), %d with user frames (want most)", enter, hits[0], kernel[0], user[0])
	}
	if hits[1] == 0 || kernel[1]+user[1] != 0 {
		t.Errorf("%s as a Tracepoint: %d hits, %d with callchains (want 0)", exit, hits[1], kernel[1]+user[1])
	}
	if hits[2] == 0 || kernel[2] < hits[2]*9/10 {
		t.Errorf("%s as a StackTracepoint: %d hits, %d with kernel frames (want most)", sw, hits[2], kernel[2])
	}
}
