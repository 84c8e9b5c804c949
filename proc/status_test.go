package proc

import (
	"strings"
	"testing"
)

const statusNested = `Name:	sleep
Umask:	0022
State:	S (sleeping)
Tgid:	5688
Ngid:	0
Pid:	5688
PPid:	5686
TracerPid:	0
Uid:	1001	1002	1003	1004
Gid:	0	5	0	0
FDSize:	64
Groups:	 
NStgid:	5688	1
NSpid:	5688	1
NSpgid:	5684	0
NSsid:	4902	0
Kthread:	0
VmPeak:	    3060 kB
Threads:	1
SigQ:	0/96365
Cpus_allowed_list:	0-1
voluntary_ctxt_switches:	2
`

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     Status
		wantErr  string
		wantLine int
	}{
		{
			name: "nested namespace",
			in:   statusNested,
			want: Status{Name: "sleep", State: 'S', Tgid: 5688, Pid: 5688, PPid: 5686,
				Uid: IDs{1001, 1002, 1003, 1004}, Gid: IDs{0, 5, 0, 0},
				NStgid: []int{5688, 1}, NSpid: []int{5688, 1}, NSpgid: []int{5684, 0}, NSsid: []int{4902, 0},
				Threads: 1},
		},
		{
			name: "three levels, thread of a process",
			in:   "Name:\tworker\nTgid:\t1234\nPid:\t1240\nNStgid:\t1234\t5\t1\nNSpid:\t1240\t11\t7\nThreads:\t3\n",
			want: Status{Name: "worker", Tgid: 1234, Pid: 1240, NStgid: []int{1234, 5, 1}, NSpid: []int{1240, 11, 7}, Threads: 3},
		},
		{
			name: "name with tab, space, escaped newline and backslash",
			in:   "Name:\ta b\tc\\nd\\\\e\\x\nPid:\t1\n",
			want: Status{Name: "a b\tc\nd\\e\\x", Pid: 1},
		},
		{
			name: "kernel thread on an old kernel without NSpid",
			in:   "Name:\tkworker/0:1-events\nState:\tI (idle)\nTgid:\t12\nPid:\t12\nPPid:\t2\nKthread:\t1\n",
			want: Status{Name: "kworker/0:1-events", State: 'I', Tgid: 12, Pid: 12, PPid: 2, Kthread: true},
		},
		{
			name: "supplementary groups",
			in:   "Pid:\t7\nUid:\t1000\t1000\t1000\t1000\nGroups:\t24 27 1000 \n",
			want: Status{Pid: 7, Uid: IDs{1000, 1000, 1000, 1000}, Groups: []uint32{24, 27, 1000}},
		},
		{name: "bad group", in: "Pid:\t7\nGroups:\t24 x\n", wantErr: "bad Groups", wantLine: 2},
		{name: "missing pid", in: "Name:\tx\n", wantErr: "missing Pid field"},
		{name: "no colon", in: "Name:\tx\nPid 3\n", wantErr: "status:2: missing ':'", wantLine: 2},
		{name: "bad pid", in: "Pid:\t-3\n", wantErr: "bad Pid", wantLine: 1},
		{name: "empty NSpid", in: "Pid:\t3\nNSpid:\t\n", wantErr: "bad NSpid", wantLine: 2},
		{name: "bad NSpid", in: "Pid:\t3\nNSpid:\t3\tx\n", wantErr: "bad NSpid", wantLine: 2},
		{name: "three uids", in: "Pid:\t3\nUid:\t0\t0\t0\n", wantErr: "bad Uid", wantLine: 2},
		{name: "empty state", in: "State:\t\nPid:\t3\n", wantErr: "empty State", wantLine: 1},
		{name: "pid too large", in: "Pid:\t99999999999\n", wantErr: "bad Pid", wantLine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatus(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}

func TestStatusInnermost(t *testing.T) {
	s := Status{Tgid: 1234, Pid: 1240, NStgid: []int{1234, 5, 1}, NSpid: []int{1240, 11, 7}}
	if s.InnermostPid() != 7 || s.InnermostTgid() != 1 {
		t.Errorf("InnermostPid = %d, InnermostTgid = %d", s.InnermostPid(), s.InnermostTgid())
	}
	old := Status{Tgid: 10, Pid: 11}
	if old.InnermostPid() != 11 || old.InnermostTgid() != 10 {
		t.Errorf("without NS chains: InnermostPid = %d, InnermostTgid = %d", old.InnermostPid(), old.InnermostTgid())
	}
}
