package record

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/proc"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCPUSourceFake(t *testing.T) {
	procRoot, sys := t.TempDir(), t.TempDir()
	stat := func(busy0, idle0, busy1, idle1 int) string {
		return "cpu  0 0 0 0 0 0 0 0 0 0\n" +
			"cpu0 " + itoa(busy0) + " 0 0 " + itoa(idle0) + " 0 0 0 0 0 0\n" +
			"cpu1 " + itoa(busy1) + " 0 0 " + itoa(idle1) + " 0 0 0 0 0 0\n"
	}
	writeFiles(t, procRoot, map[string]string{"stat": stat(100, 100, 100, 100)})
	writeFiles(t, sys, map[string]string{
		"devices/system/cpu/cpu1/cpufreq/scaling_cur_freq": "1500000\n",
		"devices/system/cpu/cpu1/cpufreq/scaling_max_freq": "3000000\n",
	})
	s, notes, err := newCPUSource(proc.FS{Root: procRoot}, sys)
	if err != nil || len(notes) != 0 {
		t.Fatal(err, notes)
	}
	cs := s.counters()
	names := []string{}
	for _, c := range cs {
		names = append(names, c.Category+"/"+c.Name)
	}
	if got := strings.Join(names, ","); got != "CPU Percent/Total CPU 0,CPU Percent/Total CPU 1,CPU Percent/Combined,CPU Frequency/CPU 1" {
		t.Fatalf("counters %s", got)
	}
	if v, _ := s.poll(time.Now()); v != nil {
		t.Fatal("first poll has no interval to report")
	}
	// cpu0: 75 busy of 100 jiffies; cpu1: 25 of 100.
	writeFiles(t, procRoot, map[string]string{"stat": stat(175, 125, 125, 175)})
	v, err := s.poll(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{75, 25, 50, 50}
	for i, w := range want {
		if got := v[i].Double(); got != w {
			t.Errorf("%s = %v, want %v", names[i], got, w)
		}
	}
}

func TestMemoryDiskNetworkFake(t *testing.T) {
	procRoot, sys := t.TempDir(), t.TempDir()
	netdev := func(rx, tx int) string {
		return "Inter-|   Receive                                                |  Transmit\n" +
			" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
			"    lo: 1000 1 0 0 0 0 0 0 1000 1 0 0 0 0 0 0\n" +
			"  eth0: " + itoa(rx) + " 1 0 0 0 0 0 0 " + itoa(tx) + " 1 0 0 0 0 0 0\n"
	}
	disk := func(r, w int) string {
		return " 254       0 vda " + itoa(r) + " 0 0 0 " + itoa(w) + " 0 0 0 0 0 0 0 0 0 0 0 0\n" +
			" 254       1 vda1 " + itoa(r) + " 0 0 0 " + itoa(w) + " 0 0 0 0 0 0 0 0 0 0 0 0\n" +
			"   7       0 loop0 5 0 0 0 5 0 0 0 0 0 0 0 0 0 0 0 0\n"
	}
	writeFiles(t, procRoot, map[string]string{
		"meminfo":      "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n",
		"diskstats":    disk(10, 20),
		"self/net/dev": netdev(5000, 7000),
	})
	writeFiles(t, sys, map[string]string{"block/vda/size": "1\n", "block/loop0/size": "1\n"})
	fs := proc.FS{Root: procRoot}

	mv, err := memorySource{fs: fs}.poll(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if used, total := mv[0].Int64(), mv[1].Int64(); used != 600*1024 || total != 1000*1024 {
		t.Errorf("memory used %d total %d", used, total)
	}

	d, notes, err := newDiskSource(fs, sys)
	if err != nil || len(notes) != 0 || strings.Join(d.disks, ",") != "vda" {
		t.Fatalf("disks %v notes %v err %v", d.disks, notes, err)
	}
	writeFiles(t, procRoot, map[string]string{"diskstats": disk(13, 27)})
	dv, _ := d.poll(time.Now())
	// vda reads, vda writes, combined reads, combined writes: partitions
	// and loop devices are not counted twice.
	for i, w := range []int64{3, 7, 3, 7} {
		if dv[i].Int64() != w {
			t.Errorf("disk value %d = %d, want %d", i, dv[i].Int64(), w)
		}
	}

	n, err := newNetworkSource(fs)
	if err != nil {
		t.Fatal(err)
	}
	nv, _ := n.poll(time.Now())
	// eth0 rx, tx, lo rx, tx, combined rx, tx (without loopback)
	for i, w := range []int64{5000, 7000, 1000, 1000, 5000, 7000} {
		if nv[i].Int64() != w {
			t.Errorf("network value %d = %d, want %d", i, nv[i].Int64(), w)
		}
	}
}

func TestCounterSetWritesDefinitionsAndValues(t *testing.T) {
	var buf bytes.Buffer
	w, _ := capture.NewWriter(&buf)
	procRoot := t.TempDir()
	writeFiles(t, procRoot, map[string]string{"meminfo": "MemTotal: 1000 kB\nMemAvailable: 400 kB\n"})
	cs := counterSet{sources: []counterSource{memorySource{fs: proc.FS{Root: procRoot}}}}
	if err := cs.define(w, 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cs.tick(w, now, capture.Now())
	cs.tick(w, now.Add(10*time.Millisecond), capture.Now()) // not due yet
	cs.tick(w, now.Add(time.Second), capture.Now())
	w.Close()
	if w.Count(capture.TypeCounterDefine) != 1 || w.Count(capture.TypeCounterSet) != 2 {
		t.Errorf("CTRDEF %d CTRSET %d, want 1 and 2", w.Count(capture.TypeCounterDefine), w.Count(capture.TypeCounterSet))
	}
}

func TestStatusLine(t *testing.T) {
	var b bytes.Buffer
	s := statusLine{w: &b, width: 40}
	s.update(Stats{Elapsed: 1500 * time.Millisecond, Samples: 1234, Lost: 2, Processes: 3, Bytes: 2_500_000})
	line := b.String()
	if !strings.HasPrefix(line, "\rrecording   1.5s  samples 1234  lost 2") || len(line) > 1+39+3 {
		t.Errorf("status line %q", line)
	}
	b.Reset()
	s.clear()
	if b.String() != "\r\x1b[K" {
		t.Errorf("clear wrote %q", b.String())
	}
}
