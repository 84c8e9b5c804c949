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
	"runtime/debug"
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
	// Period is the length of each capture the recording is cut into
	// (default 10 s).
	Period time.Duration
	// Periods stops after recording this many periods and sending them
	// (0: until the context ends).
	Periods int
	// Record configures the recording, one for the whole run cut into
	// periods (record.RecordSplit). The zero value records the whole
	// system. Counters are left out: they are not pushed. With OffCPU,
	// each push also has off-CPU profiles (see [Run]); off-CPU marks are
	// not written, Sysprof's timeline being the only reader of them.
	Record record.Options
	// Spool is the directory of the periods not sent yet; SpoolMax
	// bounds the bytes kept there (default 256 MiB).
	Spool    string
	SpoolMax int64
	// Backoff is the first wait after a failed push, doubled after each
	// failure up to MaxBackoff (defaults 1 s and 1 min).
	Backoff, MaxBackoff time.Duration
	// Log receives one line per failure, retry, dropped period and
	// period with samples the kernel lost.
	Log io.Writer
}

// Stats count the periods of a run.
type Stats struct {
	// Recorded periods; Sent of them; Dropped: removed from the full
	// spool, never sent; Refused: refused by the receiver, never sent;
	// Retries: failed pushes tried again.
	Recorded, Sent, Dropped, Refused, Retries int
	// Samples is the number of samples sent; Lost the number the kernel
	// dropped while recording; DroppedSamples those of the periods
	// dropped or refused (of the periods this run recorded).
	Samples, Lost, DroppedSamples int64
	// OffCPU is the off-CPU time sent, in nanoseconds (Record.OffCPU).
	OffCPU int64
	// Unreported is the number of lost samples no push reported: those
	// of the periods that sent nothing (no samples) at the end of the
	// run, with no push after them to carry them.
	Unreported int64
}

// Attributes the agent adds to the resources of a push, for what was lost
// since the push before it (see [Run]).
const (
	// AttrDroppedPeriods counts the periods dropped from the full spool
	// or refused by the receiver since the last push.
	AttrDroppedPeriods = "nsprof.dropped_periods"
	// AttrDroppedSamples counts the samples of those periods, where
	// known (periods spooled by an earlier run are not counted).
	AttrDroppedSamples = "nsprof.dropped_samples"
)

const spoolExt = ".syscap"

// Run records and pushes until ctx ends or, with o.Periods, until that
// many periods are recorded and the spool is empty. Periods spooled by an
// earlier run are sent first.
//
// The whole run is one recording cut into periods: no sample falls
// between two. With Record.OffCPU each push also carries, per process,
// an off-CPU profile ([otlp.Encode]); a thread off the CPU across a cut
// has the time up to the cut in the period that ends there, the rest in
// the next. Each push carries, as resource attributes, what was lost:
// the samples the kernel dropped while recording its period, and those
// of the periods before it that sent nothing for want of samples
// ([otlp.AttrLostSamples]); the periods dropped or refused since the
// push before it ([AttrDroppedPeriods], [AttrDroppedSamples]).
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
	a := &agent{o: o, wake: make(chan struct{}, 1), samples: map[int]int64{}}
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
		recErr = a.record(ctx)
	})
	sendErr := a.sendLoop(ctx, recDone)
	wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.unreportedLost > 0 {
		fmt.Fprintf(a.o.Log, "nsprof agent: the kernel lost %d samples in the last periods, which had no samples: no push reported them\n", a.unreportedLost)
	}
	return a.st, errors.Join(recErr, sendErr)
}

type agent struct {
	o    Options
	wake chan struct{}
	seq  int // of the last period spooled before this run
	mu   sync.Mutex
	// Guarded by mu: the counts, the spool's files, the period being
	// sent (0: none), the samples of the periods spooled and the losses
	// not yet reported in a push.
	st                Stats
	sending           int
	samples           map[int]int64
	unreported        int
	unreportedSamples int64
	// unreportedLost are the lost samples of the periods sent that
	// had no samples, so no request: the next push reports them.
	unreportedLost int64
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

// record records the periods into the spool, one recording cut into
// periods.
func (a *agent) record(ctx context.Context) error {
	opts := a.o.Record
	if opts.Log == nil {
		opts.Log = a.o.Log
	}
	// Counters are not pushed: polling them would cost for nothing.
	opts.NoCPU, opts.NoMemory, opts.NoDisk, opts.NoNetwork, opts.RAPL = true, true, true, true, false
	if opts.OffCPU {
		opts.OffCPUMarks = -1 // for Sysprof's timeline only: not pushed
	}
	name := func(n int) string {
		return filepath.Join(a.o.Spool, fmt.Sprintf("period-%09d%s", a.seq+n, spoolExt))
	}
	_, err := record.RecordSplit(ctx, opts, record.Split{
		Every:    a.o.Period,
		Captures: a.o.Periods,
		Path:     func(n int) string { return name(n) + ".tmp" },
		Writer:   capture.WriterOptions{BufferSize: 1 << 20},
		Done: func(f record.SplitFile) error {
			// The sender never sees a period being written: it looks
			// for the final name only.
			if err := os.Rename(f.Path, name(f.N)); err != nil {
				return fmt.Errorf("spool: %w", err)
			}
			a.mu.Lock()
			a.st.Recorded++
			a.st.Lost += int64(f.Lost)
			a.samples[a.seq+f.N] = int64(f.Samples)
			a.mu.Unlock()
			// What finishing the period read (symbol tables, debug
			// information) is garbage now: hand it back, so that the
			// agent's resident memory follows what it holds, not the
			// peak of each cut.
			debug.FreeOSMemory()
			if f.Lost > 0 {
				fmt.Fprintf(a.o.Log, "nsprof agent: period %d: the kernel lost %d samples (reported with the period)\n", a.seq+f.N, f.Lost)
			}
			if err := a.bound(); err != nil {
				return err
			}
			select {
			case a.wake <- struct{}{}:
			default:
			}
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	return nil
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
	// The newest period stays, and the one being sent: removing it
	// would lose it after the receiver took it, or lose it twice.
	for i := 0; i < len(files)-1 && total > a.o.SpoolMax; i++ {
		f := files[i]
		if f.seq == a.sending {
			continue
		}
		if err := os.Remove(f.path); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		total -= f.size
		a.st.Dropped++
		n := a.samples[f.seq]
		a.lose(f.seq)
		fmt.Fprintf(a.o.Log, "nsprof agent: spool over %d bytes: dropped period %d unsent (%d samples; %d periods dropped so far, reported in the next push)\n", a.o.SpoolMax, f.seq, n, a.st.Dropped)
	}
	return nil
}

// lose counts period seq as lost, to be reported in the next push. The
// caller holds mu.
func (a *agent) lose(seq int) {
	n := a.samples[seq]
	delete(a.samples, seq)
	a.st.DroppedSamples += n
	a.unreported++
	a.unreportedSamples += n
}

// sendLoop pushes the spooled periods in order, oldest first.
func (a *agent) sendLoop(ctx context.Context, recDone <-chan struct{}) error {
	wait := a.o.Backoff
	for {
		a.mu.Lock()
		files, err := a.spooled()
		if len(files) > 0 {
			a.sending = files[0].seq // from now on bound leaves it
		}
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
		a.mu.Lock()
		dropped, droppedSamples, lost := a.unreported, a.unreportedSamples, a.unreportedLost
		a.mu.Unlock()
		var attrs []otlp.Attribute
		if dropped > 0 {
			attrs = []otlp.Attribute{{Key: AttrDroppedPeriods, Value: int64(dropped)}, {Key: AttrDroppedSamples, Value: droppedSamples}}
		}
		res, err := otlp.Push(ctx, a.o.Client, f.path, otlp.PushOptions{Partial: true, Attributes: attrs, Lost: lost})
		a.mu.Lock()
		a.sending = 0
		a.mu.Unlock()
		switch {
		case err == nil:
			a.mu.Lock()
			a.st.Sent++
			a.st.Samples += res.Samples
			a.st.OffCPU += res.OffCPU
			delete(a.samples, f.seq)
			if res.Requests > 0 {
				// Reported; losses counted meanwhile wait for the next.
				a.unreported -= dropped
				a.unreportedSamples -= droppedSamples
				a.unreportedLost -= lost
			} else if res.Lost > 0 {
				a.unreportedLost += res.Lost
				fmt.Fprintf(a.o.Log, "nsprof agent: period %d had no samples, so no push: its %d lost samples are reported with the next push\n", f.seq, res.Lost)
			}
			a.st.Unreported = a.unreportedLost
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
			a.st.Refused++
			a.lose(f.seq)
			os.Remove(f.path)
			a.mu.Unlock()
			fmt.Fprintf(a.o.Log, "nsprof agent: period %d refused, dropped (reported in the next push): %v\n", f.seq, err)
		}
	}
}
