package symbol

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// TestGoBuildID reads the Go build-id of this test binary as `go tool
// buildid` prints it, and none from a C program's file.
func TestGoBuildID(t *testing.T) {
	goTool := testutils.LookPathOrSkip(t, "go")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goTool, "tool", "buildid", exe).Output()
	if err != nil {
		t.Fatalf("go tool buildid: %v", err)
	}
	f, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, want := string(f.GoBuildID()), strings.TrimSpace(string(out)); got != want {
		t.Errorf("GoBuildID %q, want %q", got, want)
	}
	c, err := Open("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if id := c.GoBuildID(); id != nil {
		t.Errorf("/bin/sh: Go build-id %q", id)
	}
}
