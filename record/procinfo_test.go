package record

import (
	"os/exec"
	"strings"
	"testing"

	"nsprof/proc"
)

// TestInspectReaped: a process reaped before it is inspected is said to be
// gone from its status alone, its other files not asked for.
func TestInspectReaped(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	info := inspect(proc.DefaultFS, pid, 0)
	if !info.gone {
		t.Fatalf("pid %d reaped, inspected as not gone: %+v", pid, info)
	}
	if !strings.HasPrefix(info.Err, "status: ") || strings.Contains(info.Err, ";") {
		t.Errorf("Err %q, want the status's error alone", info.Err)
	}
	if info.Comm != "" || info.MntNS != 0 || info.Root != "" {
		t.Errorf("a gone process described: %+v", info)
	}
	live := inspect(proc.DefaultFS, proc.Self, 0)
	if live.gone || live.Err != "" || live.MntNS == 0 {
		t.Errorf("this process inspected as %+v", live)
	}
}
