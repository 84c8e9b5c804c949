// Command gosignal sends itself SIGUSR1 in a loop for two seconds, so
// that a good share of its samples are taken in the Go runtime's signal
// handler, below a signal frame.
package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		<-c
	}
}
