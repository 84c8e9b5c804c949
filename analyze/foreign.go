package analyze

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"nsprof/capture"
	"nsprof/internal/procfmt"
)

// Captures of other recorders (Sysprof's sysprof-cli) have no nsprof
// process file to say what each process runs in, but they embed each
// process's /proc/PID/mountinfo as read from the host. The functions here
// label processes from those mount tables, as container.Identify does on
// the live system from the same files and more:
//
//   - podman bind-mounts /etc/hostname, /etc/hosts and /run/.containerenv
//     from <runroot>/overlay-containers/<id>/userdata/, which names the
//     container (its name comes from conmon's "-n NAME" when the capture
//     holds conmon's command line). A rootless container's runtime mounts
//     its /dev (and /dev/shm) tmpfs inside a user namespace, so the kernel
//     shows its owner, uid=N with N the user's id; root's has no uid=.
//   - Flatpak bind-mounts the app's deployment,
//     <installation>/app/<APP_ID>/<arch>/<branch>/<commit>/files, at /app.
//   - Any other process whose root mount is not the host's is in another
//     mount namespace (or a chroot, whose table has no "/" at all). The
//     host's root mount is the recorder's own (sysprof-cli's), else the
//     one most processes share: /proc/1 may be missing or in a sandbox.

// isMountInfoFile reports whether p is /proc/PID/mountinfo, as
// sysprof-cli embeds it for each process.
func isMountInfoFile(p string) bool {
	_, ok := mountInfoPID(p)
	return ok
}

// mountInfoPID returns the PID of a path /proc/PID/mountinfo.
func mountInfoPID(p string) (int32, bool) {
	s, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, "/mountinfo"); !ok {
		return 0, false
	}
	pid, err := strconv.ParseInt(s, 10, 32)
	if err != nil || pid <= 0 || s[0] == '+' {
		return 0, false
	}
	return int32(pid), true
}

// labelForeign gives the processes of a capture without nsprof's process
// file the containers [foreignContainers] finds in its mount tables.
func (b *builder) labelForeign() {
	if b.files.has(capture.ProcessFile) {
		return
	}
	cmdlines := make(map[int32]string, len(b.p.procIndex))
	for pid, pr := range b.p.procIndex {
		cmdlines[pid] = pr.Cmdline
	}
	labels, warn := foreignContainers(&b.files.fs, cmdlines)
	for pid, c := range labels {
		if pr := b.p.procIndex[pid]; pr != nil && pr.Container == nil {
			pr.Container = c
		}
	}
	if warn != "" {
		b.p.Warnings = append(b.p.Warnings, warn)
	}
}

// labelForeign is [builder.labelForeign] for the timeline's processes,
// so --processes shows the labels the other views group and filter by.
func (b *timelineBuilder) labelForeign() {
	if b.files.Has(capture.ProcessFile) || b.files.Has(capture.ProcessFile+".gz") {
		return
	}
	cmdlines := make(map[int32]string, len(b.procs))
	for pid, p := range b.procs {
		cmdlines[pid] = p.Cmdline
	}
	labels, warn := foreignContainers(&b.files, cmdlines)
	for pid, c := range labels {
		if p := b.procs[pid]; p != nil && p.Container == nil {
			p.Container = c
		}
	}
	if warn != "" {
		b.t.Warnings = append(b.t.Warnings, warn)
	}
}

// foreignContainers returns the container of each process whose
// /proc/PID/mountinfo fs holds, by pid. cmdlines are the command lines of
// the capture's processes, by pid: they name the recorder and podman's
// conmon processes. A mount table that does not parse leaves its process
// unlabelled and is named in the warning returned, with the number of
// others.
func foreignContainers(fs *capture.Files, cmdlines map[int32]string) (map[int32]*Container, string) {
	tables := make(map[int32][]procfmt.Mount)
	var firstErr error
	bad := 0
	for _, f := range fs.List() {
		pid, ok := mountInfoPID(f.Path)
		if !ok {
			continue
		}
		data, _, err := fs.Read(f.Path)
		var mounts []procfmt.Mount
		if err == nil {
			mounts, err = procfmt.ParseMountInfo(bytes.NewReader(data))
			if se, ok := errors.AsType[*procfmt.SyntaxError](err); ok {
				se.File = f.Path
			}
		}
		if err != nil {
			if bad++; firstErr == nil {
				firstErr = err
			}
			continue
		}
		tables[pid] = mounts
	}
	var warn string
	if firstErr != nil {
		warn = fmt.Sprintf("container labels: %v: its process's container is unknown", firstErr)
		if bad > 1 {
			warn = fmt.Sprintf("container labels: %v, and %d more mount tables that do not parse: their processes' containers are unknown", firstErr, bad-1)
		}
	}
	if len(tables) == 0 {
		return nil, warn
	}
	host, hostOK := hostRoot(tables, cmdlines)
	names := conmonNames(cmdlines)
	labels := make(map[int32]*Container, len(tables))
	for pid, mounts := range tables {
		c := classifyMounts(mounts, host, hostOK)
		if c.Kind == "podman" {
			c.Name = names[c.ID]
		}
		labels[pid] = c
	}
	return labels, warn
}

// rootKey identifies a root mount: each mount namespace has mounts of its
// own, with their own ids.
type rootKey struct {
	id   int
	dev  procfmt.Dev
	root string
}

// rootMount returns the mount at "/" that is visible (the last one
// mounted there) and whether there is one: a chroot's table shows only
// the mounts below its root.
func rootMount(mounts []procfmt.Mount) (*procfmt.Mount, bool) {
	for i := len(mounts) - 1; i >= 0; i-- {
		if mounts[i].MountPoint == "/" {
			return &mounts[i], true
		}
	}
	return nil, false
}

func keyOf(m *procfmt.Mount) rootKey { return rootKey{m.ID, m.Dev, m.Root} }

// hostRoot returns the host's root mount: that of the recorder (a
// sysprof-cli process), else the one most processes share (the lowest pid
// breaks a tie).
func hostRoot(tables map[int32][]procfmt.Mount, cmdlines map[int32]string) (rootKey, bool) {
	for pid, cmd := range cmdlines {
		if commOf(cmd) != "sysprof-cli" {
			continue
		}
		if m, ok := rootMount(tables[pid]); ok {
			return keyOf(m), true
		}
	}
	count := make(map[rootKey]int)
	first := make(map[rootKey]int32)
	for pid, mounts := range tables {
		if m, ok := rootMount(mounts); ok {
			k := keyOf(m)
			count[k]++
			if p, ok := first[k]; !ok || pid < p {
				first[k] = pid
			}
		}
	}
	var best rootKey
	n := 0
	for k, c := range count {
		if c > n || c == n && first[k] < first[best] {
			best, n = k, c
		}
	}
	return best, n > 0
}

// conmonNames returns podman container names by full id, from the command
// lines of conmon processes ("-c ID ... -n NAME").
func conmonNames(cmdlines map[int32]string) map[string]string {
	names := make(map[string]string)
	for _, cmd := range cmdlines {
		if commOf(cmd) != "conmon" {
			continue
		}
		var id, name string
		args := strings.Fields(cmd)
		for i := 1; i < len(args); i++ {
			a := args[i]
			var val *string
			switch {
			case a == "-c" || a == "--cid":
				val = &id
			case a == "-n" || a == "--name":
				val = &name
			case strings.HasPrefix(a, "--cid="):
				id = a[len("--cid="):]
			case strings.HasPrefix(a, "--name="):
				name = a[len("--name="):]
			}
			if val != nil && i+1 < len(args) {
				i++
				*val = args[i]
			}
		}
		if isContainerID(id) && name != "" {
			names[id] = name
		}
	}
	return names
}

// classifyMounts labels a process from its mount table; host is the
// host's root mount, when hostOK.
func classifyMounts(mounts []procfmt.Mount, host rootKey, hostOK bool) *Container {
	root, haveRoot := rootMount(mounts)
	if id, ok := podmanID(mounts); ok {
		c := &Container{Kind: "podman", ID: id, Rootless: rootlessRuntime(mounts)}
		if haveRoot {
			c.Root = overlayUpper(root)
		}
		return c
	}
	if app, dir, ok := flatpakApp(mounts); ok {
		return &Container{Kind: "flatpak", AppID: app, Root: dir}
	}
	if haveRoot && hostOK && keyOf(root) == host {
		return &Container{Kind: "host"}
	}
	c := &Container{Kind: "namespace"}
	if haveRoot {
		if c.Root = overlayUpper(root); c.Root == "" && root.FSType != "tmpfs" && root.Root != "/" {
			c.Root = root.Root // a bind-mounted or pivoted directory
		}
	}
	return c
}

// podmanID returns the id of the podman container whose userdata
// directory a mount of the table comes from.
func podmanID(mounts []procfmt.Mount) (string, bool) {
	const dir = "overlay-containers/"
	for _, m := range mounts {
		_, rest, ok := strings.Cut(m.Root, dir)
		if !ok || len(rest) < 64+len("/userdata/") {
			continue
		}
		if id := rest[:64]; isContainerID(id) && strings.HasPrefix(rest[64:], "/userdata/") {
			return id, true
		}
	}
	return "", false
}

// isContainerID reports whether s is a full container id: 64 lowercase
// hex digits.
func isContainerID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// rootlessRuntime reports whether the tmpfs at /dev or /dev/shm belongs
// to another user than root: the runtime mounted it inside a user
// namespace.
func rootlessRuntime(mounts []procfmt.Mount) bool {
	for _, m := range mounts {
		if m.FSType != "tmpfs" || (m.MountPoint != "/dev" && m.MountPoint != "/dev/shm") {
			continue
		}
		if uid, ok := m.SuperOptions.Get("uid"); ok && uid != "0" {
			return true
		}
	}
	return false
}

// overlayUpper returns the upper directory of an overlay mount, "" for
// other mounts.
func overlayUpper(m *procfmt.Mount) string {
	if m.FSType != "overlay" {
		return ""
	}
	u, _ := m.SuperOptions.Get("upperdir")
	return u
}

// flatpakApp returns the application id and directory of a Flatpak
// sandbox: the table has a /.flatpak-info and, at /app, a deployment
// .../app/APP_ID/ARCH/BRANCH/COMMIT/files (an id has dot-separated parts).
func flatpakApp(mounts []procfmt.Mount) (id, dir string, ok bool) {
	info := false
	for _, m := range mounts {
		switch m.MountPoint {
		case "/.flatpak-info":
			info = true
		case "/app":
			dir = m.Root
		}
	}
	if !info || dir == "" {
		return "", "", false
	}
	parts := strings.Split(path.Clean(dir), "/")
	for i := len(parts) - 4; i >= 0; i-- {
		id := parts[i+1]
		if parts[i] == "app" && strings.Contains(id, ".") && !strings.HasPrefix(id, ".") {
			return id, dir, true
		}
	}
	return "", "", false
}
