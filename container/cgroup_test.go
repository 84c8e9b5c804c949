package container

import (
	"testing"

	"nsprof/internal/procfmt"
	"nsprof/proc"
)

// The container's cgroup is the libpod-ID (or libpod-ID.scope) element
// of a process's cgroup and what is above it, on the hierarchy perf events
// are bound to: v1's perf_event when one has it, else v2's.
func TestContainerCgroup(t *testing.T) {
	id := "0208c45158d4cdb79aa9952e41f8d93bfcd8303160fd8a056805e9b85191d678"
	for _, tc := range []struct {
		rel, dir string
		ok       bool
	}{
		{"/libpod_parent/libpod-" + id, "libpod_parent/libpod-" + id, true},
		{"/machine.slice/libpod-" + id + ".scope/container", "machine.slice/libpod-" + id + ".scope", true},
		{"/machine.slice/libpod-conmon-" + id + ".scope", "", false},
		{"/user.slice/user-1000.slice", "", false},
		{"/", "", false},
	} {
		dir, got, ok := containerCgroup(tc.rel)
		if ok != tc.ok || dir != tc.dir || ok && got != id {
			t.Errorf("containerCgroup(%q) = %q, %q, %v; want %q, %v", tc.rel, dir, got, ok, tc.dir, tc.ok)
		}
	}
	opts := func(s ...string) procfmt.MountOptions {
		var o procfmt.MountOptions
		for _, k := range s {
			o = append(o, procfmt.MountOption{Key: k})
		}
		return o
	}
	v2 := procfmt.Mount{FSType: "cgroup2", MountPoint: "/sys/fs/cgroup/unified"}
	cpu := procfmt.Mount{FSType: "cgroup", MountPoint: "/sys/fs/cgroup/cpu", SuperOptions: opts("rw", "cpu")}
	perf := procfmt.Mount{FSType: "cgroup", MountPoint: "/sys/fs/cgroup/perf_event", SuperOptions: opts("rw", "perf_event")}
	if dir, v1, ok := perfCgroupMount([]procfmt.Mount{cpu, v2}); !ok || v1 || dir != v2.MountPoint {
		t.Errorf("hybrid without perf_event: %q v1=%v %v", dir, v1, ok)
	}
	if dir, v1, ok := perfCgroupMount([]procfmt.Mount{v2, perf}); !ok || !v1 || dir != perf.MountPoint {
		t.Errorf("v1 perf_event: %q v1=%v %v", dir, v1, ok)
	}
	if _, _, ok := perfCgroupMount([]procfmt.Mount{cpu}); ok {
		t.Error("no hierarchy for perf events found one")
	}
	cgs := []proc.Cgroup{{HierarchyID: 3, Controllers: []string{"perf_event"}, Path: "/a"}, {HierarchyID: 0, Path: "/b"}}
	if p, ok := perfCgroupPath(cgs, true); !ok || p != "/a" {
		t.Errorf("v1: %q %v", p, ok)
	}
	if p, ok := perfCgroupPath(cgs, false); !ok || p != "/b" {
		t.Errorf("v2: %q %v", p, ok)
	}
}
