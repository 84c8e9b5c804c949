package container

import (
	"reflect"
	"strings"
	"testing"

	"nsprof/proc"
)

const containersJSON = `[{"id":"58914741353e2269d6e0054c990f4b14d089e64138b87f131e5cf6e90b2d577d","names":["hot1"],` +
	`"image":"e3fdc5f4","layer":"d571f2150ee0","metadata":"{\"image-name\":\"localhost/hotapp:latest\"}",` +
	`"created":"2026-11-22T13:53:20.180069267Z","flags":{"MountLabel":"","ProcessLabel":""}},` +
	`{"id":"","names":["broken"]},{"id":"aaaa","names":["other","alias"],"layer":"l2"}]`

func TestParseContainersJSON(t *testing.T) {
	cs, err := parseContainersJSON(strings.NewReader(containersJSON))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Layer != "d571f2150ee0" || cs[0].Names[0] != "hot1" || cs[1].ID != "aaaa" {
		t.Fatalf("got %+v", cs)
	}
	for _, tc := range []struct{ id, name, want string }{
		{"58914741353e2269d6e0054c990f4b14d089e64138b87f131e5cf6e90b2d577d", "", "d571f2150ee0"},
		{"58914741353e", "", "d571f2150ee0"}, // short id prefix
		{"5891", "", ""},                     // too short to be a prefix
		{"", "alias", "l2"},
		{"ffff", "hot1", "d571f2150ee0"},
		{"", "", ""},
	} {
		c, ok := findContainer(cs, tc.id, tc.name)
		if ok != (tc.want != "") || c.Layer != tc.want {
			t.Errorf("findContainer(%q, %q) = %+v, %t; want layer %q", tc.id, tc.name, c, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "{", `{"id":"x"}`, `[{"id":1}]`} {
		if cs, err := parseContainersJSON(strings.NewReader(bad)); err == nil || cs != nil {
			t.Errorf("parseContainersJSON(%q) = %v, %v; want nil and an error", bad, cs, err)
		}
	}
}

func TestParseLayersJSON(t *testing.T) {
	ls, err := parseLayersJSON(strings.NewReader(`[
		{"id":"c03ed5b2","created":"2026-11-22T13:53:19Z","compressed-diff-digest":"sha256:x","diff-size":2},
		{"id":"d571f215","names":["hot1-layer"],"parent":"c03ed5b2"},
		{"id":"top","parent":"d571f215"},
		{"id":"loop1","parent":"loop2"},{"id":"loop2","parent":"loop1"},
		{"id":"orphan","parent":"missing"}]`))
	if err != nil {
		t.Fatal(err)
	}
	chain, err := layerChain(ls, "top")
	if err != nil || !reflect.DeepEqual(chain, []string{"top", "d571f215", "c03ed5b2"}) {
		t.Errorf("layerChain(top) = %v, %v", chain, err)
	}
	for _, top := range []string{"loop1", "orphan", "nope"} {
		if c, err := layerChain(ls, top); err == nil {
			t.Errorf("layerChain(%s) = %v, want an error", top, c)
		}
	}
	if _, err := parseLayersJSON(strings.NewReader(`{"id":"x"}`)); err == nil {
		t.Error("object instead of array accepted")
	}
}

// A conmon command line as podman 4.3 runs it (rootless, abbreviated ids).
var conmonArgv = []string{"/usr/bin/conmon", "--api-version", "1", "-c", "9f1c9ab1b7e2aa", "-u", "9f1c9ab1b7e2aa",
	"-r", "/usr/sbin/runc", "-b", "/home/u/.local/share/containers/storage/overlay-containers/9f1c9ab1b7e2aa/userdata",
	"-p", "/run/u/containers/overlay-containers/9f1c9ab1b7e2aa/userdata/pidfile", "-n", "hot1",
	"--exit-dir", "/run/u/libpod/tmp/exits", "--full-attach", "-s", "-l", "k8s-file:/x/ctr.log",
	"--log-level", "warning", "--runtime-arg", "--log-format=json", "--runtime-arg", "--log",
	"--runtime-arg=/run/u/log.json", "--conmon-pidfile", "/run/u/conmon.pid",
	"--exit-command", "/usr/bin/podman", "--exit-command-arg", "--root", "--exit-command-arg",
	"/home/u/.local/share/containers/storage", "--exit-command-arg", "--runroot", "--exit-command-arg", "/run/u/containers",
	"--exit-command-arg", "--storage-driver", "--exit-command-arg", "overlay", "--exit-command-arg", "--rm",
	"--exit-command-arg", "container", "--exit-command-arg", "cleanup", "--exit-command-arg", "9f1c9ab1b7e2aa"}

func TestParseConmonCmdline(t *testing.T) {
	a, ok := parseConmonCmdline(conmonArgv)
	want := conmonArgs{ID: "9f1c9ab1b7e2aa", Name: "hot1",
		Bundle:  "/home/u/.local/share/containers/storage/overlay-containers/9f1c9ab1b7e2aa/userdata",
		Runtime: "/usr/sbin/runc", Root: "/home/u/.local/share/containers/storage", RunRoot: "/run/u/containers",
		StorageDriver: "overlay"}
	if !ok || a != want {
		t.Errorf("parseConmonCmdline = %+v, %t\nwant %+v", a, ok, want)
	}
	gr, drv, ok := graphrootFromBundle(a.Bundle, a.ID)
	if !ok || gr != "/home/u/.local/share/containers/storage" || drv != "overlay" {
		t.Errorf("graphrootFromBundle = %q %q %t", gr, drv, ok)
	}
	if gr, drv, ok := graphrootFromBundle("/var/lib/containers/storage/vfs-containers/abc/userdata/", "abc"); !ok || gr != "/var/lib/containers/storage" || drv != "vfs" {
		t.Errorf("vfs bundle: %q %q %t", gr, drv, ok)
	}
	for _, b := range []string{"/x/abc/userdata", "/overlay-containers/abc/userdata", "/s/overlay-containers/other/userdata", "/s/overlay-containers/abc"} {
		if gr, drv, ok := graphrootFromBundle(b, "abc"); ok {
			t.Errorf("graphrootFromBundle(%q) = %q %q, want failure", b, gr, drv)
		}
	}
	for _, argv := range [][]string{nil, {"/usr/bin/bwrap", "-c", "x"}, {"conmon", "-n", "x"}, {"conmon", "-c"}} {
		if a, ok := parseConmonCmdline(argv); ok {
			t.Errorf("parseConmonCmdline(%q) = %+v, want not ok", argv, a)
		}
	}
	if a, _ := parseConmonCmdline([]string{"conmon", "--cid=abc", "--name=n", "--bundle=/b"}); a.ID != "abc" || a.Name != "n" || a.Bundle != "/b" {
		t.Errorf("--flag=value form: %+v", a)
	}
}

func TestLibpodIDFromCgroup(t *testing.T) {
	id := "58914741353e2269d6e0054c990f4b14d089e64138b87f131e5cf6e90b2d577d"
	for p, want := range map[string]string{
		"/libpod_parent/libpod-" + id:                  id,
		"/machine.slice/libpod-" + id + ".scope/ctr":   id,
		"/libpod_parent/libpod-conmon-" + id:           "",
		"/process_api/abc":                             "",
		"/libpod_parent/libpod-" + strings.ToUpper(id): "",
	} {
		if got, ok := libpodIDFromCgroup(p); got != want || ok != (want != "") {
			t.Errorf("libpodIDFromCgroup(%q) = %q, %t", p, got, ok)
		}
	}
}

func TestParseFuseOverlayfsCmdline(t *testing.T) {
	o, ok := parseFuseOverlayfsCmdline([]string{"/usr/bin/fuse-overlayfs", "-o",
		"lowerdir=/s/overlay/l/AAA:/s/overlay/l/BBB,upperdir=/s/overlay/x/diff,workdir=/s/overlay/x/work,nodev,uidmapping=0:1:1",
		"/s/overlay/x/merged"})
	want := overlayDirs{Lower: []string{"/s/overlay/l/AAA", "/s/overlay/l/BBB"}, Upper: "/s/overlay/x/diff", Work: "/s/overlay/x/work", Merged: "/s/overlay/x/merged"}
	if !ok || !reflect.DeepEqual(o, want) {
		t.Errorf("got %+v %t\nwant %+v", o, ok, want)
	}
	if !reflect.DeepEqual(o.layers(), []string{"/s/overlay/x/diff", "/s/overlay/l/AAA", "/s/overlay/l/BBB"}) {
		t.Errorf("layers = %v", o.layers())
	}
	o, ok = parseFuseOverlayfsCmdline([]string{"fuse-overlayfs", "-f", "-olowerdir=/a\\:b::/c", "-o", "upperdir=/u\\,v", "/m"})
	if !ok || !reflect.DeepEqual(o.Lower, []string{"/a:b", "/c"}) || o.Upper != "/u,v" || o.Merged != "/m" {
		t.Errorf("escapes: %+v %t", o, ok)
	}
	for _, argv := range [][]string{nil, {"fuse-overlayfs", "/m"}, {"sshfs", "-o", "lowerdir=/a", "/m"}} {
		if o, ok := parseFuseOverlayfsCmdline(argv); ok {
			t.Errorf("parseFuseOverlayfsCmdline(%q) = %+v", argv, o)
		}
	}
}

func TestOverlayFromMount(t *testing.T) {
	ms, err := proc.ParseMountInfo(strings.NewReader(
		"132 76 0:51 / / rw,relatime - overlay overlay rw,lowerdir=/g/overlay/l/IPJ:/g/overlay/l/K,upperdir=/g/overlay/d571/diff,workdir=/g/overlay/d571/work,uuid=on\n" +
			"133 132 0:54 / /proc rw - proc proc rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	o, ok := overlayFromMount(ms[0])
	if !ok || !reflect.DeepEqual(o.Lower, []string{"/g/overlay/l/IPJ", "/g/overlay/l/K"}) || o.Upper != "/g/overlay/d571/diff" {
		t.Errorf("overlayFromMount = %+v, %t", o, ok)
	}
	if _, ok := overlayFromMount(ms[1]); ok {
		t.Error("proc mount taken for an overlay")
	}
	m, rel, ok := coveringMount(ms, "/proc/self/maps")
	if !ok || m.MountPoint != "/proc" || rel != "/self/maps" {
		t.Errorf("coveringMount = %s %q %t", m.MountPoint, rel, ok)
	}
	if m, rel, _ := coveringMount(ms, "/procfoo"); m.MountPoint != "/" || rel != "/procfoo" {
		t.Errorf("coveringMount(/procfoo) = %s %q", m.MountPoint, rel)
	}
}

const flatpakInfoText = `[Application]
name=org.test.Hot
runtime=runtime/org.test.Platform/x86_64/1

[Instance]
instance-id=1513781304
app-path=/var/lib/flatpak/app/org.test.Hot/x86_64/master/abc/files
runtime-path=/var/lib/flatpak/runtime/org.test.Platform/x86_64/1/def/files
app-commit=abc
flatpak-version=1.14.10
# a comment

[Context]
shared=network;ipc;
`

func TestParseFlatpakInfo(t *testing.T) {
	fi, err := parseFlatpakInfo(strings.NewReader(flatpakInfoText))
	want := flatpakInfo{AppID: "org.test.Hot", Runtime: "runtime/org.test.Platform/x86_64/1",
		AppPath: "/var/lib/flatpak/app/org.test.Hot/x86_64/master/abc/files", RuntimePath: "/var/lib/flatpak/runtime/org.test.Platform/x86_64/1/def/files",
		InstanceID: "1513781304"}
	if err != nil || fi != want {
		t.Errorf("got %+v, %v\nwant %+v", fi, err, want)
	}
	if fi, err := parseFlatpakInfo(strings.NewReader("[Runtime]\nname=org.test.Sdk\n")); err != nil || fi.AppID != "org.test.Sdk" {
		t.Errorf("runtime-only: %+v %v", fi, err)
	}
	for _, bad := range []string{"", "[Application\nname=x", "[Application]\nname", "[Instance]\napp-path=/a\n"} {
		if fi, err := parseFlatpakInfo(strings.NewReader(bad)); err == nil {
			t.Errorf("parseFlatpakInfo(%q) = %+v, want an error", bad, fi)
		}
	}
}

func TestIdentityString(t *testing.T) {
	id := "58914741353e2269d6e0054c990f4b14d089e64138b87f131e5cf6e90b2d577d"
	for _, tc := range []struct {
		id   Identity
		want string
	}{
		{Identity{Kind: KindPodman, ID: id, Name: "hot1", Rootless: true}, "podman:hot1 (58914741353e, rootless)"},
		{Identity{Kind: KindPodman, ID: id, Name: "hot1"}, "podman:hot1 (58914741353e)"},
		{Identity{Kind: KindPodman, ID: id}, "podman:58914741353e"},
		{Identity{Kind: KindFlatpak, AppID: "org.test.Hot"}, "flatpak:org.test.Hot"},
		{Identity{Kind: KindNamespace, Root: "/srv/root"}, "namespace:/srv/root"},
		{Identity{Kind: KindNamespace}, "namespace"},
		{Identity{Kind: KindHost}, "host"},
	} {
		if got := tc.id.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.id, got, tc.want)
		}
	}
}

func TestDebugExtension(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/var/lib/flatpak/app/org.gnome.Maps/x86_64/stable/0123abcd/files", "/var/lib/flatpak/runtime/org.gnome.Maps.Debug/x86_64/stable/active/files"},
		{"/var/lib/flatpak/runtime/org.gnome.Platform/x86_64/45/feed/files", "/var/lib/flatpak/runtime/org.gnome.Platform.Debug/x86_64/45/active/files"},
		{"/home/u/.local/share/flatpak/runtime/org.kde.Platform/x86_64/6.6/c0ffee/files/", "/home/u/.local/share/flatpak/runtime/org.kde.Platform.Debug/x86_64/6.6/active/files"},
		{"/tmp/app", ""},
		{"/var/lib/flatpak/other/x/x86_64/1/c/files", ""},
		{"", ""},
	} {
		got, ok := debugExtension(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("debugExtension(%q) = %q, %t; want %q", tc.in, got, ok, tc.want)
		}
	}
}
