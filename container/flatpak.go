package container

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// maxFlatpakInfo bounds /.flatpak-info; real files are about 1 KiB.
const maxFlatpakInfo = 1 << 20

// flatpakInfo holds the fields of /.flatpak-info that nsprof uses.
type flatpakInfo struct {
	AppID       string // [Application] name (or [Runtime] name for runtime-only sandboxes)
	Runtime     string // [Application] runtime
	AppPath     string // [Instance] app-path: host directory mounted at /app
	RuntimePath string // [Instance] runtime-path: host directory mounted at /usr
	InstanceID  string // [Instance] instance-id
}

// parseFlatpakInfo parses the GKeyFile format of /.flatpak-info. A file
// without an [Application] or [Runtime] name is an error.
func parseFlatpakInfo(r io.Reader) (flatpakInfo, error) {
	data, err := readBounded(r, maxFlatpakInfo)
	if err != nil {
		return flatpakInfo{}, fmt.Errorf(".flatpak-info: %w", err)
	}
	var fi flatpakInfo
	var section, runtimeName string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, maxFlatpakInfo)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return flatpakInfo{}, fmt.Errorf(".flatpak-info line %d: bad group header %q", n, line)
			}
			section = line[1 : len(line)-1]
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return flatpakInfo{}, fmt.Errorf(".flatpak-info line %d: want key=value, got %q", n, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch section + "/" + k {
		case "Application/name":
			fi.AppID = v
		case "Application/runtime":
			fi.Runtime = v
		case "Runtime/name":
			runtimeName = v
		case "Instance/app-path":
			fi.AppPath = v
		case "Instance/runtime-path":
			fi.RuntimePath = v
		case "Instance/instance-id":
			fi.InstanceID = v
		}
	}
	if err := sc.Err(); err != nil {
		return flatpakInfo{}, fmt.Errorf(".flatpak-info: %w", err)
	}
	if fi.AppID == "" {
		fi.AppID = runtimeName
	}
	if fi.AppID == "" {
		return flatpakInfo{}, fmt.Errorf(".flatpak-info: no [Application] or [Runtime] name")
	}
	return fi, nil
}

// FlatpakDebugDirs returns, for a process in a Flatpak sandbox, the host
// directories of the debug extensions of its app and runtime, keyed by
// where Flatpak mounts them when the app runs with --devel:
// "/app/lib/debug" (the app's <app-id>.Debug extension) and
// "/usr/lib/debug" (the runtime's <runtime>.Debug extension). They are
// found next to the app-path and runtime-path of /.flatpak-info in the
// Flatpak installation: <base>/<app|runtime>/<name>/<arch>/<branch>/<commit>/files
// has its debug extension at <base>/runtime/<name>.Debug/<arch>/<branch>/active/files.
// Directories that do not exist are left out; nil outside Flatpak.
func (p *Process) FlatpakDebugDirs() map[string]string {
	fi := p.snap.flatpak
	if fi == nil {
		return nil
	}
	out := make(map[string]string)
	for _, d := range []struct{ mount, path string }{{"/app/lib/debug", fi.AppPath}, {"/usr/lib/debug", fi.RuntimePath}} {
		if dir, ok := debugExtension(d.path); ok {
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				out[d.mount] = dir
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// debugExtension returns the debug extension directory of a deployed
// Flatpak app or runtime directory.
func debugExtension(deployed string) (string, bool) {
	c := strings.Split(path.Clean(deployed), "/")
	// ..., base..., kind, name, arch, branch, commit, "files"
	n := len(c)
	if n < 7 || c[n-1] != "files" || (c[n-6] != "app" && c[n-6] != "runtime") || c[n-5] == "" {
		return "", false
	}
	base := strings.Join(c[:n-6], "/")
	return path.Join("/", base, "runtime", c[n-5]+".Debug", c[n-4], c[n-3], "active", "files"), true
}
