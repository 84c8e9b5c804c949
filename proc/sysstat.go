package proc

import (
	"io"
	"strconv"
	"strings"
)

// CPUTime is one cpu line of /proc/stat, in clock ticks (USER_HZ).
type CPUTime struct {
	CPU       int // CPU number, or -1 for the "cpu" line that sums all CPUs
	User      uint64
	Nice      uint64
	System    uint64
	Idle      uint64
	IOWait    uint64
	IRQ       uint64
	SoftIRQ   uint64
	Steal     uint64
	Guest     uint64 // included in User
	GuestNice uint64 // included in Nice
}

// SystemStat holds the fields of /proc/stat that nsprof uses.
type SystemStat struct {
	Total           CPUTime   // the "cpu" line
	CPUs            []CPUTime // the "cpuN" lines; offline CPUs are absent
	BootTime        uint64    // btime, in seconds since the Unix epoch
	ContextSwitches uint64    // ctxt
	Processes       uint64    // processes: forks since boot
	ProcsRunning    uint64    // procs_running
	ProcsBlocked    uint64    // procs_blocked
}

// ParseSystemStat parses the /proc/stat format. cpu lines need at least
// four columns; missing later columns (old kernels) read as 0 and columns
// beyond the tenth are ignored. Unknown lines such as intr are skipped. On
// error it returns the zero SystemStat and a *[SyntaxError].
func ParseSystemStat(r io.Reader) (SystemStat, error) {
	lr := newLineReader(r, "stat")
	var s SystemStat
	haveTotal := false
	for lr.Next() {
		line := lr.Text()
		key, rest, _ := strings.Cut(line, " ")
		switch {
		case key == "cpu":
			t, ok := parseCPUTime(rest)
			if !ok || haveTotal {
				return SystemStat{}, lr.Errorf(line, "bad cpu line")
			}
			t.CPU = -1
			s.Total, haveTotal = t, true
		case strings.HasPrefix(key, "cpu"):
			n, err := strconv.ParseUint(key[3:], 10, 31)
			t, ok := parseCPUTime(rest)
			if err != nil || !ok {
				return SystemStat{}, lr.Errorf(line, "bad cpu line")
			}
			t.CPU = int(n)
			s.CPUs = append(s.CPUs, t)
		case key == "btime", key == "ctxt", key == "processes",
			key == "procs_running", key == "procs_blocked":
			n, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				return SystemStat{}, lr.Errorf(line, "bad %s", key)
			}
			switch key {
			case "btime":
				s.BootTime = n
			case "ctxt":
				s.ContextSwitches = n
			case "processes":
				s.Processes = n
			case "procs_running":
				s.ProcsRunning = n
			case "procs_blocked":
				s.ProcsBlocked = n
			}
		}
	}
	if err := lr.Err(); err != nil {
		return SystemStat{}, err
	}
	if !haveTotal {
		return SystemStat{}, syntaxError("stat", 0, "", "missing cpu line")
	}
	return s, nil
}

func parseCPUTime(s string) (CPUTime, bool) {
	f := strings.Fields(s)
	if len(f) < 4 {
		return CPUTime{}, false
	}
	var v [10]uint64
	for i := 0; i < len(f) && i < len(v); i++ {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return CPUTime{}, false
		}
		v[i] = n
	}
	return CPUTime{
		User: v[0], Nice: v[1], System: v[2], Idle: v[3], IOWait: v[4],
		IRQ: v[5], SoftIRQ: v[6], Steal: v[7], Guest: v[8], GuestNice: v[9],
	}, true
}

// ReadSystemStat reads /proc/stat.
func (fs FS) ReadSystemStat() (SystemStat, error) {
	return parseFile(fs.path("stat"), ParseSystemStat)
}

// ReadSystemStat reads /proc/stat through [DefaultFS].
func ReadSystemStat() (SystemStat, error) { return DefaultFS.ReadSystemStat() }
