// Command capture-writer runs nsprof's capture.Writer on the workloads of
// bench/capture-writer.sh; bench.c runs libsysprof-capture's writer on the
// same ones (keep them identical):
//
//	samples: N SAMPLE frames, 32-address callchains
//	marks:   N MARK frames, group "nsprof", name "bench-mark", message
//	         "short message", duration 500
//
// Each workload (timed) creates its file in DIR, samples.syscap and
// marks.syscap, with the default options, writes N frames and closes the
// Writer (the final flush included). The files must not exist: the script
// removes them between runs, outside the timed process, because in a Go
// process a long unlink(2) (a 288 MB tmpfs file takes over 10 ms to free)
// lets the runtime's sysmon take the P back and restart polling every
// 20 µs, which then lands on the next timed workload. With -discard the
// Writer writes to io.Discard instead, which times the encoding alone
// (bench.c linked with discard.c does the same for libsysprof-capture);
// bytes is then what the file would hold.
//
//	capture-writer -o DIR [-n N] [-discard]
//
// prints: impl=go workload=<w> frames=<N> bytes=<size> seconds=<s> frames_per_s=<r>
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"nsprof/capture"
)

func main() {
	dir := flag.String("o", "", "directory for samples.syscap and marks.syscap (required)")
	n := flag.Int64("n", 1_000_000, "frames per workload")
	discard := flag.Bool("discard", false, "write to io.Discard: time the encoding alone")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	const t0 = 1_000_000_000

	// samples
	addrs := make([]uint64, 32)
	for i := range addrs {
		addrs[i] = 0x400000 + uint64(i)*0x1000
	}
	create := func(path string) (*capture.Writer, error) {
		if *discard {
			return capture.NewWriter(io.Discard)
		}
		if _, err := os.Lstat(path); err == nil {
			// Truncating it would free its pages inside the timing.
			return nil, fmt.Errorf("%s exists; remove it first", path)
		}
		return capture.Create(path)
	}
	out := filepath.Join(*dir, "samples.syscap")
	start := time.Now()
	w, err := create(out)
	if err != nil {
		log.Fatal(err)
	}
	for i := int64(0); i < *n; i++ {
		addrs[0] = 0x400000 + uint64(i)
		if err := w.AddSample(t0+i*1000, int16(i&7), 1234, 1234+int32(i&3), addrs); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	report("samples", out, w.BytesWritten(), *n, time.Since(start))

	// marks
	out = filepath.Join(*dir, "marks.syscap")
	start = time.Now()
	if w, err = create(out); err != nil {
		log.Fatal(err)
	}
	for i := int64(0); i < *n; i++ {
		if err := w.AddMark(t0+i*1000, 1234, 500, "nsprof", "bench-mark", "short message"); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	report("marks", out, w.BytesWritten(), *n, time.Since(start))
}

// report prints one result line; bytes is the file's size, or the size
// the Writer produced (written) when it wrote to io.Discard.
func report(workload, path string, written, n int64, d time.Duration) {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		written = st.Size()
	}
	fmt.Printf("impl=go workload=%s frames=%d bytes=%d seconds=%.6f frames_per_s=%.0f\n",
		workload, n, written, d.Seconds(), float64(n)/d.Seconds())
}
