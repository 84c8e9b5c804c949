//go:build otlp

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"nsprof/agent"
)

func newAgentCmd() *cobra.Command {
	var (
		o        agent.Options
		of       otlpFlags
		fl       recordFlags
		spoolMax string
	)
	cmd := &cobra.Command{
		Use:   agentUse,
		Short: agentShort,
		Long: `Agent records the whole system at -F Hz per CPU, one recording cut into
periods of --period (as perf record --switch-output does: no sample falls
between two periods), and pushes each period as nsprof push does (OTLP
profiles), in order. A period is first written to the spool directory; it
leaves it once the receiver took it. While the receiver is away, pushes are
retried with a backoff doubling from 1 s to 1 min and periods wait in the
spool; past --spool-max the oldest are dropped, each drop logged and counted.
Periods spooled by an earlier run are sent first.

--off-cpu also records the time threads spend off the CPU, as record
--off-cpu does (sched:sched_switch with the stack each thread leaves the CPU
with, and the task state): each push then has, beside each process's CPU
profile, an off-CPU profile (sample type off_cpu, nanoseconds) weighing each
stack by the time its thread spent off the CPU after leaving it there, under
a leaf frame naming the state ("[off-CPU: S sleeping]", "[off-CPU: D
uninterruptible]", "[off-CPU: R preempted]"). A thread off the CPU across a
cut has the time up to the cut in that period, the rest in the next.

Stacks are frame-pointer walks completed by one step of CFI unwinding from
each sample's registers and first 512 bytes of stack, as record's default
--call-graph fp does: a function that sets up no frame (a leaf built with
-O2, a libc system-call wrapper, a Go leaf function) keeps its caller.

Losses are reported in the pushes, as resource attributes:
nsprof.lost_samples (samples the kernel dropped in the period, and in the
periods before it that had no samples to push),
nsprof.dropped_periods and nsprof.dropped_samples (periods dropped from the
full spool or refused by the receiver since the push before).`,
		Example: `  nsprof agent --otlp-endpoint http://127.0.0.1:4318 --period 10s -F 19
  nsprof agent --protocol grpc --otlp-endpoint otel.example:4317 --tls-ca ca.pem --header Authorization="Bearer $TOKEN"`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Period <= 0 {
				return usagef(cmd, "--period %v: must be positive", o.Period)
			}
			if o.Record.Frequency <= 0 {
				return usagef(cmd, "-F %d: must be positive", o.Record.Frequency)
			}
			var err error
			if o.SpoolMax, err = parseBytes(spoolMax); err != nil {
				return usagef(cmd, "--spool-max: %v", err)
			}
			if o.Record.SymbolCache, err = symbolCacheDir(fl); err != nil {
				return usagef(cmd, "%v", err)
			}
			if o.Client, err = of.client(cmd); err != nil {
				return err
			}
			defer o.Client.Close()
			if o.Spool == "" {
				dir, err := os.UserCacheDir()
				if err != nil {
					return fmt.Errorf("no spool directory: give --spool DIR (%w)", err)
				}
				o.Spool = filepath.Join(dir, "nsprof", "spool")
			}
			// The leaf step, as record's default --call-graph fp: without
			// it, every sample in a function that sets up no frame (a
			// leaf built with -O2, a libc wrapper, a Go leaf) skipped
			// that function's caller, in 85-95 % of the container
			// fixture's stacks in the e2e. At 19 Hz its 512-byte stack
			// copies are some 20 kB a second.
			if _, o.Record.LeafStack, err = parseCallGraph("fp"); err != nil {
				return err
			}
			o.Log = cmd.ErrOrStderr()
			o.Record.Version = versionString()
			o.Record.ReleasePages = releasePages
			st, err := agent.Run(cmd.Context(), o)
			offCPU := ""
			if o.Record.OffCPU {
				offCPU = fmt.Sprintf(", %.3fs off the CPU", float64(st.OffCPU)/1e9)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "nsprof agent: %d periods recorded, %d sent (%d samples%s), %d dropped, %d refused (%d samples), %d retries; the kernel lost %d samples (%d unreported)\n",
				st.Recorded, st.Sent, st.Samples, offCPU, st.Dropped, st.Refused, st.DroppedSamples, st.Retries, st.Lost, st.Unreported)
			return err
		},
	}
	of.register(cmd)
	f := cmd.Flags()
	f.DurationVar(&o.Period, "period", 10*time.Second, "record and send periods of `DURATION`")
	f.IntVarP(&o.Record.Frequency, "freq", "F", 19, "sample at `HZ` per CPU")
	f.BoolVar(&o.Record.OffCPU, "off-cpu", false, "also record the time threads spend off the CPU, with the stack and task state each left it in, pushed as off-CPU profiles (off_cpu, nanoseconds)")
	f.IntVar(&o.Periods, "periods", 0, "stop after `N` periods, once they are sent (default: run until interrupted)")
	f.StringVar(&o.Spool, "spool", "", "keep unsent periods in `DIR` (default $XDG_CACHE_HOME/nsprof/spool)")
	f.StringVar(&fl.symbolCache, "symbol-cache", "", "keep the symbol tables and source lines of the files samples hit in `DIR`, by build-id; a period that samples a file the one before did not reads them from there (default /var/cache/nsprof/symbols for root, else $XDG_CACHE_HOME/nsprof/symbols)")
	f.BoolVar(&fl.noSymbolCache, "no-symbol-cache", false, "neither read nor write the symbol cache: each file's tables are kept in memory while it is mapped")
	f.BoolVar(&o.Record.NoMmapBuildIDs, "no-mmap-build-ids", false, "have the kernel give device and inode numbers of mapped files, not their build-ids, so that perf recording at the same time is not disturbed (see README, Compatibility); build-ids are then read from the files")
	f.StringVar(&spoolMax, "spool-max", "256MB", "keep at most `SIZE` of unsent periods (KB, MB, GB: powers of 1024), dropping the oldest")
	return cmd
}

// parseBytes parses a size: a number of bytes with an optional KB, MB or
// GB suffix (powers of 1024).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	u := strings.ToUpper(strings.TrimSpace(s))
	for _, sfx := range []struct {
		s string
		m int64
	}{{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(u, sfx.s) {
			u, mult = strings.TrimSpace(strings.TrimSuffix(u, sfx.s)), sfx.m
			break
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a positive size such as 256MB", s)
	}
	return n * mult, nil
}
