//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// The fixture's call chain, leaf first; every container runs it.
var hotChain = []string{"ctr_hot_leaf", "ctr_hot_middle", "ctr_hot_outer", "main"}

// checkNames checks that the report of the target process names the
// fixture's call chain from its own binary, never the host decoy's
// functions at the same path, and labels the process.
func checkNames(t *testing.T, r report, pid int, wantNSPID int32, label func(string) bool) {
	t.Helper()
	var found bool
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			if strings.HasPrefix(f.Name, "decoy_") {
				t.Errorf("process %d (%s): decoy function %s from the host file at the container's path", g.PID, g.Key, f.Name)
			}
		}
		if int(g.PID) != pid {
			continue
		}
		found = true
		if g.Samples < 100 {
			t.Errorf("process %d: %d samples in 3 s, want the fixture's busy loop (>= 100)", pid, g.Samples)
		}
		total := make(map[string]int)
		self := make(map[string]int)
		for _, f := range g.Functions {
			total[f.Name] += f.Total
			self[f.Name] += f.Self
			if f.Name == "ctr_hot_leaf" && f.DSO != "hot" {
				t.Errorf("ctr_hot_leaf in DSO %q, want hot", f.DSO)
			}
		}
		if leaf := self["ctr_hot_leaf"] + self["ctr_hot_step"]; leaf*2 < g.Samples {
			t.Errorf("process %d: ctr_hot_leaf+ctr_hot_step self %d of %d samples, want most", pid, leaf, g.Samples)
		}
		// Frame-pointer chains reach main from the leaf: every caller's
		// total covers the leaf's self time.
		for _, fn := range hotChain[1:] {
			if total[fn] < self["ctr_hot_leaf"] {
				t.Errorf("process %d: %s total %d < ctr_hot_leaf self %d (chain %v broken)", pid, fn, total[fn], self["ctr_hot_leaf"], hotChain)
			}
		}
		if wantNSPID != 0 && g.NSPID != wantNSPID {
			t.Errorf("process %d: in-namespace pid %d, want %d", pid, g.NSPID, wantNSPID)
		}
		if !label(g.Container) {
			t.Errorf("process %d: container label %q", pid, g.Container)
		}
		if t.Failed() {
			t.Logf("functions of %d: %+v", pid, g.Functions)
		}
	}
	if !found {
		t.Fatalf("no samples of process %d in the report (groups %d)", pid, len(r.Groups))
	}
}

// profileContainer records pid for 3 s, checks the report, stops the
// container with stop, and checks that the report of the same capture
// still names the fixture's functions from the bundle (with the host
// decoy still at the container's path).
func profileContainer(t *testing.T, pid int, wantNSPID int32, label func(string) bool, stop func()) string {
	t.Helper()
	capture := recordPID(t, pid, 3)
	r := reportJSON(t, capture, "--by", "process")
	checkNames(t, r, pid, wantNSPID, label)
	if r.Capture.Symbols["bundle"] == 0 {
		t.Errorf("no frame named from the capture's symbol bundle: %v", r.Capture.Symbols)
	}
	stop()
	containers.InstallDecoy(t)
	after := reportJSON(t, capture, "--by", "process")
	checkNames(t, after, pid, wantNSPID, label)
	checkSysprofNames(t, capture, pid)
	return capture
}

func kill(t *testing.T, pid int) func() {
	return func() {
		syscall.Kill(pid, syscall.SIGKILL)
		containers.WaitExit(t, pid, 10*time.Second)
	}
}

func TestPivotRoot(t *testing.T) {
	pid := containers.StartPivot(t)
	capture := profileContainer(t, pid, 1, func(l string) bool { return strings.HasPrefix(l, "namespace:/") }, kill(t, pid))
	checkDescribed(t, capture, pid, false, "")
}

func TestBwrapFlatpak(t *testing.T) {
	pid, _ := containers.StartBwrapFlatpak(t)
	capture := profileContainer(t, pid, 0, func(l string) bool { return l == "flatpak:"+containers.FlatpakAppID }, kill(t, pid))
	checkDescribed(t, capture, pid, false, "/.flatpak-info")
}

// podmanCase records a podman container, then removes it with its image
// and storage before reporting again.
func podmanCase(t *testing.T, start func(testing.TB, string) (int, string), storage string) {
	pid, id := start(t, storage)
	label := func(l string) bool { return strings.HasPrefix(l, "podman:") }
	capture := profileContainer(t, pid, 1, label, func() {
		containers.RemovePodman(t, id)
	})
	checkContainerFilter(t, capture, pid, id)
	checkDescribed(t, capture, pid, true, "/run/.containerenv")
	checkJIT(t, capture, pid)
}

// checkJIT checks that the fixture's generated code is named from the
// perf map it wrote in the container's /tmp, read with the container
// process's rights (the map is its user's), after the container is gone.
func checkJIT(t *testing.T, capture string, pid int) {
	t.Helper()
	r := reportJSON(t, capture, "--by", "process")
	for _, g := range r.Groups {
		if int(g.PID) != pid {
			continue
		}
		for _, f := range g.Functions {
			if f.Name == "ctr_jit_code" && f.DSO == "JIT" && f.Self > 0 {
				return
			}
		}
		t.Errorf("process %d: no samples named ctr_jit_code (JIT) from its /tmp/perf-1.map: %+v", pid, g.Functions)
		return
	}
	t.Errorf("process %d not in the report", pid)
}

// checkContainerFilter checks that --container with a prefix of the
// container id selects the target process.
func checkContainerFilter(t *testing.T, capture string, pid int, id string) {
	t.Helper()
	r := reportJSON(t, capture, "--by", "process", "--container", id[:12])
	if len(r.Groups) != 1 || int(r.Groups[0].PID) != pid {
		t.Errorf("--container %s: groups %+v, want only process %d", id[:12], r.Groups, pid)
	}
}

func TestPodmanOverlay(t *testing.T) { podmanCase(t, containers.StartPodman, "overlay") }
func TestPodmanFuse(t *testing.T)    { podmanCase(t, containers.StartPodman, "fuse") }
func TestPodmanRootlessOverlay(t *testing.T) {
	podmanCase(t, containers.StartPodmanRootless, "overlay")
}
func TestPodmanRootlessFuse(t *testing.T) { podmanCase(t, containers.StartPodmanRootless, "fuse") }

// checkDescribed checks that the capture describes the container as
// Sysprof does: OVERLAY frames for the layers of a podman root, and the
// container's own file (/run/.containerenv or /.flatpak-info).
func checkDescribed(t *testing.T, capture string, pid int, overlays bool, file string) {
	t.Helper()
	dump := nsprof(t, "dump", capture, "--type", "OVERLAY", "--pid", strconv.Itoa(pid))
	n := strings.Count(dump, " OVERLAY ")
	if overlays && n == 0 {
		t.Errorf("no OVERLAY frame for process %d:\n%s", pid, dump)
	}
	if !overlays && n > 0 {
		t.Errorf("OVERLAY frames for process %d, whose root is no overlay:\n%s", pid, dump)
	}
	if file != "" {
		want := "/proc/" + strconv.Itoa(pid) + "/root" + file
		if files := nsprof(t, "dump", capture, "--files"); !strings.Contains(files, want) {
			t.Errorf("capture lacks %s:\n%s", want, files)
		}
	}
}

// TestPodmanShort records a rootful Podman container whose
// shell runs 250 commands of about 10 ms each, as a command (podman run
// and what it starts) and system-wide: most of those commands exit before
// the recorder reads their /proc, and are labelled with the container
// all the same, from the namespaces the kernel reported at their fork
// (without, three quarters of their samples were labelled unknown), with
// their pids in the container (the vfork's return in the shell).
func TestPodmanShort(t *testing.T) {
	testutils.RequireRoot(t, "rootful podman needs root")
	rootfs := containers.RootfsWith(t, "/bin/sh", "/usr/bin/sha256sum")
	loop := `i=0; while [ $i -lt 250 ]; do /usr/bin/sha256sum /lib/x86_64-linux-gnu/libc.so.6 >/dev/null; i=$((i+1)); done`
	for _, tc := range []struct {
		name string
		args []string
	}{{"cmd", nil}, {"a", []string{"-a"}}} {
		t.Run(tc.name, func(t *testing.T) {
			args, env := containers.PodmanRunArgs(t, rootfs, nil, []string{"/bin/sh", "-c", loop})
			capture := filepath.Join(t.TempDir(), "short.syscap")
			rec := append(append([]string{"record", "-F", "1000", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network"}, tc.args...), "--")
			cmd := exec.Command(nsprofBin, append(rec, args...)...)
			cmd.Env = append(os.Environ(), env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("nsprof record: %v\n%s", err, out)
			}
			r := reportJSON(t, capture, "--by", "process", "--comm", "^sha256sum")
			labelled, samples := 0, 0
			var other []string
			nspids := map[int32]bool{}
			for _, g := range r.Groups {
				if g.NSPID > 1 {
					nspids[g.NSPID] = true
				}
				samples += g.Samples
				if strings.HasPrefix(g.Container, "podman:") {
					labelled += g.Samples
				} else if len(other) < 10 {
					other = append(other, fmt.Sprintf("%s: %d samples labelled %q", g.Key, g.Samples, g.Container))
				}
			}
			if len(r.Groups) < 100 || samples < 500 {
				t.Fatalf("%d sha256sum processes with %d samples, want the loop's 250 and their seconds", len(r.Groups), samples)
			}
			t.Logf("%d of the commands' %d samples (%d processes) labelled with the container; others: %s", labelled, samples, len(r.Groups), strings.Join(other, "; "))
			if labelled*100 < samples*95 {
				t.Errorf("%d of the commands' %d samples labelled with the container, want 95%%; others: %s", labelled, samples, strings.Join(other, "; "))
			}
			// Their pids in the container: the shell is 1 there, each
			// command another (the clone's return in the shell).
			if len(nspids)*100 < len(r.Groups)*95 {
				t.Errorf("%d of %d commands with a pid of their own in the container", len(nspids), len(r.Groups))
			}
		})
	}
}

// TestPodmanRootlessShort is TestPodmanShort in a rootless container (a
// user namespace of its own): a program forking 150 children one after
// the other, each spinning 10 ms, recorded system-wide. Each child is
// labelled with the container and has its pid there, as its parent has.
func TestPodmanRootlessShort(t *testing.T) {
	testutils.RequireRoot(t, "rootless podman is run as another user")
	bin := testutils.BuildFixture(t, "forkthreads", "-O2")
	args := containers.PodmanRunRootlessArgs(t, bin, nil, "150", "1", "serial")
	capture := filepath.Join(t.TempDir(), "short.syscap")
	rec := []string{"record", "-a", "-F", "1000", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--"}
	if out, err := exec.Command(nsprofBin, append(rec, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, out)
	}
	procs := processesJSON(t, capture)
	parent := map[int32]bool{}
	for _, p := range procs {
		if strings.HasPrefix(p.Comm, "forkthreads") && p.NSPID == 1 {
			parent[p.PID] = true
		}
	}
	if len(parent) != 1 {
		t.Fatalf("%d forkthreads processes with pid 1 in their namespace, want the container's one", len(parent))
	}
	children, labelled, nspids := 0, 0, map[int32]bool{}
	for _, p := range procs {
		if !parent[p.PPID] || p.Samples == 0 {
			continue
		}
		children++
		if strings.HasPrefix(p.Container, "podman:") {
			labelled++
		}
		if p.NSPID > 1 {
			nspids[p.NSPID] = true
		}
	}
	t.Logf("%d sampled children: %d labelled with the container, %d with their pid there", children, labelled, len(nspids))
	if children < 100 {
		t.Fatalf("%d children sampled, want most of the 150", children)
	}
	if labelled*100 < children*95 || len(nspids)*100 < children*95 {
		t.Errorf("of %d children, %d labelled with the container and %d with a pid of their own there, want 95%%", children, labelled, len(nspids))
	}
}

// TestPodmanContainerTarget records one running rootful container by its
// name (record --container: its cgroup, as perf record -a -G) while a
// busy process runs on the host, and runs three commands in it with
// podman exec meanwhile (their parent is the runtime's, on the host, so
// they are no process's of the container's children): the capture holds
// the container's processes and those commands, labelled with it, and no
// process of the host.
func TestPodmanContainerTarget(t *testing.T) {
	testutils.RequireRoot(t, "rootful podman needs root")
	rootfs := containers.RootfsWith(t, "/bin/sh", "/usr/bin/sha256sum")
	name := fmt.Sprintf("nsprof-target-%d", os.Getpid())
	args, env := containers.PodmanRunArgs(t, rootfs, []string{"-d", "--name", name}, []string{"/bin/sh", "-c", "while :; do :; done"})
	podman := args[:slices.Index(args, "run")]
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run(args...)
	remove := func() {
		cmd := exec.Command(podman[0], append(slices.Clone(podman[1:]), "rm", "-f", "-t", "0", name)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Run()
	}
	t.Cleanup(remove)
	hostPID := startHostBusy(t)
	// Stopped once the commands ran, and 3 s in at least: podman exec
	// takes a second or more on a loaded machine, and a recording of a
	// fixed 3 s once ended before two of them.
	capture, log := recordContainerWhile(t, name, 3*time.Second, func() {
		for range 3 {
			run(append(slices.Clone(podman), "exec", name, "/usr/bin/sha256sum", "/lib/x86_64-linux-gnu/libc.so.6")...)
		}
	})
	shells, execs, samples := 0, 0, 0
	for _, p := range processesJSON(t, capture) {
		samples += p.Samples
		if !strings.HasPrefix(p.Container, "podman:"+name) {
			t.Errorf("process %d (%s) labelled %q, not the container", p.PID, p.Comm, p.Container)
		}
		if int(p.PID) == hostPID {
			t.Errorf("the host's busy process %d is in the capture", p.PID)
		}
		switch p.Comm {
		case "sh":
			shells++
		case "sha256sum":
			execs++
		}
	}
	if shells == 0 || execs != 3 || samples < 1000 {
		t.Errorf("%d shells, %d of the 3 commands podman exec ran, %d samples (want the shell's busy seconds)\n%s", shells, execs, samples, log)
	}

	// With a command, it ends when the command exits, as -a does.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	started := time.Now()
	if b, err := exec.CommandContext(ctx, nsprofBin, "record", "--container", name, "-o", capture, "-f", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", "sleep", "1").CombinedOutput(); err != nil {
		t.Fatalf("nsprof record --container -- sleep 1: %v (after %v)\n%s", err, time.Since(started), b)
	}

	// Without --duration, the recording ends when the container stops.
	checkRecordingEnds(t, name, remove)
}

// TestPodmanRootlessContainerTarget: record --container of a rootless
// container where cgroups are v1 (its processes stay in their user's
// cgroup: nothing but their PID namespace tells them) records its
// processes and a command podman exec runs in it meanwhile (its parent
// the runtime's, on the host), labelled with it, its fixture's functions
// named, and no process of the host, although every CPU is sampled; the
// recording ends when the container is removed.
func TestPodmanRootlessContainerTarget(t *testing.T) {
	testutils.RequireRoot(t, "rootless podman is run as another user")
	pid, id := containers.StartPodmanRootless(t, "overlay")
	hostPID := startHostBusy(t)
	capture, log := recordContainerWhile(t, id[:12], 4*time.Second, func() {
		containers.ExecPodman(t, id, containers.BinPath, "2")
	})
	r := reportJSON(t, capture, "--by", "process")
	checkNames(t, r, pid, 0, func(l string) bool { return strings.HasPrefix(l, "podman:") })
	execd := 0
	procs := processesJSON(t, capture)
	for _, p := range procs {
		if !strings.HasPrefix(p.Container, "podman:") {
			t.Errorf("process %d (%s) labelled %q, not the container", p.PID, p.Comm, p.Container)
		}
		if int(p.PID) == hostPID {
			t.Errorf("the host's busy process %d is in the capture", p.PID)
		}
		if int(p.PID) != pid && p.Comm == filepath.Base(containers.BinPath) && p.Samples > 100 {
			execd++
		}
	}
	if execd != 1 {
		t.Errorf("%d processes of the fixture podman exec ran for 2 s with its samples, want 1: %+v\n%s", execd, procs, log)
	}
	if !strings.Contains(log, "samples of other processes left out") {
		t.Errorf("the host's samples are not said left out:\n%s", log)
	}

	// Without --duration, the recording ends when none of the
	// container's processes runs.
	checkRecordingEnds(t, id[:12], func() { containers.RemovePodman(t, id) })
}

// TestFlatpakContainerTarget: record --container with a Flatpak app's id
// records the processes of its sandbox (bubblewrap, laid out as Flatpak
// does: nothing but its namespaces tells it) and a command entered into
// it meanwhile (nsenter into every namespace of the app, as flatpak enter
// does: its parent is on the host), labelled with the app, and no process
// of the host; the recording ends when the app exits.
func TestFlatpakContainerTarget(t *testing.T) {
	testutils.RequireRoot(t, "entering the sandbox needs root")
	nsenter := testutils.LookPathOrSkip(t, "nsenter")
	pid, _ := containers.StartBwrapFlatpak(t)
	hostPID := startHostBusy(t)
	capture, log := recordContainerWhile(t, containers.FlatpakAppID, 4*time.Second, func() {
		enter := exec.Command(nsenter, "--target", strconv.Itoa(pid), "--all", "--root", "--wd", containers.FlatpakBinPath, "2")
		if out, err := enter.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(enter.Args, " "), err, out)
		}
	})
	label := "flatpak:" + containers.FlatpakAppID
	entered := 0
	procs := processesJSON(t, capture)
	for _, p := range procs {
		if p.Container != label {
			t.Errorf("process %d (%s) labelled %q, not %q", p.PID, p.Comm, p.Container, label)
		}
		if int(p.PID) == hostPID {
			t.Errorf("the host's busy process %d is in the capture", p.PID)
		}
		if int(p.PID) != pid && p.Comm == "hot" && p.Samples > 100 {
			entered++
		}
	}
	if entered != 1 {
		t.Errorf("%d processes of the fixture entered into the sandbox for 2 s with their samples, want 1: %+v\n%s", entered, procs, log)
	}
	r := reportJSON(t, capture, "--by", "process")
	checkNames(t, r, pid, 0, func(l string) bool { return l == label })
	checkRecordingEnds(t, containers.FlatpakAppID, kill(t, pid))
}

// recordContainerWhile records the container label alone (record
// --container, the counters off) while during runs, 1 s after the start,
// and for at least least in all; it stops the recording by SIGINT and
// returns the capture and what nsprof printed.
func recordContainerWhile(t *testing.T, label string, least time.Duration, during func()) (capture, log string) {
	t.Helper()
	capture = filepath.Join(t.TempDir(), "ctr.syscap")
	rec := exec.Command(nsprofBin, "record", "-v", "--container", label, "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network")
	var out strings.Builder
	rec.Stdout, rec.Stderr = &out, &out
	begun := time.Now()
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if rec.ProcessState == nil { // during failed the test
			rec.Process.Kill()
			rec.Wait()
		}
	})
	time.Sleep(time.Second)
	during()
	time.Sleep(time.Until(begun.Add(least)))
	if err := rec.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("nsprof record --container: %v\n%s", err, out.String())
	}
	return capture, out.String()
}

// checkRecordingEnds starts recording the container label without
// --duration, removes the container a second later, and checks that the
// recording ends.
func checkRecordingEnds(t *testing.T, label string, remove func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := exec.CommandContext(ctx, nsprofBin, "record", "--container", label, "-o", filepath.Join(t.TempDir(), "ends.syscap"), "--no-cpu", "--no-memory", "--no-disk", "--no-network")
	var out strings.Builder
	rec.Stdout, rec.Stderr = &out, &out
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	stopped := time.Now()
	remove()
	if err := rec.Wait(); err != nil {
		t.Fatalf("nsprof record --container, the container removed: %v (after %v)\n%s", err, time.Since(stopped), out.String())
	}
	t.Logf("the recording ended %v after the container was removed", time.Since(stopped))
}

// startHostBusy starts a busy process on the host for the test's length,
// and returns its pid.
func startHostBusy(t *testing.T) int {
	t.Helper()
	host := exec.Command(testutils.BuildFixture(t, "callchain"), "10", "1", "nofork")
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	return host.Process.Pid
}

// procDoc is a process of `nsprof report --processes --json`: the fields
// the tests read.
type procDoc struct {
	PID       int32  `json:"pid"`
	PPID      int32  `json:"ppid"`
	NSPID     int32  `json:"nspid"`
	Comm      string `json:"comm"`
	Container string `json:"container"`
	Samples   int    `json:"samples"`
}

// processesJSON returns the processes `nsprof report --processes --json`
// lists of capture.
func processesJSON(t *testing.T, capture string) []procDoc {
	t.Helper()
	var doc struct {
		Processes []procDoc `json:"processes"`
	}
	if err := json.Unmarshal([]byte(nsprof(t, "report", "--processes", "--json", capture)), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Processes
}
