//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// Threads are not processes: a program forking children and starting
// threads is counted as 1+children processes and 1+children+threads
// threads, and each thread is listed under its process by the name it
// gave itself. (Sysprof's format writes a FORK frame for a new thread as
// for a new process.)
func TestThreadsCountedApart(t *testing.T) {
	const children, threads = 50, 20
	bin := testutils.BuildFixture(t, "forkthreads", "-O2")
	out := filepath.Join(t.TempDir(), "capture.syscap")
	nsprof(t, "record", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, fmt.Sprint(children), fmt.Sprint(threads))

	var doc struct {
		Capture struct {
			Processes int `json:"processes"`
			Threads   int `json:"threads"`
		} `json:"capture"`
		Processes []struct {
			PID        int32  `json:"pid"`
			PPID       int32  `json:"ppid"`
			Cmdline    string `json:"cmdline"`
			ThreadList []struct {
				TID    int32  `json:"tid"`
				Comm   string `json:"comm"`
				Exited bool   `json:"exited"`
			} `json:"thread_list"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(nsprof(t, "report", "--processes", "--json", out)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Capture.Processes != 1+children || doc.Capture.Threads != 1+children+threads {
		t.Errorf("%d processes and %d threads, want %d and %d", doc.Capture.Processes, doc.Capture.Threads, 1+children, 1+children+threads)
	}
	if len(doc.Processes) != 1+children {
		t.Fatalf("--processes lists %d processes, want %d", len(doc.Processes), 1+children)
	}
	main := doc.Processes[0]
	var names []string
	for _, p := range doc.Processes {
		if p.PID != main.PID && p.PPID != main.PID {
			t.Errorf("process %d (%q) is no child of %d", p.PID, p.Cmdline, main.PID)
		}
		if p.PID != main.PID && len(p.ThreadList) != 0 {
			t.Errorf("child %d lists threads %v", p.PID, p.ThreadList)
		}
	}
	for _, th := range main.ThreadList {
		names = append(names, th.Comm)
		if !th.Exited {
			t.Errorf("thread %d (%s) not seen to exit", th.TID, th.Comm)
		}
	}
	slices.Sort(names)
	var want []string
	for i := range threads {
		want = append(want, fmt.Sprintf("worker-%d", i))
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("threads of %d: %q, want %q", main.PID, names, want)
	}

	summary := nsprof(t, "report", "--summary", out)
	for _, line := range []string{fmt.Sprintf("processes    %d (", 1+children), fmt.Sprintf("threads      %d (", 1+children+threads)} {
		if !strings.Contains(summary, line) {
			t.Errorf("summary lacks %q:\n%s", line, summary)
		}
	}
	text := nsprof(t, "report", "--processes", out)
	if n := strings.Count(text, " thread worker-"); n != threads || strings.Contains(text, "[.]") {
		t.Errorf("--processes shows %d thread rows named worker-N, want %d, and no [.]:\n%s", n, threads, text)
	}
}
