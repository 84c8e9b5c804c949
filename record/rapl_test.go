package record

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// fakeRAPL builds a powercap tree with a package zone, its core sub-zone
// and an unrelated zone type.
func fakeRAPL(t *testing.T) (string, func(zone string, uj uint64)) {
	sys := t.TempDir()
	set := func(zone string, uj uint64) {
		os.WriteFile(filepath.Join(sys, "class/powercap", zone, "energy_uj"), []byte(strconv.FormatUint(uj, 10)+"\n"), 0o644)
	}
	for zone, name := range map[string]string{"intel-rapl:0": "package-0", "intel-rapl:0:0": "core", "dtpm": "dtpm"} {
		d := filepath.Join(sys, "class/powercap", zone)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "name"), []byte(name+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "max_energy_range_uj"), []byte("1000000000\n"), 0o644)
		set(zone, 0)
	}
	os.Remove(filepath.Join(sys, "class/powercap/dtpm/energy_uj"))
	return sys, set
}

func TestRAPLFakeSysfs(t *testing.T) {
	sys, set := fakeRAPL(t)
	set("intel-rapl:0", 999_000_000)
	set("intel-rapl:0:0", 100)
	s, err := newRAPLSource(sys)
	if err != nil {
		t.Fatal(err)
	}
	cs := s.counters()
	if len(cs) != 2 || cs[0].Name != "package-0 Watt" || cs[1].Name != "package-0 core Watt" {
		t.Fatalf("counters %+v", cs)
	}
	t0 := time.Unix(100, 0)
	if v, err := s.poll(t0); err != nil || v != nil {
		t.Fatalf("first poll: %v %v", v, err)
	}
	// Package wraps at 1e9 µJ: 999e6 → 1e9 → 4e6 is 5 J in 0.5 s = 10 W.
	set("intel-rapl:0", 4_000_000)
	set("intel-rapl:0:0", 100+2_500_000) // 2.5 J in 0.5 s = 5 W
	v, err := s.poll(t0.Add(500 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if got := v[0].Double(); got != 10 {
		t.Errorf("package power %v W, want 10", got)
	}
	if got := v[1].Double(); got != 5 {
		t.Errorf("core power %v W, want 5", got)
	}
}

func TestRAPLMissing(t *testing.T) {
	if _, err := newRAPLSource(t.TempDir()); err == nil {
		t.Fatal("empty sysfs accepted")
	}
}
