package capture_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"

	"nsprof/capture"
)

// A program started by `nsprof record --use-trace-fd` (or Sysprof) adds its
// own marks, logs and counters to the profile.
func ExampleNewWriterFromEnv() {
	w, err := capture.NewWriterFromEnv(capture.WriterOptions{})
	if errors.Is(err, capture.ErrNoTraceFD) {
		return // not being profiled
	}
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close() // flushes: the profiler reads the capture after we exit

	start := capture.Now()
	// ... do the work ...
	w.AddMark(start, -1, capture.Now()-start, "myapp", "load-config", "config.toml")

	id, _ := w.RequestCounters(1)
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: capture.Now()}
	w.DefineCounters(h, []capture.Counter{{Category: "myapp", Name: "Queue length", ID: id, Type: capture.CounterInt64}})
	w.SetCounters(h, []capture.CounterUpdate{{ID: id, Value: capture.IntValue(17)}})
}

// Reading a capture frame by frame.
func ExampleReader() {
	var file bytes.Buffer
	w, _ := capture.NewWriterWithOptions(&file, capture.WriterOptions{StartTime: 1_000_000_000})
	w.WriteFrame(&capture.Process{FrameHeader: capture.FrameHeader{CPU: -1, PID: 42, Time: 1_000_000_000}, Cmdline: "demo --fast"})
	w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{CPU: 0, PID: 42, Time: 1_250_000_000}, TID: 42, Addrs: []uint64{capture.ContextUser, 0x401136}})
	w.Close()

	r, err := capture.NewReader(&file)
	if err != nil {
		log.Fatal(err)
	}
	d := capture.Dumper{Start: r.Header().StartTime}
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err) // a *capture.FormatError names the byte offset
		}
		fmt.Println(string(d.Append(nil, f)))
	}
	// Output:
	// +0.000000000 cpu=-1 pid=42 PROCESS cmdline="demo --fast"
	// +0.250000000 cpu=0 pid=42 SAMPLE tid=42 n=2 addrs=[user],0x401136
}
