package perf

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// idleTarget returns an Exec target that never execs: its events stay
// disabled and no record ever arrives.
func idleTarget(t *testing.T) Target {
	t.Helper()
	cmd, _ := startBeforeExec(t, "/bin/true")
	return Exec(cmd.Process.Pid)
}

func TestReaderDeadline(t *testing.T) {
	r, err := Open(idleTarget(t))
	requirePerf(t, err)
	defer r.Close()
	if r.CPUs() < 1 {
		t.Fatalf("%d cpus", r.CPUs())
	}
	start := time.Now()
	r.SetDeadline(start.Add(50 * time.Millisecond))
	var rec Record
	if err := r.ReadInto(&rec); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want a deadline error", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Errorf("returned after %v", d)
	}
}

func TestReaderCloseUnblocks(t *testing.T) {
	r, err := Open(idleTarget(t))
	requirePerf(t, err)
	done := make(chan error)
	go func() {
		var rec Record
		done <- r.ReadInto(&rec)
	}()
	time.Sleep(50 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("blocked ReadInto returned %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock ReadInto")
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var rec Record
	if err := r.ReadInto(&rec); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadInto after Close: %v", err)
	}
	for name, fn := range map[string]func() error{"Enable": r.Enable, "Disable": r.Disable, "Flush": r.Flush} {
		if err := fn(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

func TestReaderFlush(t *testing.T) {
	r, err := Open(idleTarget(t))
	requirePerf(t, err)
	defer r.Close()
	go func() {
		time.Sleep(20 * time.Millisecond)
		r.Flush()
	}()
	r.SetDeadline(time.Now().Add(5 * time.Second))
	var rec Record
	if err := r.ReadInto(&rec); !errors.Is(err, ErrFlushed) {
		t.Fatalf("got %v, want ErrFlushed", err)
	}
	r.SetDeadline(time.Now().Add(10 * time.Millisecond))
	if err := r.ReadInto(&rec); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("flush was not cleared: %v", err)
	}
}

// TestEnableDisable attaches to a running busy process with the events
// disabled, and checks that samples appear only after Enable.
func TestEnableDisable(t *testing.T) {
	cmd := exec.Command(busyBinary(t), "3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	r, err := OpenWithOptions(Processes(cmd.Process.Pid), Options{StartDisabled: true})
	requirePerf(t, err)
	defer r.Close()
	count := func() (n int) {
		readAll(t, r, 200*time.Millisecond, func(rec *Record) {
			if rec.Type == RecordSample {
				n++
			}
		})
		return n
	}
	if n := count(); n != 0 {
		t.Errorf("%d samples while disabled", n)
	}
	if err := r.Enable(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n < 20 {
		t.Errorf("%d samples in 200ms while enabled", n)
	}
	if err := r.Disable(); err != nil {
		t.Fatal(err)
	}
	count() // drain what was written before Disable
	if n := count(); n != 0 {
		t.Errorf("%d samples after Disable", n)
	}
}

func TestCyclesFallback(t *testing.T) {
	r, err := OpenWithOptions(idleTarget(t), Options{Event: EventCycles})
	requirePerf(t, err)
	defer r.Close()
	want := EventCPUClock
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err == nil {
		want = EventCycles
	}
	if r.Event() != want {
		t.Errorf("event %v, want %v", r.Event(), want)
	}
}

// A ring filled to its watermark wakes the reader while the task still
// runs, with no deadline to fall back on. Regression: the runtime
// poller's epoll consumed the perf fds' readiness before the reader's
// own epoll_wait looked, so records arrived only once the task exited.
func TestReaderWakesAtWatermark(t *testing.T) {
	cmd, release := startBeforeExec(t, busyBinary(t), "10")
	r, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{Frequency: 4000, UserStack: 8192})
	requirePerf(t, err)
	defer r.Close()
	release()
	got := make(chan error, 1)
	go func() {
		var rec Record
		for {
			if err := r.ReadInto(&rec); err != nil || rec.Type == RecordSample {
				got <- err
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no sample within 5 s of a task that fills a quarter of its ring with 8 KiB stack copies at 4 kHz in well under a second")
	}
}
