package proc

import (
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	long := "/" + strings.Repeat("d/", 40<<10) + "lib.so" // > 64 KiB
	tests := []struct {
		name     string
		in       string
		want     []Mapping
		wantErr  string
		wantLine int
	}{
		{
			name: "file",
			in:   "55b6c83f7000-55b6c83f9000 r-xp 00002000 fe:00 9978298                    /opt/app/bin/hot\n",
			want: []Mapping{{Start: 0x55b6c83f7000, End: 0x55b6c83f9000, Perms: PermRead | PermExec,
				Offset: 0x2000, Dev: Dev{Major: 0xfe, Minor: 0}, Inode: 9978298, Path: "/opt/app/bin/hot"}},
		},
		{
			name: "anonymous with and without padding",
			in: "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n" +
				"7f0000001000-7f0000002000 ---p 00000000 00:00 0\n",
			want: []Mapping{
				{Start: 0x7f0000000000, End: 0x7f0000001000, Perms: PermRead | PermWrite},
				{Start: 0x7f0000001000, End: 0x7f0000002000},
			},
		},
		{
			name: "pseudo paths",
			in: "01000000-02000000 rw-p 00000000 00:00 0                                  [heap]\n" +
				"7ffd1000-7ffd3000 r-xp 00000000 00:00 0                                  [vdso]\n" +
				"7ffe0000-7ffe1000 rw-p 00000000 00:00 0                                  [anon:go: heap]\n",
			want: []Mapping{
				{Start: 0x1000000, End: 0x2000000, Perms: PermRead | PermWrite, Path: "[heap]"},
				{Start: 0x7ffd1000, End: 0x7ffd3000, Perms: PermRead | PermExec, Path: "[vdso]"},
				{Start: 0x7ffe0000, End: 0x7ffe1000, Perms: PermRead | PermWrite, Path: "[anon:go: heap]"},
			},
		},
		{
			name: "spaces in path, leading and trailing",
			in:   "1000-2000 r--s 00000000 08:01 42    /tmp/my dir/a  b.so \n",
			want: []Mapping{{Start: 0x1000, End: 0x2000, Perms: PermRead | PermShared,
				Dev: Dev{Major: 8, Minor: 1}, Inode: 42, Path: "/tmp/my dir/a  b.so "}},
		},
		{
			name: "deleted and memfd",
			in: "1000-2000 r-xp 00001000 fe:00 77 /usr/lib/libfoo.so.1 (deleted)\n" +
				"3000-4000 rw-s 00000000 00:01 1025 /memfd:jit (deleted)\n",
			want: []Mapping{
				{Start: 0x1000, End: 0x2000, Perms: PermRead | PermExec, Offset: 0x1000,
					Dev: Dev{Major: 0xfe, Minor: 0}, Inode: 77, Path: "/usr/lib/libfoo.so.1", Deleted: true},
				{Start: 0x3000, End: 0x4000, Perms: PermRead | PermWrite | PermShared,
					Dev: Dev{Major: 0, Minor: 1}, Inode: 1025, Path: "/memfd:jit", Deleted: true},
			},
		},
		{
			name: "escaped newline and carriage return in path",
			in:   "1000-2000 r--p 00000000 fe:00 5 /tmp/a\\012b\r\n",
			want: []Mapping{{Start: 0x1000, End: 0x2000, Perms: PermRead,
				Dev: Dev{Major: 0xfe, Minor: 0}, Inode: 5, Path: "/tmp/a\nb\r"}},
		},
		{
			name: "64-bit addresses and large device numbers",
			in:   "ffffffffff600000-ffffffffff601000 --xp 00000000 103:02 18446744073709551615 [vsyscall]",
			want: []Mapping{{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: PermExec,
				Dev: Dev{Major: 0x103, Minor: 2}, Inode: 1<<64 - 1, Path: "[vsyscall]"}},
		},
		{
			name: "line over 64 KiB",
			in:   "1000-2000 r--p 00000000 fe:00 5 " + long + "\n7000-8000 r--p 00000000 00:00 0\n",
			want: []Mapping{
				{Start: 0x1000, End: 0x2000, Perms: PermRead, Dev: Dev{Major: 0xfe, Minor: 0}, Inode: 5, Path: long},
				{Start: 0x7000, End: 0x8000, Perms: PermRead},
			},
		},
		{name: "empty", in: ""},
		{name: "bad range", in: "1000 r--p 0 00:00 0\n", wantErr: "bad address range", wantLine: 1},
		{name: "end before start", in: "2000-1000 r--p 0 00:00 0\n", wantErr: "bad address range", wantLine: 1},
		{name: "bad perms", in: "1000-2000 r-xq 0 00:00 0\n", wantErr: "bad permissions", wantLine: 1},
		{name: "short perms", in: "1000-2000 rx 0 00:00 0\n", wantErr: "bad permissions", wantLine: 1},
		{name: "bad offset", in: "1000-2000 r-xp zz 00:00 0\n", wantErr: "bad offset", wantLine: 1},
		{name: "bad dev", in: "1000-2000 r-xp 0 0000 0\n", wantErr: "bad device", wantLine: 1},
		{
			name:     "bad inode on line 2",
			in:       "1000-2000 r-xp 0 00:00 0\n3000-4000 r-xp 0 00:00 x /a\n",
			wantErr:  `maps:2: bad inode "3000-4000 r-xp 0 00:00 x /a"`,
			wantLine: 2,
		},
		{
			name:     "line over 1 MiB",
			in:       "1000-2000 r--p 0 00:00 0\n1000-2000 r--p 0 00:00 0 /" + strings.Repeat("x", maxLine),
			wantErr:  "line longer than",
			wantLine: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMaps(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}

func TestPermsString(t *testing.T) {
	for _, s := range []string{"---p", "r--p", "rw-p", "r-xp", "rwxs", "--xs"} {
		p, ok := parsePerms(s)
		if !ok || p.String() != s {
			t.Errorf("parsePerms(%q) = %v, %v; String() = %q", s, p, ok, p.String())
		}
	}
}

func TestMappingKinds(t *testing.T) {
	tests := []struct {
		m                 Mapping
		anonymous, pseudo bool
	}{
		{Mapping{}, true, false},
		{Mapping{Path: "[heap]"}, false, true},
		{Mapping{Path: "/lib/libc.so.6"}, false, false},
	}
	for _, tt := range tests {
		if tt.m.IsAnonymous() != tt.anonymous || tt.m.IsPseudo() != tt.pseudo {
			t.Errorf("%q: IsAnonymous = %v, IsPseudo = %v", tt.m.Path, tt.m.IsAnonymous(), tt.m.IsPseudo())
		}
	}
}
