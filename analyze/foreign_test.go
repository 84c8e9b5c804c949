package analyze

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/procfmt"
)

// Mount tables as sysprof-cli embeds them, read from the host (trimmed
// from the ones of this project's container fixtures and a Debian host).
const (
	ctrID    = "e5045462346b46d50311ef2a71b29d83b399f07b386f6af8d9a6212fb3ac9f53"
	ctrIDRL  = "590a4f9cfdb4c0acb1e5b1a76f5a3babc1268fc305365602692a736d42aed180"
	ctrUpper = "/var/lib/containers/storage/overlay/edaa1c9bf998/diff"

	hostMounts = `22 27 0:21 / /proc rw,relatime - proc proc rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334432k,nr_inodes=3083608,mode=755
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683656k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
28 27 0:25 / /run rw,nosuid,nodev - tmpfs tmpfs rw,mode=755
`
	// podman run, rootful, default storage: the userdata binds come from
	// the runroot, /run/containers/storage, on the /run tmpfs.
	podmanRootfulMounts = `75 49 0:40 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/containers/storage/overlay/l/36MQQXUDVESK5UHJR6FKWZYIM2,upperdir=` + ctrUpper + `,workdir=/var/lib/containers/storage/overlay/edaa1c9bf998/work
76 75 0:43 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
77 75 0:44 / /dev rw,nosuid,noexec - tmpfs tmpfs rw,size=65536k,mode=755
79 77 0:46 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,gid=5,mode=620,ptmxmode=666
81 75 0:25 /containers/storage/overlay-containers/` + ctrID + `/userdata/hosts /etc/hosts rw,relatime - tmpfs tmpfs rw,mode=755
82 77 0:39 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=64000k
83 75 0:25 /containers/storage/overlay-containers/` + ctrID + `/userdata/.containerenv /run/.containerenv rw,relatime - tmpfs tmpfs rw,mode=755
84 75 0:25 /containers/storage/overlay-containers/` + ctrID + `/userdata/hostname /etc/hostname rw,relatime - tmpfs tmpfs rw,mode=755
55 76 0:44 /null /proc/keys rw,nosuid,noexec - tmpfs tmpfs rw,size=65536k,mode=755
`
	// podman run as uid 1001, native overlay, runroot in a private
	// XDG_RUNTIME_DIR on ext4: the container's tmpfs are the user's.
	podmanRootless = `97 71 0:40 / / rw,relatime - overlay overlay rw,lowerdir=/home/u/.local/share/containers/storage/overlay/l/HW5EYNFLKTSAVBZE44LKH6CVLH,upperdir=/home/u/.local/share/containers/storage/overlay/c0/diff,workdir=/home/u/.local/share/containers/storage/overlay/c0/work,redirect_dir=nofollow,uuid=on,userxattr
98 97 0:43 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
99 97 0:44 / /dev rw,nosuid,noexec - tmpfs tmpfs rw,size=65536k,mode=755,uid=1001,gid=1001
103 97 254:0 /tmp/nsprof-xdg-1101459951/containers/overlay-containers/` + ctrIDRL + `/userdata/hosts /etc/hosts rw,relatime - ext4 /dev/vda rw,discard
104 99 0:39 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=64000k,uid=1001,gid=1001
106 97 254:0 /tmp/nsprof-xdg-1101459951/containers/overlay-containers/` + ctrIDRL + `/userdata/hostname /etc/hostname rw,relatime - ext4 /dev/vda rw,discard
117 99 0:6 /null /dev/null rw,relatime - devtmpfs devtmpfs rw,size=12334432k,nr_inodes=3083608,mode=755
`
	// The same on fuse-overlayfs, whose mount shows no layers.
	podmanRootlessFuse = `95 69 0:40 / / rw,nodev,noatime - fuse.fuse-overlayfs fuse-overlayfs rw,user_id=0,group_id=0,default_permissions,allow_other
97 95 0:43 / /dev rw,nosuid,noexec - tmpfs tmpfs rw,size=65536k,mode=755,uid=1001,gid=1001
101 95 254:0 /tmp/nsprof-xdg-199979832/containers/overlay-containers/` + ctrIDRL + `/userdata/hostname /etc/hostname rw,relatime - ext4 /dev/vda rw,discard
`
	flatpakMounts = `67 43 0:40 /newroot / rw,nosuid,nodev,relatime - tmpfs tmpfs rw
68 67 254:0 /var/lib/flatpak/runtime/org.nsprof.Platform/x86_64/1/feed/files /usr ro,nosuid,nodev,relatime - ext4 /dev/vda rw
69 67 254:0 /var/lib/flatpak/app/org.nsprof.Hot/x86_64/master/c0ffee/files /app ro,nosuid,nodev,relatime - ext4 /dev/vda rw
70 67 0:45 /.flatpak-info-XYZ /.flatpak-info ro,nosuid,nodev,relatime - tmpfs tmpfs rw
71 67 0:41 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
`
	// bwrap binding a directory called app at /app, no /.flatpak-info.
	bwrapApp = `67 43 0:40 /newroot / rw,nosuid,nodev,relatime - tmpfs tmpfs rw
69 67 254:0 /srv/app/org.x.Y/a/b/c /app ro,nosuid,nodev,relatime - ext4 /dev/vda rw
`
	pivotRoot = `65 43 254:0 /srv/rootfs / rw,relatime - ext4 /dev/vda rw,discard
45 65 0:39 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
`
	// unshare -m: the host's root file system, mounts of a namespace of
	// its own.
	unshareMount = `301 300 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
302 301 0:21 / /proc rw,relatime - proc proc rw
`
	// A chroot shows only the mounts below its root.
	chroot = `64 43 0:38 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
`
)

func parseMounts(t *testing.T, text string) []procfmt.Mount {
	t.Helper()
	m, err := procfmt.ParseMountInfo(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClassifyMounts(t *testing.T) {
	host, _ := rootMount(parseMounts(t, hostMounts))
	for _, tc := range []struct {
		name, mounts string
		want         Container
		label        string
	}{
		{"host", hostMounts, Container{Kind: "host"}, "host"},
		{"podman rootful", podmanRootfulMounts, Container{Kind: "podman", ID: ctrID, Root: ctrUpper}, "podman:e5045462346b"},
		{"podman rootless", podmanRootless, Container{Kind: "podman", ID: ctrIDRL, Rootless: true,
			Root: "/home/u/.local/share/containers/storage/overlay/c0/diff"}, "podman:590a4f9cfdb4"},
		{"podman rootless fuse-overlayfs", podmanRootlessFuse, Container{Kind: "podman", ID: ctrIDRL, Rootless: true}, "podman:590a4f9cfdb4"},
		{"flatpak", flatpakMounts, Container{Kind: "flatpak", AppID: "org.nsprof.Hot",
			Root: "/var/lib/flatpak/app/org.nsprof.Hot/x86_64/master/c0ffee/files"}, "flatpak:org.nsprof.Hot"},
		{"bwrap with an app directory", bwrapApp, Container{Kind: "namespace"}, "namespace"},
		{"pivot_root", pivotRoot, Container{Kind: "namespace", Root: "/srv/rootfs"}, "namespace:/srv/rootfs"},
		{"unshare -m", unshareMount, Container{Kind: "namespace"}, "namespace"},
		{"chroot", chroot, Container{Kind: "namespace"}, "namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := classifyMounts(parseMounts(t, tc.mounts), keyOf(host), true)
			if *c != tc.want {
				t.Errorf("got %+v, want %+v", *c, tc.want)
			}
			if l := c.Label(); l != tc.label {
				t.Errorf("label %q, want %q", l, tc.label)
			}
		})
	}
}

func TestMountInfoPID(t *testing.T) {
	for p, want := range map[string]int32{"/proc/42/mountinfo": 42, "/proc/1/mountinfo": 1,
		"/proc/mounts": 0, "/proc/self/mountinfo": 0, "/proc/0/mountinfo": 0, "/proc/+4/mountinfo": 0,
		"/proc/42/mountinfo.gz": 0, "/proc/42/maps": 0, "/proc/99999999999/mountinfo": 0} {
		if got, ok := mountInfoPID(p); got != want || ok != (want != 0) {
			t.Errorf("mountInfoPID(%q) = %d, %v; want %d", p, got, ok, want)
		}
	}
}

// foreignCapture writes a capture as sysprof-cli records one: PROCESS
// frames, samples and each process's mountinfo, no nsprof process file.
// Pid 10 is the recorder, 20 a host process, 30 podman's conmon for
// ctrID (named web), 31 the container's process, 40 a rootless
// container's, 50 a Flatpak app's, 60 a process whose mount table is
// damaged and 70 one without a mount table. With processFile, the
// capture also has nsprof's process file, which labels pid 31 alone.
func foreignCapture(t *testing.T, processFile bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{
		StartTime: testStart, EndTime: testStart + 10e6,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Clock:       func() int64 { return math.MinInt64 },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := func(pid int32) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: pid, Time: testStart + 1e6}
	}
	procs := []struct {
		pid     int32
		cmdline string
		mounts  string
		samples int
	}{
		{10, "sysprof-cli --force --no-battery out.syscap", hostMounts, 1},
		{20, "/usr/bin/bash", hostMounts, 2},
		{30, "/usr/bin/conmon --api-version 1 -c " + ctrID + " -u " + ctrID + " -r /usr/bin/runc -n web --exit-dir /run/libpod/exits", hostMounts, 0},
		{31, "/opt/app/bin/hot 600", podmanRootfulMounts, 7},
		{40, "/opt/app/bin/hot 600", podmanRootless, 3},
		{50, "hot 600", flatpakMounts, 4},
		{60, "broken", hostMounts + "x y 0:1 / /z rw - tmpfs tmpfs rw\n", 5},
		{70, "late", "", 6},
	}
	for _, p := range procs {
		if err := w.WriteFrame(&capture.Process{FrameHeader: h(p.pid), Cmdline: p.cmdline}); err != nil {
			t.Fatal(err)
		}
		if p.mounts != "" {
			if err := w.AddFileBytes(capture.FrameHeader{CPU: -1, PID: p.pid, Time: testStart + 1e6}, fmt.Sprintf("/proc/%d/mountinfo", p.pid), []byte(p.mounts)); err != nil {
				t.Fatal(err)
			}
		}
		for range p.samples {
			if err := w.WriteFrame(&capture.Sample{FrameHeader: h(p.pid), TID: p.pid, Addrs: []uint64{capture.ContextUser, 0x1000}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if processFile {
		b, err := capture.EncodeProcessInfo(capture.ProcessInfo{Kind: "process", PID: 31, Container: &capture.ContainerInfo{Kind: "podman", ID: ctrID, Name: "fromnsprof"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddFileBytes(h(-1), capture.ProcessFile, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestForeignContainers loads a capture another recorder made: every
// process with a mount table gets its container, which --by container,
// --container and the timeline's processes see; a damaged table is
// reported and leaves its process unknown, as a process without one is.
func TestForeignContainers(t *testing.T) {
	data := foreignCapture(t, false)
	want := map[int32]string{10: "host", 20: "host", 30: "host", 31: "podman:web (e5045462346b)", 40: "podman:590a4f9cfdb4",
		50: "flatpak:org.nsprof.Hot", 60: "unknown", 70: "unknown"}
	for _, mode := range []string{"Load", "LoadBytes"} {
		t.Run(mode, func(t *testing.T) {
			var p *Profile
			var err error
			if mode == "Load" {
				p, err = Load(bytes.NewReader(data), LoadOptions{NoHostFiles: true, Timeline: true})
			} else {
				p, err = LoadBytes(data, LoadOptions{NoHostFiles: true, Timeline: true})
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range p.Processes {
				if got := pr.Container.Label(); got != want[pr.PID] {
					t.Errorf("process %d: container %q, want %q", pr.PID, got, want[pr.PID])
				}
			}
			if c := p.procIndex[40].Container; c == nil || !c.Rootless {
				t.Errorf("rootless container: %+v", c)
			}
			if c := p.procIndex[31].Container; c == nil || c.ID != ctrID || c.Rootless {
				t.Errorf("rootful container: %+v", c)
			}
			groups := map[string]int{}
			for _, g := range p.Group(p.Samples, GroupContainer) {
				groups[g.Key] = len(g.Samples)
			}
			wantGroups := map[string]int{"host": 3, "podman:web (e5045462346b)": 7, "podman:590a4f9cfdb4": 3, "flatpak:org.nsprof.Hot": 4, "unknown": 11}
			if fmt.Sprint(groups) != fmt.Sprint(wantGroups) {
				t.Errorf("groups by container %v, want %v", groups, wantGroups)
			}
			for sel, n := range map[string]int{"e5045462": 7, "web": 7, "podman": 10, "host": 3, "org.nsprof": 4, "590a4f9cfdb4c0acb1e5": 3} {
				samples, err := p.Select(Filter{Container: sel})
				if err != nil {
					t.Fatal(err)
				}
				if len(samples) != n {
					t.Errorf("--container %s: %d samples, want %d", sel, len(samples), n)
				}
			}
			if !strings.Contains(strings.Join(p.Warnings, "\n"), "/proc/60/mountinfo:6: bad mount ID") {
				t.Errorf("warnings %q do not name the damaged mount table", p.Warnings)
			}
			if p.Timeline == nil {
				t.Fatal("no timeline")
			}
			for _, ps := range p.Timeline.Processes {
				if got := ps.Container.Label(); got != want[ps.PID] {
					t.Errorf("timeline process %d: container %q, want %q", ps.PID, got, want[ps.PID])
				}
			}
			if !strings.Contains(strings.Join(p.Timeline.Warnings, "\n"), "/proc/60/mountinfo:6") {
				t.Errorf("timeline warnings %q do not name the damaged mount table", p.Timeline.Warnings)
			}
		})
	}
}

// TestForeignContainersNsprofCapture: nsprof's own process file is the
// word on containers; the mount tables are not read.
func TestForeignContainersNsprofCapture(t *testing.T) {
	p, err := LoadBytes(foreignCapture(t, true), LoadOptions{NoHostFiles: true, Timeline: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range p.Processes {
		want := "unknown"
		if pr.PID == 31 {
			want = "podman:fromnsprof (e5045462346b)"
		}
		if got := pr.Container.Label(); got != want {
			t.Errorf("process %d: container %q, want %q", pr.PID, got, want)
		}
	}
	for _, ps := range p.Timeline.Processes {
		if ps.PID != 31 && ps.Container != nil {
			t.Errorf("timeline process %d: container %+v from the mount tables", ps.PID, ps.Container)
		}
	}
}

// TestHostRoot: the recorder's root mount is the host's, though most
// processes of the capture are in one container; without the recorder,
// the root most processes share is.
func TestHostRoot(t *testing.T) {
	host, ctr := parseMounts(t, hostMounts), parseMounts(t, pivotRoot)
	tables := map[int32][]procfmt.Mount{1: ctr, 2: ctr, 3: ctr, 9: host}
	k, ok := hostRoot(tables, map[int32]string{9: "/usr/bin/sysprof-cli -f x.syscap"})
	if want, _ := rootMount(host); !ok || k != keyOf(want) {
		t.Errorf("with the recorder: host root %+v, %v", k, ok)
	}
	k, ok = hostRoot(tables, map[int32]string{9: "bash"})
	if want, _ := rootMount(ctr); !ok || k != keyOf(want) {
		t.Errorf("without the recorder: host root %+v, %v", k, ok)
	}
}
