// Command capture-writer runs nsprof's capture.Writer on the workloads of
// bench/capture-writer.sh; bench.c runs libsysprof-capture's writer on the
// same ones (keep them identical):
//
//	samples: N SAMPLE frames, 32-address callchains
//	marks:   N MARK frames, group "nsprof", name "bench-mark", message
//	         "short message", duration 500
//
// Each workload removes OUT if it is a regular file, then (timed) creates it
// with the default options, writes N frames and closes the Writer (the final
// flush included). With -discard the Writer writes to io.Discard instead,
// which times the encoding alone (bench.c linked with discard.c does the
// same for libsysprof-capture); bytes is then what the file would hold.
//
//	capture-writer -o OUT [-n N] [-discard]
//
// prints: impl=go workload=<w> frames=<N> bytes=<size> seconds=<s> frames_per_s=<r>
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"nsprof/capture"
)

func main() {
	out := flag.String("o", "", "output capture file (required)")
	n := flag.Int64("n", 1_000_000, "frames per workload")
	discard := flag.Bool("discard", false, "write to io.Discard: time the encoding alone")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	const t0 = 1_000_000_000

	// samples
	addrs := make([]uint64, 32)
	for i := range addrs {
		addrs[i] = 0x400000 + uint64(i)*0x1000
	}
	removeRegular(*out) // freeing the old file's pages is not part of the work
	start := time.Now()
	create := func() (*capture.Writer, error) {
		if *discard {
			return capture.NewWriter(io.Discard)
		}
		return capture.Create(*out)
	}
	w, err := create()
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
	report("samples", *out, w.BytesWritten(), *n, time.Since(start))

	// marks
	removeRegular(*out)
	start = time.Now()
	if w, err = create(); err != nil {
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
	report("marks", *out, w.BytesWritten(), *n, time.Since(start))
}

// removeRegular removes path if it is a regular file (never /dev/null).
func removeRegular(path string) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		os.Remove(path)
	}
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
