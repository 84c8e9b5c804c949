package container

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"nsprof/internal/procfmt"
	"nsprof/proc"
)

// Cgroup is the cgroup of a running podman container, found by
// [FindCgroup]: what sampling the container alone (perf record -a -G)
// opens its events on; or the processes of a running Flatpak app's
// sandbox, which has none of its own here.
type Cgroup struct {
	// Kind is KindPodman or KindFlatpak.
	Kind string
	// ID (full) and Name identify the container; both are the app id
	// of a Flatpak app.
	ID, Name string
	// Dir is the container's cgroup directory in the hierarchy perf
	// events are bound to: cgroup v1's perf_event when a hierarchy has
	// that controller, else cgroup v2's. It is "" for a container
	// without a cgroup of its own (a rootless one where cgroups are v1:
	// its processes stay in their user's).
	Dir string
	// PIDs are the container's processes when it was found, in order.
	PIDs []int
}

// FindCgroup returns the cgroup of the running podman container named
// label, or whose id starts with label; else the processes of the running
// Flatpak app whose id is label (every sandbox of it), without a cgroup.
// Every process's /proc/PID/cgroup is read; only those in a libpod cgroup
// are identified further (their container's name, from conmon's command
// line or podman's storage). An error says that none matches, or which
// ones do when several do.
func FindCgroup(label string) (Cgroup, error) {
	if label == "" {
		return Cgroup{}, errors.New("find container: no name or id given")
	}
	mounts, err := proc.ReadMountInfo(proc.Self)
	if err != nil {
		return Cgroup{}, fmt.Errorf("find container %s: %w", label, err)
	}
	mount, v1, ok := perfCgroupMount(mounts)
	if !ok {
		return Cgroup{}, fmt.Errorf("find container %s: no cgroup hierarchy is mounted for perf events", label)
	}
	pids, err := proc.PIDs()
	if err != nil {
		return Cgroup{}, fmt.Errorf("find container %s: %w", label, err)
	}
	found := map[string]*Cgroup{}
	names := map[string]string{} // by container id, once identified
	for _, pid := range pids {
		cgs, err := proc.ReadCgroup(pid)
		if err != nil {
			continue // gone, or a kernel thread's
		}
		rel, ok := perfCgroupPath(cgs, v1)
		if !ok {
			continue
		}
		dir, id, ok := containerCgroup(rel)
		if !ok {
			continue
		}
		name, known := names[id]
		if !known && !strings.HasPrefix(id, label) {
			if idn, err := Identify(pid); err == nil && idn.ID == id {
				name = idn.Name
			}
			names[id] = name
		}
		if !strings.HasPrefix(id, label) && name != label {
			continue
		}
		c := found[id]
		if c == nil {
			c = &Cgroup{Kind: KindPodman, ID: id, Name: name, Dir: filepath.Join(mount, dir)}
			found[id] = c
		}
		c.PIDs = append(c.PIDs, pid)
	}
	if len(found) == 0 {
		found = findUngrouped(label, pids)
	}
	switch len(found) {
	case 0:
		return Cgroup{}, fmt.Errorf("find container %s: no running podman container has that name or an id starting with it, nor is it a running Flatpak app's id", label)
	case 1:
		for _, c := range found {
			if c.Name == "" {
				if idn, err := Identify(c.PIDs[0]); err == nil {
					c.Name = idn.Name
				}
			}
			return *c, nil
		}
	}
	var which []string
	for _, c := range found {
		which = append(which, shortID(c.ID))
	}
	slices.Sort(which)
	return Cgroup{}, fmt.Errorf("find container %s: %d containers have ids starting with it (%s): give more of the id", label, len(found), strings.Join(which, ", "))
}

// findUngrouped finds the processes of the podman containers named label,
// or whose ids start with it, among pids, by identifying those in another
// mount namespace than this process's: a container without a cgroup of
// its own (rootless, where cgroups are v1) is told by nothing else. So are
// the processes of the Flatpak app whose id is label.
func findUngrouped(label string, pids []int) map[string]*Cgroup {
	self, err := proc.NamespaceID(proc.Self, "mnt")
	if err != nil {
		return nil
	}
	found := map[string]*Cgroup{}
	for _, pid := range pids {
		if mnt, err := proc.NamespaceID(pid, "mnt"); err != nil || mnt == self {
			continue
		}
		idn, err := Identify(pid)
		if err != nil {
			continue
		}
		switch {
		case idn.Kind == KindPodman && (strings.HasPrefix(idn.ID, label) || idn.Name == label):
		case idn.Kind == KindFlatpak && idn.AppID == label:
			idn.ID, idn.Name = idn.AppID, idn.AppID
		default:
			continue
		}
		c := found[idn.ID]
		if c == nil {
			c = &Cgroup{Kind: idn.Kind, ID: idn.ID, Name: idn.Name}
			found[idn.ID] = c
		}
		c.PIDs = append(c.PIDs, pid)
	}
	return found
}

// perfCgroupMount returns where the hierarchy perf events are bound to is
// mounted among mounts: a cgroup v1 hierarchy with the perf_event
// controller (v1 set), else cgroup v2.
func perfCgroupMount(mounts []procfmt.Mount) (dir string, v1, ok bool) {
	for _, m := range mounts {
		if m.FSType == "cgroup" && m.SuperOptions.Has("perf_event") {
			return m.MountPoint, true, true
		}
	}
	for _, m := range mounts {
		if m.FSType == "cgroup2" {
			return m.MountPoint, false, true
		}
	}
	return "", false, false
}

// perfCgroupPath returns a process's cgroup, among the lines of its
// /proc/PID/cgroup, in the hierarchy perf events are bound to: v1's
// perf_event (v1 set), else v2's.
func perfCgroupPath(cgs []proc.Cgroup, v1 bool) (string, bool) {
	for _, c := range cgs {
		if v1 && slices.Contains(c.Controllers, "perf_event") || !v1 && c.HierarchyID == 0 {
			return c.Path, true
		}
	}
	return "", false
}

// containerCgroup returns the cgroup of the podman container that cgroup
// rel is in (rel itself or the one above it named libpod-ID, or
// libpod-ID.scope) and the container's id.
func containerCgroup(rel string) (dir, id string, ok bool) {
	elems := strings.Split(rel, "/")
	for i, e := range elems {
		if id, ok := libpodIDFromCgroup(e); ok {
			return path.Join(elems[:i+1]...), id, true
		}
	}
	return "", "", false
}
