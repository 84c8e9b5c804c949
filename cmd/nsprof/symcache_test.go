package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
	"nsprof/symbol"
	"nsprof/symcache"
)

// The symbol cache is on by default, in its default directory; a directory
// given replaces it; --no-symbol-cache turns it off; both flags together
// are refused.
func TestSymbolCacheFlags(t *testing.T) {
	def, err := symcache.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fl      recordFlags
		want    string
		wantErr bool
	}{
		{recordFlags{}, def, false},
		{recordFlags{symbolCache: "/tmp/x"}, "/tmp/x", false},
		{recordFlags{noSymbolCache: true}, "", false},
		{recordFlags{symbolCache: "/tmp/x", noSymbolCache: true}, "", true},
	} {
		got, err := symbolCacheDir(tc.fl)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("symbolCacheDir(%+v) = %q, %v; want %q, error %v", tc.fl, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestRecordFillsSymbolCache: a first recording of a C program with DWARF
// starts the filler (it says so, with its pid), which caches every
// function of the program, those the recording never ran included; a
// second recording, running them, hands the program over no more.
func TestRecordFillsSymbolCache(t *testing.T) {
	bin := testutils.BuildFixture(t, "callchain")
	dir := filepath.Join(t.TempDir(), "symbols")
	out := filepath.Join(t.TempDir(), "c.syscap")
	record := func(args ...string) string {
		t.Helper()
		cmd, stderr := nsprofProcess(t, append([]string{"record", "-v", "-F", "999", "--symbol-cache", dir, "-o", out, "-f",
			"--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin}, args...)...)
		if err := cmd.Run(); err != nil {
			t.Fatalf("record: %v\n%s", err, stderr)
		}
		// What the filler does is checked; it writes into the
		// directory the test removes. At idle priority, it waits for
		// a CPU the other tests may keep busy.
		testutils.WaitFiller(t, stderr.String(), 5*time.Minute)
		return stderr.String()
	}
	first := record("1", "1", "nofork")
	pid, files := testutils.FillerStarted(first)
	if pid == 0 {
		t.Fatalf("first recording started no filler:\n%s", first)
	}
	log, err := os.ReadFile(filepath.Join(dir, symcache.FillLogName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), fmt.Sprintf("of %d entries filled", files)) || !strings.Contains(string(log), bin+": entry") {
		t.Errorf("fill log does not say the %d files handed over were filled, %s among them:\n%s", files, bin, log)
	}
	c, err := symcache.Open(dir, symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := symbol.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, err := c.Get(symcache.Key(f.BuildID(), nil))
	if e == nil {
		t.Fatalf("no entry of %s: %v", bin, err)
	}
	tab, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"child_main": true, "worker_thread": true, "fixture_leaf": true}
	for _, sym := range tab.All() {
		if want[sym.Name] {
			delete(want, sym.Name)
			if !e.IsCovered(sym.Addr, sym.Addr+sym.Size) {
				t.Errorf("%s: not cached whole", sym.Name)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("%s: functions %v not found", bin, want)
	}
	// child_main runs now: its addresses are in the entry already.
	record("1", "1")
	log, _ = os.ReadFile(filepath.Join(dir, symcache.FillLogName))
	if n := strings.Count(string(log), bin+":"); n != 1 {
		t.Errorf("%s handed to the filler %d times, want once:\n%s", bin, n, log)
	}
}

// TestInProcessRecordStartsNoFiller: a recording run in-process, as this
// package's tests run commands, starts no symbol cache filler. Only
// nsprof's main says the program has the filler's command; this test
// binary run again with its arguments ran all its tests again (record.FillProgram).
func TestInProcessRecordStartsNoFiller(t *testing.T) {
	testutils.RequireRoot(t, "recording needs root")
	bin := testutils.BuildFixture(t, "callchain")
	dir := filepath.Join(t.TempDir(), "symbols")
	out := filepath.Join(t.TempDir(), "c.syscap")
	_, stderr, status := nsprof(t, nil, "record", "-v", "-F", "999", "--symbol-cache", dir, "-o", out, "-f",
		"--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, "1", "1", "nofork")
	if status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	if pid, _ := testutils.FillerStarted(stderr); pid != 0 || strings.Contains(stderr, "filling the entries") {
		t.Fatalf("an in-process recording started a filler (pid %d):\n%s", pid, stderr)
	}
}
