// Command gofixture is a tiny Go program whose functions the symbol tests
// find through .gopclntab after it is built with -ldflags="-s -w".
package main

import "os"

//go:noinline
func nsprofFixtureGoLeaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

//go:noinline
func nsprofFixtureGoMiddle(n int) int { return nsprofFixtureGoLeaf(n) + 1 }

func main() { os.Exit(nsprofFixtureGoMiddle(len(os.Args)) & 1) }
