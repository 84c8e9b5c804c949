// Command gohot burns CPU in goLeaf <- goMiddle <- goOuter <- main.main for
// os.Args[1] seconds. e2e/debuginfo_test.go builds it stripped (-s -w):
// its names must then come from .gopclntab. goLeaf calls goStep because Go
// sets up no frame pointer in leaf functions, which would hide goMiddle
// from a frame-pointer unwinder.
package main

import (
	"os"
	"strconv"
	"time"
)

var sink float64

//go:noinline
func goStep(i int) float64 { return float64(i) / float64(i+3) }

//go:noinline
func goLeaf(n int) float64 {
	s := 0.0
	for i := 1; i < n; i++ {
		s += goStep(i)
	}
	return s
}

//go:noinline
func goMiddle(n int) float64 { return goLeaf(n) * 2 }

//go:noinline
func goOuter() { sink = goMiddle(100000) }

func main() {
	secs := 2
	if len(os.Args) > 1 {
		secs, _ = strconv.Atoi(os.Args[1])
	}
	end := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(end) {
		goOuter()
	}
}
