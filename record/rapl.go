package record

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"nsprof/capture"
)

// raplSource reports power in watts from the powercap energy counters
// (/sys/class/powercap/intel-rapl:*), computed from the energy consumed
// between polls. Counters wrap at max_energy_range_uj.
type raplSource struct {
	zones []raplZone
	prev  []uint64
	last  time.Time
}

type raplZone struct {
	dir   string // sysfs directory of the zone
	label string // "package-0", "core", "dram", … prefixed by parent
	max   uint64 // max_energy_range_uj
}

// newRAPLSource finds the RAPL zones under sys (normally /sys). It returns
// an error saying what is missing when there are none.
func newRAPLSource(sys string) (*raplSource, error) {
	base := filepath.Join(sys, "class", "powercap")
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("no RAPL energy counters: %w", err)
	}
	s := &raplSource{}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "intel-rapl:") && !strings.HasPrefix(n, "amd-rapl:") {
			continue
		}
		dir := filepath.Join(base, n)
		energy, err := readUint(filepath.Join(dir, "energy_uj"))
		if err != nil {
			continue // unreadable zones (permissions) are left out
		}
		name := readTrim(filepath.Join(dir, "name"))
		if name == "" {
			name = n
		}
		// Sub-zones (intel-rapl:0:1) are named after their package.
		if parts := strings.Split(strings.SplitN(n, ":", 2)[1], ":"); len(parts) == 2 {
			parent := readTrim(filepath.Join(base, strings.SplitN(n, ":", 2)[0]+":"+parts[0], "name"))
			if parent != "" {
				name = parent + " " + name
			}
		}
		mx, _ := readUint(filepath.Join(dir, "max_energy_range_uj"))
		s.zones = append(s.zones, raplZone{dir: dir, label: name, max: mx})
		s.prev = append(s.prev, energy)
	}
	if len(s.zones) == 0 {
		return nil, fmt.Errorf("no RAPL energy counters in %s", base)
	}
	order := make([]int, len(s.zones))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return s.zones[order[a]].label < s.zones[order[b]].label })
	zones, prev := make([]raplZone, len(order)), make([]uint64, len(order))
	for i, j := range order {
		zones[i], prev[i] = s.zones[j], s.prev[j]
	}
	s.zones, s.prev = zones, prev
	return s, nil
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (s *raplSource) name() string            { return "rapl" }
func (s *raplSource) interval() time.Duration { return 500 * time.Millisecond }

func (s *raplSource) counters() []capture.Counter {
	cs := make([]capture.Counter, len(s.zones))
	for i, z := range s.zones {
		cs[i] = capture.Counter{Category: "RAPL", Name: z.label + " Watt", Description: "Power of RAPL zone " + filepath.Base(z.dir), Type: capture.CounterDouble}
	}
	return cs
}

func (s *raplSource) poll(now time.Time) ([]capture.CounterValue, error) {
	first := s.last.IsZero()
	dt := now.Sub(s.last).Seconds()
	s.last = now
	vals := make([]capture.CounterValue, len(s.zones))
	for i, z := range s.zones {
		e, err := readUint(filepath.Join(z.dir, "energy_uj"))
		if err != nil {
			return nil, err
		}
		d := e - s.prev[i]
		if e < s.prev[i] { // wrapped
			d = z.max - s.prev[i] + e
		}
		s.prev[i] = e
		if dt > 0 {
			vals[i] = capture.DoubleValue(float64(d) / 1e6 / dt)
		}
	}
	if first {
		return nil, nil
	}
	return vals, nil
}
