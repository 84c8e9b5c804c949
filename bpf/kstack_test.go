package bpf

import (
	"os"
	"os/exec"
	"testing"

	"nsprof/internal/testutils"
)

func TestKernelStacksDump(t *testing.T) {
	bin := testutils.BuildFixture(t, "pingpong")
	cmd := exec.Command("taskset", "-c", "0", bin, "2000")
	s := open(t, Options{TGIDs: []int{os.Getpid()}, KernelStacks: true})
	if ok, err := s.KernelStacks(); !ok {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	n, reused, with := 0, 0, 0
	var sample []uint64
	if _, err := s.Read(func(r SwitchIn) {
		if r.PID != int32(cmd.Process.Pid) {
			return
		}
		n++
		if r.Kernel != nil {
			with++
			sample = r.Kernel
		}
		if r.KernelReused {
			reused++
		}
	}, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("n=%d with=%d reused=%d", n, with, reused)
	for _, a := range sample {
		t.Logf("%x", a)
	}
}
