package proc

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestParseCgroup(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []Cgroup
		wantErr  string
		wantLine int
	}{
		{
			name: "v1 hybrid with a podman container",
			in: "9:name=systemd:/libpod_parent/libpod-5891\n" +
				"2:cpu,cpuacct:/libpod_parent/libpod-5891\n" +
				"4:memory:/process_api/c064\n" +
				"0::/libpod_parent/libpod-5891\n",
			want: []Cgroup{
				{HierarchyID: 9, Controllers: []string{"name=systemd"}, Path: "/libpod_parent/libpod-5891"},
				{HierarchyID: 2, Controllers: []string{"cpu", "cpuacct"}, Path: "/libpod_parent/libpod-5891"},
				{HierarchyID: 4, Controllers: []string{"memory"}, Path: "/process_api/c064"},
				{HierarchyID: 0, Path: "/libpod_parent/libpod-5891"},
			},
		},
		{
			name: "v2 only, path with colon, outside cgroup namespace",
			in:   "0::/../../system.slice/a:b.scope\n",
			want: []Cgroup{{Path: "/../../system.slice/a:b.scope"}},
		},
		{name: "one colon", in: "0:/\n", wantErr: "want hierarchy-ID:controllers:path", wantLine: 1},
		{name: "bad id", in: "0::/\nx:cpu:/\n", wantErr: "cgroup:2: bad hierarchy ID", wantLine: 2},
		{name: "empty path", in: "1:cpu:\n", wantErr: "empty path", wantLine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCgroup(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
	if !(Cgroup{Path: "/"}).IsV2() || (Cgroup{HierarchyID: 1, Controllers: []string{"cpu"}}).IsV2() {
		t.Error("IsV2 wrong")
	}
}

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{name: "kernel thread", in: "", want: nil},
		{name: "argv", in: "sleep\x005\x00", want: []string{"sleep", "5"}},
		{name: "empty argument", in: "a\x00\x00b\x00", want: []string{"a", "", "b"}},
		{name: "only empty argument", in: "\x00", want: []string{""}},
		{name: "rewritten by setproctitle", in: "nginx: worker process", want: []string{"nginx: worker process"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCmdline(strings.NewReader(tt.in))
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	got, err := ParseCmdline(bytes.NewReader(make([]byte, maxCmdline+1)))
	if err == nil || got != nil {
		t.Errorf("oversized cmdline: got %d args, err %v", len(got), err)
	}
}
