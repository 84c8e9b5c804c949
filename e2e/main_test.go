package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// nsprofBin is the nsprof binary built for these tests.
var nsprofBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nsprof-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	nsprofBin = filepath.Join(dir, "nsprof")
	// nsprof-otlp beside it, as make builds them: nsprof runs it for
	// agent and push.
	for _, b := range [][]string{{"-o", nsprofBin}, {"-tags", "otlp", "-o", filepath.Join(dir, "nsprof-otlp")}} {
		build := exec.Command("go", append(append([]string{"build"}, b...), "nsprof/cmd/nsprof")...)
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make builds it
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building nsprof:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// nsprof runs the nsprof binary and returns its standard output; a
// non-zero exit fails the test with what it printed.
func nsprof(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(nsprofBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nsprof %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if s := stderr.String(); s != "" {
		t.Logf("nsprof %s:\n%s", args[0], s)
	}
	return string(out)
}

// recordPID records pid for secs seconds into a new capture and returns
// its path.
func recordPID(t *testing.T, pid int, secs int) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "capture.syscap")
	nsprof(t, "record", "-p", strconv.Itoa(pid), "--duration", strconv.Itoa(secs), "-o", out,
		"--no-cpu", "--no-memory", "--no-disk", "--no-network")
	return out
}

// report is the part of `nsprof report --json` the tests look at.
type report struct {
	Capture struct {
		Samples int            `json:"samples"`
		Symbols map[string]int `json:"symbols"`
	} `json:"capture"`
	Groups []struct {
		Key       string `json:"key"`
		PID       int32  `json:"pid"`
		NSPID     int32  `json:"nspid"`
		Container string `json:"container"`
		Samples   int    `json:"samples"`
		Functions []struct {
			Name  string `json:"function"`
			DSO   string `json:"dso"`
			Self  int    `json:"self"`
			Total int    `json:"total"`
		} `json:"functions"`
	} `json:"groups"`
}

// reportJSON runs `nsprof report --json` with args on capture and decodes
// the result.
func reportJSON(t *testing.T, capture string, args ...string) report {
	t.Helper()
	out := nsprof(t, append([]string{"report", capture, "--json", "--limit", "0"}, args...)...)
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("nsprof report --json: %v\n%s", err, out)
	}
	return r
}

// exportPprof exports capture with `nsprof export --format pprof` and
// parses the profile.
func exportPprof(t *testing.T, capture string) *profile.Profile {
	t.Helper()
	pb := filepath.Join(t.TempDir(), "export.pb.gz")
	nsprof(t, "export", capture, "--format", "pprof", "-o", pb)
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
