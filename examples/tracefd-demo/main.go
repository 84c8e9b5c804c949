// Command tracefd-demo shows how a Go program adds its own marks, counters,
// logs and files to a Sysprof capture with package capture.
//
// When started by Sysprof or nsprof with SYSPROF_TRACE_FD set, it writes into
// the profiler's capture through that file descriptor
// (capture.NewWriterFromEnv); otherwise it writes the capture itself, to
// demo.syscap or the file given with -o. It does some real work in phases
// (finding primes, sorting, sleeping), wraps each phase in a MARK timed with
// capture.Now, and reports a loop counter and the heap size as counters.
//
//	go run ./examples/tracefd-demo -o demo.syscap
//	SYSPROF_TRACE_FD=3 go run ./examples/tracefd-demo 3<>demo.syscap
//
// `make demo` runs it both ways and inspects the results with nsprof.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"nsprof/capture"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "tracefd-demo: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("tracefd-demo", flag.ContinueOnError)
	out := fl.String("o", "demo.syscap", "capture to write when SYSPROF_TRACE_FD is not set")
	sortN := fl.Int("sort", 1_000_000, "how many random numbers the sort phase sorts")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *sortN < 1 {
		return fmt.Errorf("-sort %d: want at least 1", *sortN)
	}

	w, err := capture.NewWriterFromEnv(capture.WriterOptions{})
	dest := "SYSPROF_TRACE_FD=" + os.Getenv(capture.TraceFDEnv)
	if errors.Is(err, capture.ErrNoTraceFD) {
		w, err = capture.Create(*out)
		dest = *out
	}
	if err != nil {
		return err
	}
	d := &demo{w: w, pid: int32(os.Getpid()), sortN: *sortN}
	err = d.run()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tracefd-demo: wrote %d bytes to %s\n", w.BytesWritten(), dest)
	return nil
}

// demo writes one run's frames.
type demo struct {
	w        *capture.Writer
	pid      int32
	loopCtr  uint32 // counter id: loop iterations
	heapCtr  uint32 // counter id: heap in use, MiB
	loops    int64
	sortN    int             // numbers the sort phase sorts
	timeline strings.Builder // embedded as demo/phases.txt
}

func (d *demo) head() capture.FrameHeader {
	return capture.FrameHeader{CPU: -1, PID: d.pid, Time: capture.Now()}
}

func (d *demo) run() error {
	w := d.w
	if err := w.WriteFrame(&capture.Process{FrameHeader: d.head(), Cmdline: strings.Join(os.Args, " ")}); err != nil {
		return err
	}
	if err := w.AddMetadata(capture.Now(), "tracefd-demo.go-version", runtime.Version()); err != nil {
		return err
	}
	id, err := w.RequestCounters(2)
	if err != nil {
		return err
	}
	d.loopCtr, d.heapCtr = id, id+1
	err = w.DefineCounters(d.head(), []capture.Counter{
		{Category: "Demo", Name: "Loop iterations", Description: "Inner loop iterations so far", ID: d.loopCtr, Type: capture.CounterInt64},
		{Category: "Demo", Name: "Heap in use", Description: "runtime.MemStats.HeapInuse in MiB", ID: d.heapCtr, Type: capture.CounterDouble},
	})
	if err != nil {
		return err
	}

	phases := []struct {
		name string
		fn   func() (string, error)
	}{
		{"primes", d.primes},
		{"sort", d.sort},
		{"sleep", func() (string, error) { time.Sleep(10 * time.Millisecond); return "slept 10ms", nil }},
	}
	for _, p := range phases {
		start := capture.Now()
		msg, err := p.fn()
		if err != nil {
			return err
		}
		dur := capture.Now() - start
		if err := w.AddMark(start, d.pid, dur, "demo", p.name, msg); err != nil {
			return err
		}
		if err := d.update(); err != nil {
			return err
		}
		fmt.Fprintf(&d.timeline, "%-8s %12s  %s\n", p.name, time.Duration(dur), msg)
	}

	if err := w.AddLog(capture.Now(), d.pid, capture.LogInfo, "tracefd-demo", fmt.Sprintf("finished %d phases, %d loop iterations", len(phases), d.loops)); err != nil {
		return err
	}
	if err := w.AddFileBytes(d.head(), "demo/phases.txt", []byte(d.timeline.String())); err != nil {
		return err
	}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		// Stored as /proc/self/status.gz, as Sysprof stores /proc files.
		if err := w.AddFileGzip(d.head(), "/proc/self/status", status); err != nil {
			return err
		}
	}
	return nil
}

// update writes the current values of both counters.
func (d *demo) update() error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return d.w.SetCounters(d.head(), []capture.CounterUpdate{
		{ID: d.loopCtr, Value: capture.IntValue(d.loops)},
		{ID: d.heapCtr, Value: capture.DoubleValue(float64(ms.HeapInuse) / (1 << 20))},
	})
}

// primes counts the primes below 2,000,000 with a sieve, updating the loop
// counter every 500,000 numbers.
func (d *demo) primes() (string, error) {
	const n = 2_000_000
	composite := make([]bool, n)
	count := 0
	for i := 2; i < n; i++ {
		d.loops++
		if i%500_000 == 0 {
			if err := d.update(); err != nil {
				return "", err
			}
		}
		if composite[i] {
			continue
		}
		count++
		for j := i * i; j < n; j += i {
			composite[j] = true
		}
	}
	return fmt.Sprintf("%d primes below %d", count, n), nil
}

// sort sorts d.sortN random numbers.
func (d *demo) sort() (string, error) {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]uint64, d.sortN)
	for i := range v {
		v[i] = r.Uint64()
	}
	d.loops += int64(len(v))
	slices.Sort(v)
	return fmt.Sprintf("sorted %d numbers", len(v)), nil
}
