package record

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"nsprof/capture"
	"nsprof/proc"
)

// cpuSource reports per-CPU and combined usage from /proc/stat, and CPU
// frequency as a percentage of the maximum where cpufreq exists.
type cpuSource struct {
	fs    proc.FS
	sys   string // /sys root
	cpus  []int
	freq  []int // CPUs with cpufreq
	prev  map[int]proc.CPUTime
	first bool
}

func newCPUSource(fs proc.FS, sys string) (*cpuSource, []string, error) {
	st, err := fs.ReadSystemStat()
	if err != nil {
		return nil, nil, err
	}
	s := &cpuSource{fs: fs, sys: sys, prev: make(map[int]proc.CPUTime), first: true}
	for _, c := range st.CPUs {
		s.cpus = append(s.cpus, c.CPU)
		if _, err := os.Stat(s.freqPath(c.CPU, "scaling_cur_freq")); err == nil {
			s.freq = append(s.freq, c.CPU)
		}
	}
	var notes []string
	if len(s.freq) == 0 {
		notes = append(notes, "no cpufreq in "+filepath.Join(sys, "devices/system/cpu")+": CPU frequency not recorded")
	}
	return s, notes, nil
}

func (s *cpuSource) freqPath(cpu int, file string) string {
	return filepath.Join(s.sys, "devices/system/cpu", fmt.Sprintf("cpu%d", cpu), "cpufreq", file)
}

func (s *cpuSource) name() string            { return "cpu" }
func (s *cpuSource) interval() time.Duration { return 200 * time.Millisecond }

func (s *cpuSource) counters() []capture.Counter {
	var cs []capture.Counter
	for _, c := range s.cpus {
		cs = append(cs, capture.Counter{Category: "CPU Percent", Name: fmt.Sprintf("Total CPU %d", c), Description: fmt.Sprintf("Total CPU usage %d", c), Type: capture.CounterDouble})
	}
	cs = append(cs, capture.Counter{Category: "CPU Percent", Name: "Combined", Description: "Combined CPU usage", Type: capture.CounterDouble})
	for _, c := range s.freq {
		cs = append(cs, capture.Counter{Category: "CPU Frequency", Name: fmt.Sprintf("CPU %d", c), Description: fmt.Sprintf("Frequency of CPU %d (%% of max)", c), Type: capture.CounterDouble})
	}
	return cs
}

func busyIdle(c proc.CPUTime) (total, idle uint64) {
	// Guest time is already part of user and nice.
	idle = c.Idle + c.IOWait
	total = c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal + idle
	return total, idle
}

func (s *cpuSource) poll(time.Time) ([]capture.CounterValue, error) {
	st, err := s.fs.ReadSystemStat()
	if err != nil {
		return nil, err
	}
	now := make(map[int]proc.CPUTime, len(st.CPUs))
	for _, c := range st.CPUs {
		now[c.CPU] = c
	}
	first := s.first
	s.first = false
	vals := make([]capture.CounterValue, 0, len(s.cpus)+1+len(s.freq))
	var sum float64
	for _, c := range s.cpus {
		cur, prev := now[c], s.prev[c]
		s.prev[c] = cur
		t1, i1 := busyIdle(cur)
		t0, i0 := busyIdle(prev)
		pct := 0.0
		if dt := float64(t1) - float64(t0); dt > 0 && !first {
			pct = 100 * (dt - (float64(i1) - float64(i0))) / dt
		}
		pct = min(max(pct, 0), 100)
		sum += pct
		vals = append(vals, capture.DoubleValue(pct))
	}
	if first {
		return nil, nil
	}
	vals = append(vals, capture.DoubleValue(sum/float64(max(len(s.cpus), 1))))
	for _, c := range s.freq {
		cur, err1 := readUint(s.freqPath(c, "scaling_cur_freq"))
		mx, err2 := readUint(s.freqPath(c, "scaling_max_freq"))
		pct := 0.0
		if err1 == nil && err2 == nil && mx > 0 {
			pct = 100 * float64(cur) / float64(mx)
		}
		vals = append(vals, capture.DoubleValue(pct))
	}
	return vals, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// memorySource reports /proc/meminfo in bytes, with Sysprof 45+'s names.
type memorySource struct{ fs proc.FS }

var memoryKeys = []struct{ name, key, desc string }{
	{"Used", "", "Memory used (MemTotal - MemAvailable)"},
	{"Total", "MemTotal", "Total memory"},
	{"Available", "MemAvailable", "Memory available"},
	{"Free", "MemFree", "Free memory"},
	{"Buffers", "Buffers", "Buffers"},
	{"Cached", "Cached", "Page cache"},
	{"Swap Cached", "SwapCached", "Swap cached"},
	{"Mapped", "Mapped", "Mapped memory"},
	{"Shmem", "Shmem", "Shared memory"},
	{"Swap Total", "SwapTotal", "Total swap"},
	{"Swap Free", "SwapFree", "Free swap"},
}

func (memorySource) name() string            { return "memory" }
func (memorySource) interval() time.Duration { return 500 * time.Millisecond }

func (memorySource) counters() []capture.Counter {
	cs := make([]capture.Counter, len(memoryKeys))
	for i, k := range memoryKeys {
		cs[i] = capture.Counter{Category: "Memory", Name: k.name, Description: k.desc, Type: capture.CounterInt64}
	}
	return cs
}

func (s memorySource) poll(time.Time) ([]capture.CounterValue, error) {
	m, err := s.fs.ReadMeminfo()
	if err != nil {
		return nil, err
	}
	vals := make([]capture.CounterValue, len(memoryKeys))
	for i, k := range memoryKeys {
		v := m[k.key]
		if k.key == "" {
			v = m["MemTotal"] - min(m["MemAvailable"], m["MemTotal"])
		}
		vals[i] = capture.IntValue(int64(v))
	}
	return vals, nil
}

// diskSource reports completed reads and writes per whole disk since the
// previous poll, and their sum. Unlike Sysprof it leaves partitions out of
// the sum, which would otherwise count each operation twice.
type diskSource struct {
	fs    proc.FS
	disks []string
	prev  map[string][2]uint64
}

func newDiskSource(fs proc.FS, sys string) (*diskSource, []string, error) {
	st, err := fs.ReadDiskstats()
	if err != nil {
		return nil, nil, err
	}
	s := &diskSource{fs: fs, prev: make(map[string][2]uint64)}
	for _, d := range st {
		if strings.HasPrefix(d.Name, "loop") || strings.HasPrefix(d.Name, "ram") {
			continue
		}
		if _, err := os.Stat(filepath.Join(sys, "block", d.Name)); err != nil {
			continue // a partition
		}
		s.disks = append(s.disks, d.Name)
		s.prev[d.Name] = [2]uint64{d.ReadsCompleted, d.WritesCompleted}
	}
	sort.Strings(s.disks)
	var notes []string
	if len(s.disks) == 0 {
		notes = append(notes, "no block devices found: disk counters not recorded")
	}
	return s, notes, nil
}

func (s *diskSource) name() string            { return "disk" }
func (s *diskSource) interval() time.Duration { return 500 * time.Millisecond }

func (s *diskSource) counters() []capture.Counter {
	var cs []capture.Counter
	for _, d := range s.disks {
		cs = append(cs,
			capture.Counter{Category: "Disk", Name: "Total Reads (" + d + ")", Description: d, Type: capture.CounterInt64},
			capture.Counter{Category: "Disk", Name: "Total Writes (" + d + ")", Description: d, Type: capture.CounterInt64})
	}
	return append(cs,
		capture.Counter{Category: "Disk", Name: "Total Reads", Description: "Combined", Type: capture.CounterInt64},
		capture.Counter{Category: "Disk", Name: "Total Writes", Description: "Combined", Type: capture.CounterInt64})
}

func (s *diskSource) poll(time.Time) ([]capture.CounterValue, error) {
	st, err := s.fs.ReadDiskstats()
	if err != nil {
		return nil, err
	}
	cur := make(map[string][2]uint64, len(st))
	for _, d := range st {
		cur[d.Name] = [2]uint64{d.ReadsCompleted, d.WritesCompleted}
	}
	vals := make([]capture.CounterValue, 0, 2*len(s.disks)+2)
	var sr, sw int64
	for _, d := range s.disks {
		c, p := cur[d], s.prev[d]
		dr, dw := int64(c[0]-p[0]), int64(c[1]-p[1])
		if c[0] < p[0] || c[1] < p[1] {
			dr, dw = 0, 0
		}
		s.prev[d] = c
		sr += dr
		sw += dw
		vals = append(vals, capture.IntValue(dr), capture.IntValue(dw))
	}
	return append(vals, capture.IntValue(sr), capture.IntValue(sw)), nil
}

// networkSource reports cumulative received and transmitted bytes per
// interface from /proc/net/dev, and their sum without loopback.
type networkSource struct {
	fs     proc.FS
	ifaces []string
}

func newNetworkSource(fs proc.FS) (*networkSource, error) {
	st, err := fs.ReadNetDev(proc.Self)
	if err != nil {
		return nil, err
	}
	s := &networkSource{fs: fs}
	for _, n := range st {
		s.ifaces = append(s.ifaces, n.Name)
	}
	sort.Strings(s.ifaces)
	return s, nil
}

func (s *networkSource) name() string            { return "network" }
func (s *networkSource) interval() time.Duration { return 500 * time.Millisecond }

func (s *networkSource) counters() []capture.Counter {
	var cs []capture.Counter
	for _, n := range s.ifaces {
		cs = append(cs,
			capture.Counter{Category: "Network", Name: "RX Bytes (" + n + ")", Description: n, Type: capture.CounterInt64},
			capture.Counter{Category: "Network", Name: "TX Bytes (" + n + ")", Description: n, Type: capture.CounterInt64})
	}
	return append(cs,
		capture.Counter{Category: "Network", Name: "RX Bytes", Description: "Combined", Type: capture.CounterInt64},
		capture.Counter{Category: "Network", Name: "TX Bytes", Description: "Combined", Type: capture.CounterInt64})
}

func (s *networkSource) poll(time.Time) ([]capture.CounterValue, error) {
	st, err := s.fs.ReadNetDev(proc.Self)
	if err != nil {
		return nil, err
	}
	cur := make(map[string]proc.NetDevStat, len(st))
	for _, n := range st {
		cur[n.Name] = n
	}
	vals := make([]capture.CounterValue, 0, 2*len(s.ifaces)+2)
	var rx, tx int64
	for _, n := range s.ifaces {
		c := cur[n]
		if n != "lo" {
			rx += int64(c.RxBytes)
			tx += int64(c.TxBytes)
		}
		vals = append(vals, capture.IntValue(int64(c.RxBytes)), capture.IntValue(int64(c.TxBytes)))
	}
	return append(vals, capture.IntValue(rx), capture.IntValue(tx)), nil
}
