package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outputCommands are the commands that write a file with -o, each as the
// arguments that write to out from the test capture in.
var outputCommands = []struct {
	name string
	args func(in, out string) []string
}{
	{"record", func(in, out string) []string {
		return []string{"record", "--no-perf", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out, "--", "true"}
	}},
	{"dump", func(in, out string) []string { return []string{"dump", "-o", out, in} }},
	{"dump -x", func(in, out string) []string { return []string{"dump", "-x", "/etc/hello", "-o", out, in} }},
	{"export", func(in, out string) []string { return []string{"export", "--format", "folded", "-o", out, in} }},
	{"cat", func(in, out string) []string { return []string{"cat", in, "-o", out} }},
}

// force adds -f to a command line, after the command's name.
func force(args []string) []string {
	return append([]string{args[0], "-f"}, args[1:]...)
}

// TestOutputsRefuseExistingAndLinks runs every command that writes a file
// at a name that exists: a file (refused without -f), a dangling symbolic
// link (refused without -f: its target is not created), and, in a sticky
// world-writable directory like /tmp, a symbolic link planted by another
// user and a hard link (with -f: the link is not followed, the file it
// names keeps its contents).
func TestOutputsRefuseExistingAndLinks(t *testing.T) {
	dir := t.TempDir()
	in := writeTestCapture(t, dir, "in.syscap")
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "tmp")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	unchanged := func(t *testing.T, path, want string) {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want it unchanged, %q", path, b, err, want)
		}
	}
	for i, c := range outputCommands {
		t.Run(c.name, func(t *testing.T) {
			base := filepath.Join(shared, itoa(i))

			existing := base + ".existing"
			os.WriteFile(existing, []byte("old"), 0o644)
			_, stderr, status := nsprof(t, nil, c.args(in, existing)...)
			if status != 1 || !strings.Contains(stderr, existing+": file exists (use -f to overwrite)") {
				t.Errorf("existing file without -f: status %d, stderr %q", status, stderr)
			}
			unchanged(t, existing, "old")

			dangling := base + ".dangling"
			nowhere := base + ".nowhere"
			os.Symlink(nowhere, dangling)
			_, stderr, status = nsprof(t, nil, c.args(in, dangling)...)
			if status != 1 || !strings.Contains(stderr, "file exists") {
				t.Errorf("dangling link without -f: status %d, stderr %q", status, stderr)
			}
			if _, err := os.Lstat(nowhere); err == nil {
				t.Errorf("the dangling link's target %s was created", nowhere)
			}

			link := base + ".link"
			os.Symlink(victim, link)
			if os.Geteuid() == 0 {
				os.Lchown(link, 65534, 65534) // planted by nobody
			}
			_, stderr, status = nsprof(t, nil, force(c.args(in, link))...)
			if status != 1 || !strings.Contains(stderr, "symbolic link: not following it") {
				t.Errorf("link with -f: status %d, stderr %q", status, stderr)
			}
			unchanged(t, victim, "victim\n")
			if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the link %s was replaced: %v", link, err)
			}

			hard := base + ".hard"
			if err := os.Link(victim, hard); err != nil {
				t.Fatal(err)
			}
			_, stderr, status = nsprof(t, nil, force(c.args(in, hard))...)
			if status != 0 {
				t.Errorf("hard link with -f: status %d, stderr %q", status, stderr)
			}
			unchanged(t, victim, "victim\n")
			if b, _ := os.ReadFile(hard); len(b) == 0 || string(b) == "victim\n" {
				t.Errorf("%s = %q: not written", hard, b)
			}

			_, stderr, status = nsprof(t, nil, force(c.args(in, existing))...)
			if b, _ := os.ReadFile(existing); status != 0 || string(b) == "old" {
				t.Errorf("existing file with -f: status %d, stderr %q, contents %q", status, stderr, b)
			}
		})
	}
	ents, _ := os.ReadDir(shared)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".nsprof-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// TestExportRefusesOutputFirst: an output that exists is refused before
// the capture is read (a missing capture is not even looked at), and a
// capture that cannot be read leaves no output file behind.
func TestExportRefusesOutputFirst(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.pb.gz")
	if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.syscap")
	_, stderr, status := nsprof(t, nil, "export", missing, "--format", "pprof", "-o", existing)
	if status != 1 || !strings.Contains(stderr, existing+": file exists") || strings.Contains(stderr, "missing.syscap") {
		t.Errorf("existing output, missing capture: status %d, stderr %q; want the output refused first", status, stderr)
	}
	out := filepath.Join(dir, "new.pb.gz")
	_, stderr, status = nsprof(t, nil, "export", missing, "--format", "pprof", "-o", out)
	if status != 1 || !strings.Contains(stderr, "missing.syscap") {
		t.Errorf("missing capture: status %d, stderr %q", status, stderr)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("%s left behind by an export that failed", out)
	}
}
