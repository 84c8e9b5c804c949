//go:build linux

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// A root system-wide recording keeps other users' command lines out by
// default (another user's --db-password=… must not go into a file that is
// then shared), keeps its own user's, and keeps all of them or none on
// request. The secrets are looked for in every byte of the capture.
func TestRedactCmdlines(t *testing.T) {
	testutils.RequireRoot(t, "recording another user's process needs root")
	setpriv := testutils.LookPathOrSkip(t, "setpriv")
	other := "--db-password=" + rand.Text()
	own := "--own-token=" + rand.Text()
	start := func(args ...string) int {
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		want := strings.Fields(args[len(args)-1])[0]
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
			if bytes.Contains(b, []byte(want)) {
				return cmd.Process.Pid
			}
			if time.Now().After(deadline) {
				t.Fatalf("%v did not start: cmdline %q", args, b)
			}
		}
	}
	otherPID := start(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", "sleep 60", "sh", other)
	start("sh", "-c", "sleep 60", "sh", own)

	for _, tc := range []struct {
		flag            string
		wantOther, want bool
	}{
		{"", false, true},
		{"--redact-cmdlines=none", true, true},
		{"--redact-cmdlines=all", false, false},
	} {
		name := strings.TrimPrefix(tc.flag, "--redact-cmdlines=")
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			testutils.SystemWide(t, false)
			out := filepath.Join(t.TempDir(), "capture.syscap")
			args := []string{"record", "-a", "--duration", "1", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network"}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			cmd := exec.Command(nsprofBin, args...)
			// Recorded as root itself, not through sudo.
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
				return strings.HasPrefix(kv, "SUDO_UID=") || strings.HasPrefix(kv, "PKEXEC_UID=")
			})
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("nsprof %s: %v\n%s", strings.Join(args, " "), err, b)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(data, []byte(other)); got != tc.wantOther {
				t.Errorf("other user's secret argument in the capture: %v, want %v", got, tc.wantOther)
			}
			if got := bytes.Contains(data, []byte(own)); got != tc.want {
				t.Errorf("own secret argument in the capture: %v, want %v", got, tc.want)
			}
			var doc struct {
				Processes []struct {
					PID      int    `json:"pid"`
					Cmdline  string `json:"cmdline"`
					Redacted bool   `json:"cmdline_redacted"`
				} `json:"processes"`
			}
			if err := json.Unmarshal([]byte(nsprof(t, "report", "--processes", "--json", out)), &doc); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range doc.Processes {
				if p.PID != otherPID {
					continue
				}
				found = true
				if tc.wantOther && p.Cmdline != "sh -c sleep 60 sh "+other {
					t.Errorf("other user's process: command line %q", p.Cmdline)
				}
				if !tc.wantOther && (p.Cmdline != "sh" || !p.Redacted) {
					t.Errorf("other user's process: command line %q (redacted %v), want the program name, redacted", p.Cmdline, p.Redacted)
				}
			}
			if !found {
				t.Errorf("other user's process %d not in the report", otherPID)
			}
		})
	}
}
