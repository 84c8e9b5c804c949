// Command symbolize-dso times what nsprof record's symbol bundling costs
// for each new DSO of a capture: opening the mapped file, finding its
// symbols (own .symtab, a debug file by build-id or debuglink,
// MiniDebugInfo, Go line table or .dynsym) and building the table, as
// record does once per file at the end of a recording. The files are the
// host's at the paths of the capture's MAP frames, so run it on the machine
// that recorded the capture, with the files unchanged. Used by
// bench/report-speed.sh.
//
//	symbolize-dso [-runs N] CAPTURE
//
// prints one line per file, then the sum:
//
//	dso=PATH symbols=N source=SOURCE first_ms=T median_ms=T
//	dsos=K first_ms_total=T median_ms_total=T
//
// first_ms is the first load in the process (page cache warm, Go heap and
// code cold), as in record; median_ms the median of N more loads.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"nsprof/capture"
	"nsprof/symbol"
)

func main() {
	runs := flag.Int("runs", 5, "loads of each file after the first, for the median")
	flag.Parse()
	if flag.NArg() != 1 || *runs < 1 {
		flag.Usage()
		os.Exit(2)
	}
	paths, err := mappedFiles(flag.Arg(0))
	if err != nil {
		log.Fatal(err)
	}
	var firstSum, medSum time.Duration
	n := 0
	for _, p := range paths {
		d, syms, src, err := load(p)
		if err != nil {
			fmt.Printf("dso=%s error=%q\n", p, err)
			continue
		}
		times := make([]time.Duration, *runs)
		for i := range times {
			if times[i], _, _, err = load(p); err != nil {
				log.Fatal(err)
			}
		}
		slices.Sort(times)
		med := times[len(times)/2]
		fmt.Printf("dso=%s symbols=%d source=%s first_ms=%.2f median_ms=%.2f\n", p, syms, src, ms(d), ms(med))
		firstSum += d
		medSum += med
		n++
	}
	fmt.Printf("dsos=%d first_ms_total=%.2f median_ms_total=%.2f\n", n, ms(firstSum), ms(medSum))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// load opens the file at path and loads its symbols as record does, and
// returns how long that took.
func load(path string) (time.Duration, int, string, error) {
	start := time.Now()
	f, err := symbol.Open(path)
	if err != nil {
		return 0, 0, "", err
	}
	defer f.Close()
	var l symbol.Loader
	s, err := l.Load(f, path)
	if err != nil {
		return 0, 0, "", err
	}
	return time.Since(start), s.Table().Len(), s.Source(), nil
}

// mappedFiles returns the distinct absolute file paths of the capture's
// MAP frames, in the order first seen.
func mappedFiles(name string) ([]string, error) {
	r, err := capture.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var paths []string
	seen := make(map[string]bool)
	for {
		f, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return paths, nil
			}
			return paths, err
		}
		m, ok := f.(*capture.Map)
		if !ok || !strings.HasPrefix(m.Filename, "/") || seen[m.Filename] {
			continue
		}
		seen[m.Filename] = true
		paths = append(paths, m.Filename)
	}
}
