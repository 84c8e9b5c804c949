//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// nodeScript keeps V8 busy for about two seconds in two functions it
// compiles, outerLoop calling leafWork.
const nodeScript = `function leafWork(n) { let x = n; for (let i = 0; i < 2000; i++) { x = (x * 1103515245 + i) % 2147483647; } return x; }
function outerLoop(secs) { const end = Date.now() + secs * 1000; let s = 0, i = 0; while (Date.now() < end) { s ^= leafWork(i++) ^ (i & 7); } return s; }
console.log(outerLoop(2));
`

// requireNode returns the path of node, whose --perf-prof has V8 write a
// jitdump of the code it compiles, as perf inject --jit reads it.
func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testutils.RequireCI(t, "node: %v (apt-get install nodejs)", err)
	}
	return node
}

// writeNodeScript writes nodeScript into a new temporary directory and
// returns the directory and the script's path.
func writeNodeScript(t *testing.T) (dir, script string) {
	t.Helper()
	dir = t.TempDir()
	script = filepath.Join(dir, "hot.js")
	if err := os.WriteFile(script, []byte(nodeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, script
}

// checkJSNames checks that most samples of the capture are in the script's
// functions, named from the jitdump (DSO JIT), in nsprof's report and by
// Sysprof's resolver, as `perf inject --jit` names them (about 94 % of
// perf's samples on this script).
func checkJSNames(t *testing.T, capture string) {
	t.Helper()
	r := reportJSON(t, capture)
	js, unknown := 0, 0
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			switch {
			case f.DSO == "JIT" && (strings.Contains(f.Name, "outerLoop") || strings.Contains(f.Name, "leafWork")):
				js += f.Self
			case strings.HasPrefix(f.Name, "[unknown"):
				unknown += f.Self
			}
		}
	}
	if js*2 < r.Capture.Samples {
		t.Errorf("%d of %d samples in outerLoop and leafWork named from the jitdump, want most; %d unnamed", js, r.Capture.Samples, unknown)
	}
	if unknown*10 > r.Capture.Samples {
		t.Errorf("%d of %d samples unnamed", unknown, r.Capture.Samples)
	}
	found := false
	for _, fns := range sysprofNames(t, capture) {
		for fn := range fns {
			found = found || strings.Contains(fn, "outerLoop")
		}
	}
	if !found {
		t.Errorf("Sysprof's resolver does not name outerLoop from the bundle")
	}
	if t.Failed() {
		t.Logf("%s", nsprof(t, "report", capture, "--limit", "12"))
	}
}

// TestNodeJITDump records node --perf-prof: the JavaScript functions V8
// compiled are named from the jitdump it mapped (written in its working
// directory, deleted before the report: the names are bundled).
func TestNodeJITDump(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	node := requireNode(t)
	dir, script := writeNodeScript(t)
	capture := filepath.Join(dir, "node.syscap")
	cmd := exec.Command(nsprofBin, "record", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", node, "--perf-prof", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, out)
	}
	dumps, _ := filepath.Glob(filepath.Join(dir, "jit-*.dump"))
	if len(dumps) == 0 {
		t.Fatalf("node --perf-prof wrote no jit-PID.dump in %s", dir)
	}
	for _, d := range dumps {
		os.Remove(d)
	}
	checkJSNames(t, capture)
}

// TestNodeJITDumpInNamespace records node --perf-prof in a PID and mount
// namespace whose working directory is a tmpfs of its own: the jitdump,
// named jit-3.dump for the namespace's pid, never existed on the host's
// side and is gone with the namespace, yet names the code.
func TestNodeJITDumpInNamespace(t *testing.T) {
	testutils.RequireRoot(t, "namespaces need root")
	node := requireNode(t)
	dir, script := writeNodeScript(t)
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o755); err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(dir, "node.syscap")
	inner := `mount -t tmpfs tmpfs "$1" && cd "$1" && "$2" --perf-prof "$3" && ls jit-*.dump`
	cmd := exec.Command(nsprofBin, "record", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--",
		"unshare", "--pid", "--fork", "--mount", "--kill-child", "sh", "-c", inner, "sh", private, node, script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "jit-") {
		t.Fatalf("no jitdump written in the namespace:\n%s", out)
	}
	if dumps, _ := filepath.Glob(filepath.Join(private, "jit-*.dump")); len(dumps) > 0 {
		t.Fatalf("the namespace's tmpfs is visible from the host: %v", dumps)
	}
	checkJSNames(t, capture)
}

// TestNodeJITDumpPodman records node --perf-prof run in a rootful Podman
// container (runc, its own PID and mount namespaces) whose root file
// system holds node, its libraries and the script: V8 writes the dump in
// the container's /tmp as jit-PID.dump with its pid there, and the
// report names the code from it, the root file system removed first. The
// process is reported as the container's.
func TestNodeJITDumpPodman(t *testing.T) {
	testutils.RequireRoot(t, "rootful podman needs root")
	node := requireNode(t)
	dir, script := writeNodeScript(t)
	rootfs := containers.RootfsWith(t, node)
	inRoot := filepath.Join(rootfs, script)
	if err := os.MkdirAll(filepath.Dir(inRoot), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inRoot, []byte(nodeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	args, env := containers.PodmanRunArgs(t, rootfs, []string{"--workdir", "/tmp"}, []string{node, "--perf-prof", script})
	capture := filepath.Join(dir, "node.syscap")
	cmd := exec.Command(nsprofBin, append([]string{"record", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, out)
	}
	dumps, _ := filepath.Glob(filepath.Join(rootfs, "tmp", "jit-*.dump"))
	if len(dumps) == 0 {
		t.Fatalf("no jitdump in the container's /tmp (%s)", filepath.Join(rootfs, "tmp"))
	}
	if err := os.RemoveAll(rootfs); err != nil {
		t.Fatal(err)
	}
	checkJSNames(t, capture)
	r := reportJSON(t, capture, "--by", "process")
	for _, g := range r.Groups {
		if g.Samples*2 > r.Capture.Samples && !strings.HasPrefix(g.Container, "podman") {
			t.Errorf("process %d (%s), most of the samples, labelled %q, want its podman container", g.PID, g.Key, g.Container)
		}
	}
}
