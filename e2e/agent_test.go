//go:build linux

package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// TestAgentContainerAndHost is issue 24's end-to-end test: a real
// OpenTelemetry Collector runs; nsprof agent records the system for three
// periods and pushes them over OTLP/gRPC while the container fixture runs
// in a rootless podman container and the callchain fixture on the host.
// The host holds a decoy at the container binary's path, with other
// functions. Every request the file exporter wrote holds both fixtures
// by their function names, the container's with its container.id, name
// and runtime and its namespace pid, the host's with none; no request
// names a decoy function.
func TestAgentContainerAndHost(t *testing.T) {
	testutils.LookPathOrSkip(t, "podman")
	col := testutils.StartOtelcol(t)
	ctrPID, ctrID := containers.StartPodmanRootless(t, "overlay")
	host := exec.Command(testutils.BuildFixture(t, "callchain"), "60", "1", "nofork")
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })

	testutils.SystemWide(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nsprofBin, "agent", "--protocol", "grpc", "--otlp-endpoint", col.GRPC, "--insecure",
		"--period", "2s", "-F", "49", "--periods", "3", "--spool", t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("nsprof agent:\n%s", out)
	if err != nil {
		t.Fatalf("nsprof agent: %v", err)
	}
	lines := col.Lines(t, 3, 10*time.Second)
	if len(lines) != 3 {
		t.Fatalf("the collector wrote %d requests, want 3 (one per period)", len(lines))
	}
	for i, line := range lines {
		procs, _ := testutils.ReadCollected(t, []string{line})
		for pid, cp := range procs {
			for name := range cp.Total {
				if strings.HasPrefix(name, "decoy_") {
					t.Errorf("period %d, pid %d: the host decoy's %s", i+1, pid, name)
				}
			}
		}
		ctr, hp := procs[int64(ctrPID)], procs[int64(host.Process.Pid)]
		// Every stack of the fixture's loop goes through ctr_hot_middle
		// and ctr_hot_leaf, most of them from ctr_hot_step, which sets
		// up no frame: the frame-pointer walk skips its caller,
		// ctr_hot_leaf, and the agent's leaf step must put it back (in
		// 5-15 % of the stacks it was there before the agent took the
		// step: those sampled in ctr_hot_leaf's own loop).
		if ctr == nil || ctr.Total["ctr_hot_middle"] == 0 || ctr.Total["main"] == 0 {
			t.Errorf("period %d: no samples of the container fixture's ctr_hot_middle and main (pid %d): %+v", i+1, ctrPID, ctr)
		} else {
			if leaf, mid := ctr.Total["ctr_hot_leaf"], ctr.Total["ctr_hot_middle"]; leaf*10 < mid*9 {
				t.Errorf("period %d: ctr_hot_leaf in %d of the %d container fixture's stacks through ctr_hot_middle, want all but a few (the leaf step)", i+1, leaf, mid)
			}
			a := ctr.Attrs
			if id, _ := a["container.id"].(string); id == "" || !strings.HasPrefix(ctrID, id) {
				t.Errorf("period %d: container fixture's container.id %q, want (a prefix of) %s", i+1, id, ctrID)
			}
			if name, _ := a["container.name"].(string); !strings.HasPrefix(name, "nsprof-hot-") {
				t.Errorf("period %d: container.name %q, want the podman container's nsprof-hot-…", i+1, name)
			}
			if a["container.runtime.name"] != "podman" || a["nsprof.container.kind"] != "podman" {
				t.Errorf("period %d: container runtime %v, kind %v; want podman", i+1, a["container.runtime.name"], a["nsprof.container.kind"])
			}
			if nspid, _ := a["nsprof.process.nspid"].(int64); nspid <= 0 || nspid == int64(ctrPID) {
				t.Errorf("period %d: namespace pid %v of host pid %d", i+1, a["nsprof.process.nspid"], ctrPID)
			}
		}
		if hp == nil || hp.Total["fixture_leaf"] == 0 {
			t.Errorf("period %d: no samples of the host fixture's fixture_leaf (pid %d)", i+1, host.Process.Pid)
		} else {
			if v, ok := hp.Attrs["container.id"]; ok {
				t.Errorf("period %d: the host fixture has container.id %v", i+1, v)
			}
			if k := hp.Attrs["nsprof.container.kind"]; k != "host" {
				t.Errorf("period %d: the host fixture's kind %v, want host", i+1, k)
			}
		}
	}
}

// TestAgentOffCPU runs nsprof agent --off-cpu for four periods of 2 s
// with the offcpu fixture on the host, sleeping 300 ms in fixture_block
// then spinning 20 ms of wall-clock time in fixture_spin, over and over:
// each period's push holds, under the fixture's resource, an off-CPU
// profile (off_cpu, nanoseconds) whose fixture_block stacks carry the
// fixture's share of the period asleep, 300/320 of its length. The
// tolerance is 25 ms plus 2 % (about 60 ms): a window of a 320 ms cycle
// holds up to 300x20/320 = 19 ms more or less sleep than its share, and
// the sleeps overrun on a loaded machine (their wakeup waits for a CPU),
// which moves the share a little. Sleeps span the cuts (one every 2 s, a
// sleep of 300 ms in every 320 ms): losing the part of a sleep on either
// side of a cut, or counting it in both periods, would be off by up to
// 300 ms, more than the tolerance at three cuts in four. The first
// period is checked for the stack only: the sleep the fixture was in
// when the recording started has no switch out in it and is not
// counted. Each push also holds the fixture's CPU profile, with
// fixture_spin: sampled at 199 Hz, its 6 spins a period (about 125 ms
// on the CPU) give some 25 samples; at 49 Hz they gave 6, and none in
// about one period in 400 (e^-6), which failed a CI run.
func TestAgentOffCPU(t *testing.T) {
	col := testutils.StartOtelcol(t)
	const block, spin = 300, 20
	fixture := exec.Command(testutils.BuildFixture(t, "offcpu"), "1000", strconv.Itoa(block), strconv.Itoa(spin))
	if err := fixture.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fixture.Process.Kill(); fixture.Wait() })
	pid := int64(fixture.Process.Pid)

	testutils.SystemWide(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nsprofBin, "agent", "--off-cpu", "--otlp-endpoint", col.HTTP,
		"--period", "2s", "-F", "199", "--periods", "4", "--spool", t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("nsprof agent --off-cpu:\n%s", out)
	if err != nil {
		t.Fatalf("nsprof agent: %v", err)
	}
	if !strings.Contains(string(out), "s off the CPU") {
		t.Errorf("the agent's summary says no off-CPU time")
	}
	lines := col.Lines(t, 4, 10*time.Second)
	if len(lines) != 4 {
		t.Fatalf("the collector wrote %d requests, want 4 (one per period)", len(lines))
	}
	share := float64(block) / float64(block+spin)
	// A context switch whose other half was lost (a ring full on a loaded
	// machine) is counted and said per period, and its interval, up to
	// one block, is missing from that period.
	unpaired := map[int]int{}
	for _, m := range regexp.MustCompile(`off-CPU: capture (\d+): (\d+) context switches lost their other half`).FindAllStringSubmatch(string(out), -1) {
		c, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		unpaired[c] += n
	}
	for i, line := range lines {
		procs, _ := testutils.ReadCollected(t, []string{line})
		fp := procs[pid]
		if fp == nil {
			t.Errorf("period %d: nothing of the fixture (pid %d)", i+1, pid)
			continue
		}
		if fp.Total["fixture_spin"] == 0 {
			t.Errorf("period %d: no CPU sample of the fixture in fixture_spin", i+1)
		}
		got := fp.OffCPUTotal["fixture_block"]
		if fp.OffCPUTotal["[off-CPU: S sleeping]"] < got*95/100 {
			t.Errorf("period %d: the fixture's off-CPU time under [off-CPU: S sleeping] %v, want most of fixture_block's %v", i+1,
				time.Duration(fp.OffCPUTotal["[off-CPU: S sleeping]"]), time.Duration(got))
		}
		length := periodLength(t, line, pid)
		want := time.Duration(float64(length) * share)
		tol := 25*time.Millisecond + want*2/100
		t.Logf("period %d (%v): fixture_block off the CPU %v, want %v ± %v (the fixture's whole off-CPU time %v)",
			i+1, length, time.Duration(got), want, tol, time.Duration(fp.OffCPU))
		if i == 0 {
			if got == 0 {
				t.Errorf("period 1: no off-CPU time in fixture_block")
			}
			continue
		}
		short := tol + time.Duration(unpaired[i+1])*block*time.Millisecond
		if d := time.Duration(got) - want; d < -short || d > tol {
			t.Errorf("period %d: fixture_block off the CPU %v, want %v - %v + %v (%v of %v; %d switches unpaired)", i+1, time.Duration(got), want, short, tol, share, length, unpaired[i+1])
		}
	}
}

// periodLength returns the length of the off-CPU profile of process pid
// in a request of the file exporter.
func periodLength(t *testing.T, line string, pid int64) time.Duration {
	t.Helper()
	ps, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	strs := ps.Dictionary().StringTable()
	for _, rp := range ps.ResourceProfiles().All() {
		if p, _ := rp.Resource().Attributes().Get("process.pid"); p.Int() != pid {
			continue
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				if strs.At(int(prof.SampleType().TypeStrindex())) == "off_cpu" {
					return time.Duration(prof.DurationNano())
				}
			}
		}
	}
	t.Fatalf("no off-CPU profile of pid %d", pid)
	return 0
}
