package procfmt

import (
	"strings"
	"testing"
)

func TestParseMountInfo(t *testing.T) {
	lower := strings.Repeat("/var/lib/containers/storage/overlay/l/ABCDEFGHIJKLMNOPQRSTUVWXYZ:", 1500)
	lower = lower[:len(lower)-1] // > 64 KiB
	tests := []struct {
		name     string
		in       string
		want     []Mount
		wantErr  string
		wantLine int
	}{
		{
			name: "proc without optional fields",
			in:   "21 26 0:20 / /proc rw,relatime - proc proc rw\n",
			want: []Mount{{ID: 21, ParentID: 26, Dev: Dev{0, 20}, Root: "/", MountPoint: "/proc",
				Options: MountOptions{{Key: "rw"}, {Key: "relatime"}}, FSType: "proc", Source: "proc",
				SuperOptions: MountOptions{{Key: "rw"}}}},
		},
		{
			name: "optional fields and bind root",
			in:   "87 65 254:0 /home/u/lab/rootfs / rw,relatime shared:1 master:2 propagate_from:3 - ext4 /dev/vda rw,errors=remount-ro\n",
			want: []Mount{{ID: 87, ParentID: 65, Dev: Dev{254, 0}, Root: "/home/u/lab/rootfs", MountPoint: "/",
				Options:  MountOptions{{Key: "rw"}, {Key: "relatime"}},
				Optional: []string{"shared:1", "master:2", "propagate_from:3"},
				FSType:   "ext4", Source: "/dev/vda",
				SuperOptions: MountOptions{{Key: "rw"}, {Key: "errors", Value: "remount-ro"}}}},
		},
		{
			name: "octal escapes",
			in:   `36 35 98:0 /my\040dir /mnt/a\011b\012c\134d rw - ext3 /dev/my\040disk rw,opt=a\054b\075c` + "\n",
			want: []Mount{{ID: 36, ParentID: 35, Dev: Dev{98, 0}, Root: "/my dir", MountPoint: "/mnt/a\tb\nc\\d",
				Options: MountOptions{{Key: "rw"}}, FSType: "ext3", Source: "/dev/my disk",
				SuperOptions: MountOptions{{Key: "rw"}, {Key: "opt", Value: "a,b=c"}}}},
		},
		{
			name: "invalid escapes kept",
			in:   `1 0 0:1 /a\9x\1 /b\400 rw - tmpfs none rw` + "\n",
			want: []Mount{{ID: 1, Dev: Dev{0, 1}, Root: `/a\9x\1`, MountPoint: `/b\400`,
				Options: MountOptions{{Key: "rw"}}, FSType: "tmpfs", Source: "none",
				SuperOptions: MountOptions{{Key: "rw"}}}},
		},
		{
			name: "overlay over 64 KiB and extra fields ignored",
			in: "132 76 0:51 / / rw,relatime - overlay overlay rw,lowerdir=" + lower +
				",upperdir=/s/overlay/d571/diff,workdir=/s/overlay/d571/work,uuid=on future\n",
			want: []Mount{{ID: 132, ParentID: 76, Dev: Dev{0, 51}, Root: "/", MountPoint: "/",
				Options: MountOptions{{Key: "rw"}, {Key: "relatime"}}, FSType: "overlay", Source: "overlay",
				SuperOptions: MountOptions{{Key: "rw"}, {Key: "lowerdir", Value: lower},
					{Key: "upperdir", Value: "/s/overlay/d571/diff"},
					{Key: "workdir", Value: "/s/overlay/d571/work"}, {Key: "uuid", Value: "on"}}}},
		},
		{
			name: "fuse subtype and nsfs",
			in: "169 90 0:63 / / rw,nodev,noatime - fuse.fuse-overlayfs fuse-overlayfs rw,user_id=0,group_id=0,default_permissions,allow_other\n" +
				"372 363 0:4 user:[4026532633] /run/.userns ro - nsfs nsfs rw\n",
			want: []Mount{
				{ID: 169, ParentID: 90, Dev: Dev{0, 63}, Root: "/", MountPoint: "/",
					Options: MountOptions{{Key: "rw"}, {Key: "nodev"}, {Key: "noatime"}},
					FSType:  "fuse.fuse-overlayfs", Source: "fuse-overlayfs",
					SuperOptions: MountOptions{{Key: "rw"}, {Key: "user_id", Value: "0"}, {Key: "group_id", Value: "0"},
						{Key: "default_permissions"}, {Key: "allow_other"}}},
				{ID: 372, ParentID: 363, Dev: Dev{0, 4}, Root: "user:[4026532633]", MountPoint: "/run/.userns",
					Options: MountOptions{{Key: "ro"}}, FSType: "nsfs", Source: "nsfs",
					SuperOptions: MountOptions{{Key: "rw"}}},
			},
		},
		{name: "no separator", in: "21 26 0:20 / /proc rw proc proc rw\n", wantErr: "missing fields", wantLine: 1},
		{name: "short after separator", in: "21 26 0:20 / /proc rw - proc proc\n", wantErr: "missing fields", wantLine: 1},
		{name: "bad id", in: "x 26 0:20 / /proc rw - proc proc rw\n", wantErr: "bad mount ID", wantLine: 1},
		{name: "bad parent", in: "1 -2 0:20 / /proc rw - proc proc rw\n", wantErr: "bad parent ID", wantLine: 1},
		{name: "hex dev", in: "1 2 fe:0 / /proc rw - proc proc rw\n", wantErr: "bad device", wantLine: 1},
		{
			name:     "double space",
			in:       "21 26 0:20 / /proc rw - proc proc rw\n1 2 0:1  / rw - proc proc rw\n",
			wantErr:  "mountinfo:2: empty field",
			wantLine: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMountInfo(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}

func TestMountOptionsGet(t *testing.T) {
	o := parseMountOptions(`rw,lowerdir=/l/A:/l/B,upperdir=/u\054x,index=off,rw`)
	if v, ok := o.Get("lowerdir"); !ok || v != "/l/A:/l/B" {
		t.Errorf("lowerdir = %q, %v", v, ok)
	}
	if v, _ := o.Get("upperdir"); v != "/u,x" {
		t.Errorf("upperdir = %q", v)
	}
	if !o.Has("rw") || o.Has("ro") {
		t.Errorf("Has: rw %v ro %v", o.Has("rw"), o.Has("ro"))
	}
	if parseMountOptions("") != nil {
		t.Error("empty options are not nil")
	}
}

func TestParseMounts(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []MountEntry
		wantErr  string
		wantLine int
	}{
		{
			name: "proc mounts",
			in: "proc /proc proc rw,relatime 0 0\n" +
				`/dev/my\040disk /mnt/my\040dir ext4 rw,data=ordered 0 0` + "\n" +
				"overlay / overlay rw,lowerdir=/l/A:/l/B,upperdir=/u,workdir=/w 0 0\n",
			want: []MountEntry{
				{Source: "proc", MountPoint: "/proc", FSType: "proc", Options: MountOptions{{Key: "rw"}, {Key: "relatime"}}},
				{Source: "/dev/my disk", MountPoint: "/mnt/my dir", FSType: "ext4",
					Options: MountOptions{{Key: "rw"}, {Key: "data", Value: "ordered"}}},
				{Source: "overlay", MountPoint: "/", FSType: "overlay", Options: MountOptions{{Key: "rw"},
					{Key: "lowerdir", Value: "/l/A:/l/B"}, {Key: "upperdir", Value: "/u"}, {Key: "workdir", Value: "/w"}}},
			},
		},
		{
			name: "fstab without freq and passno",
			in:   "/dev/sda1 /boot ext4 defaults 1 2\ntmpfs /tmp tmpfs defaults\n",
			want: []MountEntry{
				{Source: "/dev/sda1", MountPoint: "/boot", FSType: "ext4", Options: MountOptions{{Key: "defaults"}}, Freq: 1, PassNo: 2},
				{Source: "tmpfs", MountPoint: "/tmp", FSType: "tmpfs", Options: MountOptions{{Key: "defaults"}}},
			},
		},
		{name: "too few", in: "proc /proc proc\n", wantErr: "want 4 to 6 fields, have 3", wantLine: 1},
		{name: "too many", in: "a /b c d 0 0 0\n", wantErr: "want 4 to 6 fields", wantLine: 1},
		{name: "bad freq", in: "a /b c d x 0\n", wantErr: "bad dump frequency", wantLine: 1},
		{name: "bad passno", in: "a /b c d 0 -1\n", wantErr: "bad pass number", wantLine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMounts(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}
