// Package agent is continuous profiling: it records the whole system in
// periods, each into a capture spooled on disk, and pushes the spooled
// captures in order as OTLP profiles ([otlp.Push]), retrying with backoff
// while the receiver is away. The spool is bounded: past the bound the
// oldest periods are dropped, counted and logged.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"nsprof/capture"
	"nsprof/otlp"
	"nsprof/record"
)

// Options configure [Run].
type Options struct {
	// Client sends the periods.
	Client *otlp.Client
	// Period is the length of each recording (default 10 s).
	Period time.Duration
	// Periods stops after recording this many periods and sending them
	// (0: until the context ends).
	Periods int
	// Record configures each period's recording; its Duration is set to
	// Period. The zero value records the whole system.
	Record record.Options
	// Spool is the directory of the periods not sent yet; SpoolMax
	// bounds the bytes kept there (default 256 MiB).
	Spool    string
	SpoolMax int64
	// Backoff is the first wait after a failed push, doubled after each
	// failure up to MaxBackoff (defaults 1 s and 1 min).
	Backoff, MaxBackoff time.Duration
	// Log receives one line per failure, retry and dropped period.
	Log io.Writer
}

// Stats count the periods of a run.
type Stats struct {
	// Recorded periods; Sent of them; Dropped: removed from the full
	// spool or refused by the receiver, never sent; Retries: failed
	// pushes tried again.
	Recorded, Sent, Dropped, Retries int
	// Samples is the number of samples sent.
	Samples int64
}

const spoolExt = ".syscap"

// Run records and pushes until ctx ends or, with o.Periods, until that
// many periods are recorded and the spool is empty. Periods spooled by an
// earlier run are sent first.
func Run(ctx context.Context, o Options) (Stats, error) {
	if o.Period <= 0 {
		o.Period = 10 * time.Second
	}
	if o.SpoolMax <= 0 {
		o.SpoolMax = 256 << 20
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := os.MkdirAll(o.Spool, 0o700); err != nil {
		return Stats{}, fmt.Errorf("spool: %w", err)
	}
	a := &agent{o: o, wake: make(chan struct{}, 1)}
	files, err := a.spooled()
	if err != nil {
		return Stats{}, err
	}
	if len(files) > 0 {
		a.seq = files[len(files)-1].seq
	}
	var wg sync.WaitGroup
	var recErr error
	recDone := make(chan struct{})
	wg.Go(func() {
		defer close(recDone)
		recErr = a.recordLoop(ctx)
	})
	sendErr := a.sendLoop(ctx, recDone)
	wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st, errors.Join(recErr, sendErr)
}

type agent struct {
	o    Options
	wake chan struct{}
	mu   sync.Mutex // guards st and the spool's files
	st   Stats
	seq  int
}

type spoolFile struct {
	seq  int
	path string
	size int64
}

// spooled returns the spool's periods in order.
func (a *agent) spooled() ([]spoolFile, error) {
	ents, err := os.ReadDir(a.o.Spool)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var out []spoolFile
	for _, e := range ents {
		name := e.Name()
		seq, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "period-"), spoolExt))
		if err != nil || !strings.HasSuffix(name, spoolExt) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, spoolFile{seq, filepath.Join(a.o.Spool, name), info.Size()})
	}
	slices.SortFunc(out, func(x, y spoolFile) int { return x.seq - y.seq })
	return out, nil
}

// recordLoop records the periods into the spool.
func (a *agent) recordLoop(ctx context.Context) error {
	for n := 0; a.o.Periods == 0 || n < a.o.Periods; n++ {
		if ctx.Err() != nil {
			return nil
		}
		a.seq++
		path := filepath.Join(a.o.Spool, fmt.Sprintf("period-%09d%s", a.seq, spoolExt))
		if err := a.recordPeriod(ctx, path); err != nil {
			return err
		}
		a.mu.Lock()
		a.st.Recorded++
		a.mu.Unlock()
		if err := a.bound(); err != nil {
			return err
		}
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// recordPeriod records one period into path, through a temporary name so
// that the sender never sees a capture being written.
func (a *agent) recordPeriod(ctx context.Context, path string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer os.Remove(tmp)
	w, err := capture.NewWriterWithOptions(f, capture.WriterOptions{BufferSize: 1 << 20})
	if err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", tmp, err)
	}
	opts := a.o.Record
	opts.Duration = a.o.Period
	if opts.Log == nil {
		opts.Log = a.o.Log
	}
	_, recErr := record.Record(ctx, w, opts)
	if err := w.Close(); recErr == nil {
		recErr = err
	}
	if err := f.Close(); recErr == nil {
		recErr = err
	}
	if recErr != nil {
		return fmt.Errorf("recording period %d into %s: %w", a.seq, tmp, recErr)
	}
	return os.Rename(tmp, path)
}

// bound removes the oldest periods while the spool holds more than
// SpoolMax bytes, keeping the newest, and counts them as dropped.
func (a *agent) bound() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	files, err := a.spooled()
	if err != nil {
		return err
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	for len(files) > 1 && total > a.o.SpoolMax {
		if err := os.Remove(files[0].path); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		total -= files[0].size
		a.st.Dropped++
		fmt.Fprintf(a.o.Log, "nsprof agent: spool over %d bytes: dropped period %d unsent (%d dropped so far)\n", a.o.SpoolMax, files[0].seq, a.st.Dropped)
		files = files[1:]
	}
	return nil
}

// sendLoop pushes the spooled periods in order, oldest first.
func (a *agent) sendLoop(ctx context.Context, recDone <-chan struct{}) error {
	wait := a.o.Backoff
	for {
		a.mu.Lock()
		files, err := a.spooled()
		a.mu.Unlock()
		if err != nil {
			return err
		}
		if len(files) == 0 {
			select {
			case <-a.wake:
				continue
			case <-recDone:
				// The last period may have been spooled after the listing.
				if files, err = a.spooled(); err != nil || len(files) == 0 {
					return err
				}
				continue
			case <-ctx.Done():
				return nil
			}
		}
		f := files[0]
		res, err := otlp.Push(ctx, a.o.Client, f.path, otlp.PushOptions{Partial: true})
		switch {
		case err == nil:
			a.mu.Lock()
			a.st.Sent++
			a.st.Samples += res.Samples
			os.Remove(f.path)
			a.mu.Unlock()
			wait = a.o.Backoff
		case ctx.Err() != nil:
			return nil
		case otlp.Retryable(err):
			a.mu.Lock()
			a.st.Retries++
			a.mu.Unlock()
			fmt.Fprintf(a.o.Log, "nsprof agent: period %d: %v; retrying in %v\n", f.seq, err, wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil
			}
			wait = min(2*wait, a.o.MaxBackoff)
		default:
			a.mu.Lock()
			a.st.Dropped++
			os.Remove(f.path)
			a.mu.Unlock()
			fmt.Fprintf(a.o.Log, "nsprof agent: period %d refused, dropped: %v\n", f.seq, err)
		}
	}
}
