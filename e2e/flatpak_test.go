//go:build linux

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"nsprof/internal/testutils/containers"
)

// A Flatpak app shipped stripped, with its debug file only in the app's
// .Debug extension installed next to it on the host (Flatpak mounts it at
// /app/lib/debug only with --devel, so the sandbox does not see it): the
// names come from that extension.
func TestFlatpakDebugExtension(t *testing.T) {
	bins := containers.Build(t)
	base := t.TempDir()
	stripped := filepath.Join(t.TempDir(), "hot")
	debug := filepath.Join(t.TempDir(), "hot.debug")
	tool(t, "objcopy", "--only-keep-debug", bins.Hot, debug)
	tool(t, "objcopy", "--strip-all", bins.Hot, stripped)
	if hasSymtab(t, stripped) {
		t.Fatal("stripped fixture has .symtab")
	}
	id := buildID(t, bins.Hot)
	ext := filepath.Join(base, "runtime", containers.FlatpakAppID+".Debug", "x86_64", "master", "active", "files")
	copyTo(t, debug, filepath.Join(ext, ".build-id", id[:2], id[2:]+".debug"))

	pid, _ := containers.StartBwrapFlatpakInstalled(t, base, stripped)
	capture := recordPID(t, pid, 3)
	r := reportJSON(t, capture, "--by", "process")
	checkNames(t, r, pid, 0, func(l string) bool { return l == "flatpak:"+containers.FlatpakAppID })
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			if strings.HasPrefix(f.Name, "hot+0x") || f.Name == "[unknown in hot]" {
				t.Errorf("unnamed frame %s in the stripped app", f.Name)
				break
			}
		}
	}
}
