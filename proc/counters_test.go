package proc

import (
	"strings"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     Meminfo
		wantErr  string
		wantLine int
	}{
		{
			name: "typical",
			in:   "MemTotal:       16303428 kB\nMemFree:          123 kB\nHugePages_Total:       2\nHugepagesize:       2048 kB\n",
			want: Meminfo{"MemTotal": 16303428 * 1024, "MemFree": 123 * 1024, "HugePages_Total": 2, "Hugepagesize": 2048 * 1024},
		},
		{name: "empty", in: "", want: Meminfo{}},
		{name: "no colon", in: "MemTotal 1 kB\n", wantErr: "missing key", wantLine: 1},
		{name: "no value", in: "MemTotal:\n", wantErr: "want a value", wantLine: 1},
		{name: "bad value", in: "A: 1 kB\nB: x kB\n", wantErr: "meminfo:2: bad value", wantLine: 2},
		{name: "unknown unit", in: "A: 1 MB\n", wantErr: `unknown unit "MB"`, wantLine: 1},
		{name: "overflow", in: "A: 18446744073709551615 kB\n", wantErr: "overflows", wantLine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMeminfo(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}

func TestParseDiskstats(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []DiskStat
		wantErr  string
		wantLine int
	}{
		{
			name: "kernel 5.5+ with discard and flush fields, and 2.6 format",
			in: " 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n" +
				"   8       1 sda1 100 0 800 50 20 1 160 30 0 70 80\n",
			want: []DiskStat{
				{Dev: Dev{Major: 259, Minor: 0}, Name: "nvme0n1", ReadsCompleted: 1, ReadsMerged: 2, SectorsRead: 3, ReadTimeMs: 4,
					WritesCompleted: 5, WritesMerged: 6, SectorsWritten: 7, WriteTimeMs: 8,
					IOInProgress: 9, IOTimeMs: 10, WeightedIOTimeMs: 11},
				{Dev: Dev{Major: 8, Minor: 1}, Name: "sda1", ReadsCompleted: 100, SectorsRead: 800, ReadTimeMs: 50,
					WritesCompleted: 20, WritesMerged: 1, SectorsWritten: 160, WriteTimeMs: 30, IOTimeMs: 70, WeightedIOTimeMs: 80},
			},
		},
		{name: "short", in: "8 0 sda 1 2 3\n", wantErr: "want at least 14 fields, have 6", wantLine: 1},
		{name: "bad dev", in: "8 x sda 1 2 3 4 5 6 7 8 9 10 11\n", wantErr: "bad device number", wantLine: 1},
		{name: "bad counter", in: "8 0 sda 1 2 3 4 5 6 7 8 9 -10 11\n", wantErr: `bad number "-10"`, wantLine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDiskstats(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}

func TestParseNetDev(t *testing.T) {
	const header = "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
	tests := []struct {
		name     string
		in       string
		want     []NetDevStat
		wantErr  string
		wantLine int
	}{
		{
			name: "typical, with a byte count touching the colon",
			in: header +
				"    lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0\n" +
				"  eth0:122013475    4836    1    2    0     0          0         0   318290    3684    3    4    0     0       0          0\n",
			want: []NetDevStat{
				{Name: "lo", RxBytes: 3193, RxPackets: 29, TxBytes: 3193, TxPackets: 29},
				{Name: "eth0", RxBytes: 122013475, RxPackets: 4836, RxErrors: 1, RxDropped: 2,
					TxBytes: 318290, TxPackets: 3684, TxErrors: 3, TxDropped: 4},
			},
		},
		{name: "header only", in: header},
		{name: "no colon", in: header + "eth0 1 2\n", wantErr: "net/dev:3: missing interface name", wantLine: 3},
		{name: "space in name", in: "a b: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", wantErr: "white space in interface name", wantLine: 1},
		{name: "short", in: "eth0: 1 2 3\n", wantErr: "want 16 counters, have 3", wantLine: 1},
		{name: "bad number", in: "eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 x\n", wantErr: `bad number "x"`, wantLine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseNetDev(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}
