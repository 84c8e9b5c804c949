package proc

import (
	"strings"
	"testing"
)

// smapsExcerpt is the start of a real /proc/PID/smaps (Linux 6.18): a
// read-only mapping of a file, then an anonymous one.
const smapsExcerpt = `55a451c2c000-55a451c2e000 r--p 00000000 fe:00 247278                     /usr/bin/head
Size:                  8 kB
KernelPageSize:        4 kB
MMUPageSize:           4 kB
Rss:                   8 kB
Pss:                   8 kB
Pss_Dirty:             0 kB
Shared_Clean:          0 kB
Shared_Dirty:          0 kB
Private_Clean:         8 kB
Private_Dirty:         0 kB
Referenced:            8 kB
Anonymous:             0 kB
KSM:                   0 kB
LazyFree:              0 kB
AnonHugePages:         0 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:       0 kB
Swap:                  0 kB
SwapPss:               0 kB
Locked:                0 kB
THPeligible:           0
ProtectionKey:         0
VmFlags: rd mr mw me 
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 
Size:                132 kB
Rss:                  12 kB
Anonymous:            12 kB
Swap:                  4 kB
VmFlags: rd wr mr mw me ac 
`

func TestParseSmaps(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []MappingMemory
		wantErr  string
		wantLine int
	}{
		{
			name: "real excerpt",
			in:   smapsExcerpt,
			want: []MappingMemory{
				{Mapping: Mapping{Start: 0x55a451c2c000, End: 0x55a451c2e000, Perms: PermRead,
					Dev: Dev{Major: 0xfe}, Inode: 247278, Path: "/usr/bin/head"}, Rss: 8 << 10},
				{Mapping: Mapping{Start: 0x7f0000000000, End: 0x7f0000021000, Perms: PermRead | PermWrite},
					Rss: 12 << 10, Anonymous: 12 << 10, Swap: 4 << 10},
			},
		},
		{
			name: "a path with a colon, fields missing",
			in:   "1000-2000 r-xp 00000000 fe:00 5 /opt/a:b\n",
			want: []MappingMemory{{Mapping: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermExec,
				Dev: Dev{Major: 0xfe}, Inode: 5, Path: "/opt/a:b"}}},
		},
		{name: "empty", in: ""},
		{name: "field first", in: "Rss: 8 kB\n", wantErr: "field before the first mapping", wantLine: 1},
		{name: "no unit", in: "1000-2000 r--p 0 00:00 0\nRss: 8\n", wantErr: "Rss: want a value in kB", wantLine: 2},
		{name: "bad value", in: "1000-2000 r--p 0 00:00 0\nAnonymous: x kB\n", wantErr: "Anonymous: bad value", wantLine: 2},
		{name: "overflow", in: "1000-2000 r--p 0 00:00 0\nSwap: 18446744073709551615 kB\n", wantErr: "overflows", wantLine: 2},
		{name: "bad mapping", in: "1000-2000 r--p 0 00:00 0\nRss: 4 kB\n3000-4000 rq 0 00:00 0\n", wantErr: "bad permissions", wantLine: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSmaps(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}
