//go:build linux

package e2e

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// Debug-information variants of a fixture, each run in a chroot whose only
// files are the binary and what its variant adds, recorded with `nsprof
// record -- unshare --root ROOT /bin/hot 2`: names must come from the
// variant's source of symbols, found inside the process's root (or from
// debuginfod), and be bundled in the capture.

func testdata(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", name)
}

// tool runs a build tool and fails the test with its output on error.
func tool(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	path := testutils.LookPathOrSkip(t, name)
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// cFixture builds testdata/dbg-hot.c (or .cpp with g++) static, with
// frame pointers, debug info and a build-id.
func cFixture(t *testing.T, cxx bool) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "hot")
	cc, src := "gcc", testdata("dbg-hot.c")
	if cxx {
		cc, src = "g++", testdata("dbg-hot.cpp")
	}
	tool(t, cc, "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls",
		"-static", "-Wl,--build-id", "-o", out, src)
	return out
}

func buildID(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("%s has no build-id", path)
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		t.Fatalf("%s: build-id note: %v", path, err)
	}
	off := 12 + (f.ByteOrder.Uint32(d)+3)&^3
	return hex.EncodeToString(d[off : off+f.ByteOrder.Uint32(d[4:])])
}

// hasSymtab reports whether path still has a .symtab.
func hasSymtab(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.Section(".symtab") != nil
}

// stripInto strips bin into root/bin/hot and returns the path and the
// separate debug file (in a scratch directory).
func stripInto(t *testing.T, bin, root string) (stripped, debug string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	debug = filepath.Join(t.TempDir(), "hot.debug")
	stripped = filepath.Join(root, "bin", "hot")
	tool(t, "objcopy", "--only-keep-debug", bin, debug)
	tool(t, "objcopy", "--strip-all", bin, stripped)
	if hasSymtab(t, stripped) {
		t.Fatalf("%s still has .symtab", stripped)
	}
	return stripped, debug
}

func copyTo(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// recordChroot records /bin/hot run for 2 s in root (a chroot) and
// returns the capture path. env is added to nsprof's environment.
func recordChroot(t *testing.T, root string, env ...string) string {
	t.Helper()
	unshare := testutils.LookPathOrSkip(t, "unshare")
	out := filepath.Join(t.TempDir(), "capture.syscap")
	// A symbol cache of its own: the fixtures are cached builds, and a
	// shared cache would name them without the debug files tested here.
	cmd := exec.Command(nsprofBin, "record", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network",
		"--symbol-cache", filepath.Join(t.TempDir(), "symbols"),
		"--", unshare, "--root", root, "/bin/hot", "2")
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, b)
	}
	t.Logf("nsprof record:\n%s", b)
	testutils.StopFiller(t, string(b)) // it writes into the TempDir
	return out
}

// checkChain checks that the report names chain (leaf first) in the
// process that ran /bin/hot, with the leaf (and helpers) hot and every
// caller covering it.
func checkChain(t *testing.T, capture string, chain []string, leafHelpers ...string) {
	t.Helper()
	checkChainFrom(t, capture, "bundle", chain, leafHelpers...)
}

// checkChainFrom is checkChain with the symbolizer (as counted in the
// report's "symbols") that must have named frames.
func checkChainFrom(t *testing.T, capture, source string, chain []string, leafHelpers ...string) {
	t.Helper()
	r := reportJSON(t, capture)
	if len(r.Groups) != 1 {
		t.Fatalf("report: %d groups, want 1", len(r.Groups))
	}
	g := r.Groups[0]
	self, total := map[string]int{}, map[string]int{}
	for _, f := range g.Functions {
		self[f.Name] += f.Self
		total[f.Name] += f.Total
	}
	leaf := self[chain[0]]
	for _, h := range leafHelpers {
		leaf += self[h]
	}
	if leaf*2 < g.Samples {
		t.Errorf("%s (+%v) self %d of %d samples, want most", chain[0], leafHelpers, leaf, g.Samples)
	}
	for _, fn := range chain[1:] {
		if total[fn] < self[chain[0]] || total[fn] == 0 {
			t.Errorf("%s total %d < %s self %d", fn, total[fn], chain[0], self[chain[0]])
		}
	}
	if r.Capture.Symbols[source] == 0 {
		t.Errorf("no frame named by %s: %v", source, r.Capture.Symbols)
	}
	if t.Failed() {
		var names []string
		for _, f := range g.Functions {
			names = append(names, fmt.Sprintf("%s(%d/%d)", f.Name, f.Self, f.Total))
		}
		t.Logf("functions: %s", strings.Join(names, " "))
	}
}

var cChain = []string{"dbg_hot_leaf", "dbg_hot_middle", "dbg_hot_outer", "main"}

// debugLinkRoot returns a root directory holding the C fixture stripped at
// /bin/hot, with a .gnu_debuglink to its debug file, which is installed at
// GDB's global location inside the root: /usr/lib/debug + the binary's
// directory.
func debugLinkRoot(t *testing.T) string {
	t.Helper()
	bin := cFixture(t, false)
	root := t.TempDir()
	_, debug := stripInto(t, bin, root)
	tool(t, "objcopy", "--add-gnu-debuglink="+debug, filepath.Join(root, "bin", "hot"))
	copyTo(t, debug, filepath.Join(root, "usr/lib/debug/bin/hot.debug"))
	return root
}

func TestDebugLinkInRoot(t *testing.T) {
	root := debugLinkRoot(t)
	checkChain(t, recordChroot(t, root), cChain, "dbg_hot_step")
}

// A chrooted process recorded with -p, already running: its mappings come
// from /proc/PID/maps, which shows them from the recorder's root
// (ROOT/bin/hot), not from perf's MMAP records (/bin/hot). The debug link
// is still searched beside /bin/hot inside the root. Before MAP frames
// were given the process's own paths, this found no names.
func TestDebugLinkInRootAttached(t *testing.T) {
	root := debugLinkRoot(t)
	unshare := testutils.LookPathOrSkip(t, "unshare")
	// unshare chroots and execs /bin/hot in place: the same pid.
	cmd := exec.Command(unshare, "--root", root, "/bin/hot", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	waitExe(t, pid, "/bin/hot")
	checkChain(t, recordPID(t, pid, 2), cChain, "dbg_hot_step")
}

// waitExe waits until process pid runs the executable the process sees at
// exe, inside its root.
func waitExe(t *testing.T, pid int, exe string) {
	t.Helper()
	link := fmt.Sprintf("/proc/%d/exe", pid)
	rootLink := fmt.Sprintf("/proc/%d/root", pid)
	for range 200 {
		target, err1 := os.Readlink(link)
		r, err2 := os.Readlink(rootLink)
		if err1 == nil && err2 == nil && target == filepath.Join(r, exe) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d does not run %s after 2 s", pid, exe)
}

// The process is reached while it still runs a launcher on the host
// root, which then changes root and execs the fixture, as bubblewrap and
// container runtimes do: the debug file is searched in the new root, not
// in the launcher's. Before the symbolizer reopened a process's view on
// exec, this found no names.
func TestDebugLinkInRootAfterExec(t *testing.T) {
	root := debugLinkRoot(t)
	unshare := testutils.LookPathOrSkip(t, "unshare")
	out := filepath.Join(t.TempDir(), "capture.syscap")
	// The shell maps its libraries on the host and sleeps long enough for
	// the recorder to open its view; then the same pid becomes unshare,
	// which chroots and execs /bin/hot.
	cmd := exec.Command(nsprofBin, "record", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network",
		"--symbol-cache", filepath.Join(t.TempDir(), "symbols"),
		"--", "/bin/sh", "-c", `sleep 0.5; exec "$0" --root "$1" /bin/hot 2`, unshare, root)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, b)
	}
	t.Logf("nsprof record:\n%s", b)
	testutils.StopFiller(t, string(b)) // it writes into the TempDir
	checkChain(t, out, cChain, "dbg_hot_step")
}

func TestBuildIDDirInRoot(t *testing.T) {
	bin := cFixture(t, false)
	root := t.TempDir()
	_, debug := stripInto(t, bin, root)
	id := buildID(t, bin)
	copyTo(t, debug, filepath.Join(root, "usr/lib/debug/.build-id", id[:2], id[2:]+".debug"))
	checkChain(t, recordChroot(t, root), cChain, "dbg_hot_step")
}

func TestMiniDebugInfo(t *testing.T) {
	bin := cFixture(t, false)
	root := t.TempDir()
	stripped, debug := stripInto(t, bin, root)
	// As Fedora builds it: the function symbols of the debug file, no
	// DWARF, xz-compressed into .gnu_debugdata of the stripped binary.
	dir := t.TempDir()
	var keep bytes.Buffer
	for _, line := range strings.Split(string(tool(t, "nm", "--format=posix", "--defined-only", bin)), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && (f[1] == "T" || f[1] == "t") {
			keep.WriteString(f[0] + "\n")
		}
	}
	keepFile := filepath.Join(dir, "keep")
	os.WriteFile(keepFile, keep.Bytes(), 0o644)
	mini := filepath.Join(dir, "mini")
	tool(t, "objcopy", "--strip-all", "--remove-section", ".comment", "--keep-symbols="+keepFile, "--strip-debug", debug, mini)
	tool(t, "xz", "-f", mini)
	tool(t, "objcopy", "--add-section", ".gnu_debugdata="+mini+".xz", stripped)
	checkChain(t, recordChroot(t, root), cChain, "dbg_hot_step")
}

func TestStrippedGo(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "bin", "hot")
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", out, testdata("gohot/main.go"))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	if hasSymtab(t, out) {
		t.Fatalf("%s has .symtab after -s", out)
	}
	capture := recordChroot(t, root)
	// runtime.goexit's return address follows no call (Go makes it up,
	// after a NOP): the recorder keeps it, as Go's own profiles do.
	checkChain(t, capture, []string{"main.goLeaf", "main.goMiddle", "main.goOuter", "main.main", "runtime.main", "runtime.goexit"}, "main.goStep")
	checkGoLines(t, capture)
	// goStep sets up no frame: the frame-pointer walk from it skips
	// goLeaf, and the recorder puts goLeaf back from the pclntab's
	// stack-pointer deltas, so goLeaf's total covers goStep's samples.
	self, total := map[string]int{}, map[string]int{}
	for _, f := range reportJSON(t, capture).Groups[0].Functions {
		self[f.Name] += f.Self
		total[f.Name] += f.Total
	}
	if want := self["main.goLeaf"] + self["main.goStep"]; total["main.goLeaf"]*10 < want*9 || self["main.goStep"] == 0 {
		t.Errorf("main.goLeaf total %d, want about its self %d + main.goStep's %d", total["main.goLeaf"], self["main.goLeaf"], self["main.goStep"])
	}
}

// checkGoLines checks the source lines of the gohot capture, which a
// binary built with -s -w has only in its Go line table: the pprof export
// puts goMiddle, a caller only, at the line of its call of goLeaf, and
// goLeaf's locations in gohot/main.go.
func checkGoLines(t *testing.T, capture string) {
	t.Helper()
	src, err := os.ReadFile(testdata("gohot/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	call := 0
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "return goLeaf(n) * 2") {
			call = i + 1
		}
	}
	p := exportPprof(t, capture)
	middle, leaf := map[int64]bool{}, 0
	for _, loc := range p.Location {
		for _, l := range loc.Line {
			switch l.Function.Name {
			case "main.goMiddle":
				middle[l.Line] = true
			case "main.goLeaf":
				if strings.HasSuffix(l.Function.Filename, "gohot/main.go") && l.Line > 0 {
					leaf++
				}
			}
		}
	}
	if len(middle) != 1 || !middle[int64(call)] {
		t.Errorf("main.goMiddle at lines %v, want only %d, its call of goLeaf", middle, call)
	}
	if leaf == 0 {
		t.Errorf("no location of main.goLeaf in gohot/main.go with a line")
	}
}

func TestCXXDemangled(t *testing.T) {
	bin := cFixture(t, true)
	root := t.TempDir()
	copyTo(t, bin, filepath.Join(root, "bin", "hot"))
	checkChain(t, recordChroot(t, root),
		[]string{"hot::Burner::leaf(long)", "hot::Burner::middle(long)", "hot::outer(hot::Burner&)", "main"},
		"hot::Burner::step(long)")
}

func TestDebuginfodOnly(t *testing.T) {
	bin := cFixture(t, false)
	root := t.TempDir()
	_, debug := stripInto(t, bin, root)
	served := t.TempDir()
	copyTo(t, debug, filepath.Join(served, "hot.debug"))
	url := startDebuginfod(t, served, buildID(t, bin))
	cache := t.TempDir()
	capture := recordChroot(t, root, "DEBUGINFOD_URLS="+url, "DEBUGINFOD_CACHE_PATH="+cache, "DEBUGINFOD_TIMEOUT=30")
	checkChain(t, capture, cChain, "dbg_hot_step")
	if _, err := os.Stat(filepath.Join(cache, buildID(t, bin), "debuginfo")); err != nil {
		t.Errorf("debug file not cached: %v", err)
	}
}

// startDebuginfod runs elfutils' debuginfod over dir until the test ends
// and waits until it serves the debug file of buildID.
func startDebuginfod(t *testing.T, dir, buildID string) string {
	t.Helper()
	bin := testutils.LookPathOrSkip(t, "debuginfod")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "-p", fmt.Sprint(port), "-F", dir, "-d", filepath.Join(t.TempDir(), "db.sqlite"), "-t", "1", "-g", "0")
	cmd.Stdout, cmd.Stderr = io.Discard, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	probe := url + "/buildid/" + buildID + "/debuginfo"
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err := http.Get(probe); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("debuginfod did not serve %s within 60 s", probe)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
