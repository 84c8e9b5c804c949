// Command goinline spins in code the Go compiler inlines, two calls deep,
// for the tests of the Go line table reader (symbol/golines_test.go):
// main.spin calls middle, which calls leaf, both inlined into it.
package main

import "os"

var sink int

func leaf(i int) int {
	if i%7 == 0 {
		return i / 3
	}
	return i * 5
}

func middle(i int) int {
	return leaf(i) + leaf(i+1)
}

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += middle(i)
	}
	return s
}

func main() {
	sink = spin(len(os.Args) * 1000)
}
