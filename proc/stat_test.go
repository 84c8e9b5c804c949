package proc

import (
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	const tail = " 4194304 99 0 7 0 13 5 0 0 20 -2 3 0 870802 3133440 373 18446744073709551615 94052781445120 94052781465001 140732143910320 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94052781481008 94052781482624 94052820135936 140732143917567 140732143917587 140732143917587 140732143919083 0\n"
	want := func(comm string) Stat {
		return Stat{PID: 5661, Comm: comm, State: 'R', PPID: 5655, PGRP: 5655, Session: 4902,
			Flags: 4194304, MinFlt: 99, MajFlt: 7, UTime: 13, STime: 5, Priority: 20, Nice: -2,
			NumThreads: 3, StartTime: 870802, VSize: 3133440, RSS: 373}
	}
	tests := []struct {
		name    string
		in      string
		want    Stat
		wantErr string
	}{
		{name: "plain", in: "5661 (cat) R 5655 5655 4902 0 -1" + tail, want: want("cat")},
		{name: "parens and spaces in comm", in: "5661 (a) (b c)) R 5655 5655 4902 0 -1" + tail, want: want("a) (b c)")},
		{name: "newline in comm", in: "5661 (x\ny) R 5655 5655 4902 0 -1" + tail, want: want("x\ny")},
		{name: "empty comm", in: "5661 () R 5655 5655 4902 0 -1" + tail, want: want("")},
		{
			name: "minimal 24 fields, pgrp outside namespace",
			in:   "1 (sh) S 0 0 0 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 99 1000 10",
			want: Stat{PID: 1, Comm: "sh", State: 'S', UTime: 1, STime: 2, Priority: 20, NumThreads: 1, StartTime: 99, VSize: 1000, RSS: 10},
		},
		{name: "too short", in: "1 (sh) S 0 0 0 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 99 1000", wantErr: "want at least 24 fields"},
		{name: "no parens", in: "1 sh S 0", wantErr: "missing (comm)"},
		{name: "reversed parens", in: "1 )sh( S 0", wantErr: "missing (comm)"},
		{name: "bad pid", in: "x (sh) S" + tail, wantErr: "bad pid"},
		{name: "bad state", in: "1 (sh) SS 0 0 0 0 -1" + tail, wantErr: "bad state"},
		{name: "bad number", in: "1 (sh) S 0 0 0 0 -1 0 0 0 0 0 1 x 0 0 20 0 1 0 99 1000 10", wantErr: `bad number "x"`},
		{name: "too large", in: "1 (" + strings.Repeat("x", maxStatFile) + ")", wantErr: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, 0)
		})
	}
}

func TestParseSystemStat(t *testing.T) {
	const full = `cpu  6648 1 6139 1726987 408 2 229 3 4 5
cpu0 2914 0 2608 864502 13 0 88 0 0 0
cpu2 3733 1 3531 862485 394 2 141 3 4 5 99
intr 388784 0 0 0 0 0 1
ctxt 604849
btime 1795364068
processes 5665
procs_running 1
procs_blocked 2
softirq 376393 0 77489 5 5947 56675 0 162 167841 0 68274
`
	tests := []struct {
		name     string
		in       string
		want     SystemStat
		wantErr  string
		wantLine int
	}{
		{
			name: "full with an offline cpu1",
			in:   full,
			want: SystemStat{
				Total: CPUTime{CPU: -1, User: 6648, Nice: 1, System: 6139, Idle: 1726987, IOWait: 408,
					IRQ: 2, SoftIRQ: 229, Steal: 3, Guest: 4, GuestNice: 5},
				CPUs: []CPUTime{
					{CPU: 0, User: 2914, System: 2608, Idle: 864502, IOWait: 13, SoftIRQ: 88},
					{CPU: 2, User: 3733, Nice: 1, System: 3531, Idle: 862485, IOWait: 394, IRQ: 2,
						SoftIRQ: 141, Steal: 3, Guest: 4, GuestNice: 5},
				},
				BootTime: 1795364068, ContextSwitches: 604849, Processes: 5665, ProcsRunning: 1, ProcsBlocked: 2,
			},
		},
		{
			name: "old kernel with four columns",
			in:   "cpu 1 2 3 4\ncpu0 1 2 3 4\n",
			want: SystemStat{Total: CPUTime{CPU: -1, User: 1, Nice: 2, System: 3, Idle: 4},
				CPUs: []CPUTime{{User: 1, Nice: 2, System: 3, Idle: 4}}},
		},
		{name: "missing total", in: "cpu0 1 2 3 4\n", wantErr: "missing cpu line"},
		{name: "three columns", in: "cpu 1 2 3\n", wantErr: "stat:1: bad cpu line", wantLine: 1},
		{name: "bad cpu number", in: "cpu 1 2 3 4\ncpux 1 2 3 4\n", wantErr: "bad cpu line", wantLine: 2},
		{name: "duplicate total", in: "cpu 1 2 3 4\ncpu 1 2 3 4\n", wantErr: "bad cpu line", wantLine: 2},
		{name: "bad btime", in: "cpu 1 2 3 4\nbtime -1\n", wantErr: "bad btime", wantLine: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSystemStat(strings.NewReader(tt.in))
			checkParse(t, got, err, tt.want, tt.wantErr, tt.wantLine)
		})
	}
}
