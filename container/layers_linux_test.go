//go:build linux

package container

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"nsprof/internal/testutils"
)

func TestOpenInLayers(t *testing.T) {
	dir := t.TempDir()
	up, mid, low := filepath.Join(dir, "up"), filepath.Join(dir, "mid"), filepath.Join(dir, "low")
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(low, "usr/lib/a.so"), "low-a")
	write(filepath.Join(low, "usr/lib/b.so"), "low-b")
	write(filepath.Join(low, "usr/lib/c.so"), "low-c")
	write(filepath.Join(low, "opt/old/x"), "low-x")
	write(filepath.Join(low, "gone/y"), "low-y")
	write(filepath.Join(mid, "usr/lib/a.so"), "mid-a")
	write(filepath.Join(mid, "usr/lib/.wh.b.so"), "") // .wh. whiteout
	write(filepath.Join(mid, "opt/old/.wh..wh..opq"), "")
	write(filepath.Join(mid, "opt/old/z"), "mid-z")
	write(filepath.Join(mid, ".wh.gone"), "") // whites out a directory
	write(filepath.Join(up, "etc/passwd"), "up-passwd")
	if err := syscall.Mknod(filepath.Join(up, "usr/lib/c.so"), syscall.S_IFCHR, 0); err != nil {
		os.MkdirAll(filepath.Join(up, "usr/lib"), 0o755)
		if err := syscall.Mknod(filepath.Join(up, "usr/lib/c.so"), syscall.S_IFCHR, 0); err != nil {
			testutils.RequireCI(t, "mknod whiteout (needs CAP_MKNOD): %v", err)
		}
	}
	os.Symlink("/etc/passwd", filepath.Join(low, "usr/lib/escape.so"))
	os.Symlink("../../../../../../../../etc/hostname", filepath.Join(low, "usr/lib/escape2.so"))
	layers := []string{up, mid, low}
	for _, tc := range []struct{ path, want string }{
		{"/usr/lib/a.so", "mid-a"},
		{"/usr/lib/b.so", ""},   // .wh. file in mid
		{"/usr/lib/c.so", ""},   // 0/0 device in up
		{"/opt/old/x", ""},      // opaque dir in mid
		{"/opt/old/z", "mid-z"}, // the opaque dir's own file
		{"/gone/y", ""},         // whited-out directory
		{"/etc/passwd", "up-passwd"},
		{"/usr/lib/escape.so", "up-passwd"}, // absolute symlink resolved inside low: low has no etc/passwd
		{"/usr/lib/escape2.so", ""},
		{"/../../etc/passwd", "up-passwd"},
	} {
		f, err := openInLayers(layers, tc.path)
		if tc.want == "" {
			if err == nil {
				data, _ := io.ReadAll(f)
				f.Close()
				t.Errorf("%s: opened %s (%q), want an error", tc.path, f.Name(), data)
			}
			continue
		}
		if err != nil {
			if tc.path == "/usr/lib/escape.so" {
				// The link resolves inside the low layer only, where
				// /etc/passwd does not exist: an error is right too.
				continue
			}
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		data, _ := io.ReadAll(f)
		f.Close()
		if string(data) != tc.want {
			t.Errorf("%s = %q, want %q", tc.path, data, tc.want)
		}
	}
}
