#!/usr/bin/env bash
# calls-pidns.sh: what `nsprof record --calls` costs the recorder while a
# program in a PID namespace makes RATE instrumented calls a second (seed
# 004: Orbit's service paid 43 % of a CPU for 340 k scopes/s, 64 % with
# PID-namespace translation).
#
# The program (bench/calls-rate.c) calls libfixture.so's fix_f (built
# with -finstrument-functions, so every call is timed) in bursts each
# millisecond for SECS seconds, then prints its own CPU time. It runs
# under `unshare -p -f --mount-proc`, so its pid inside differs from the
# host's. RUNS runs each of:
#   nsprof record --calls --no-perf -- unshare ... ./rate RATE SECS
#   unshare ... ./rate RATE SECS            (the program alone)
#   nsprof record --calls --no-perf -- unshare ... sleep SECS  (idle)
# The recorder's CPU is the whole command's (GNU time) less the program's
# own; medians are printed, with the calls nsprof counted.
#
#   bench/calls-pidns.sh
#
# Environment: RATE (340000), SECS (10), RUNS (3).
set -euo pipefail
rate=${RATE:-340000}
secs=${SECS:-10}
runs=${RUNS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && make -s build >/dev/null)
ns=$root/bin/nsprof
gcc -O2 -g -fPIC -shared -finstrument-functions -o "$tmp/libfixture.so" "$root/cmd/nsprof/testdata/calls/fixture.c"
gcc -O2 -o "$tmp/rate" "$root/bench/calls-rate.c" -L"$tmp" -lfixture -Wl,-rpath,"$tmp"
pidns=(unshare -p -f --mount-proc)

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
: >"$tmp/rec" && : >"$tmp/alone" && : >"$tmp/idle"
for _ in $(seq "$runs"); do
	/usr/bin/time -o "$tmp/t" -f "%U %S" "$ns" record --calls --no-perf -o "$tmp/r.syscap" -f -- "${pidns[@]}" "$tmp/rate" "$rate" "$secs" >"$tmp/out" 2>"$tmp/err"
	work=$(sed -n 's/.*work_cpu_s=\([0-9.]*\).*/\1/p' "$tmp/out")
	awk -v w="$work" '{ print $1 + $2 - w }' "$tmp/t" >>"$tmp/rec"
	"${pidns[@]}" "$tmp/rate" "$rate" "$secs" | sed -n 's/.*work_cpu_s=\([0-9.]*\).*/\1/p' >>"$tmp/alone"
	/usr/bin/time -o "$tmp/t" -f "%U %S" "$ns" record --calls --no-perf -o "$tmp/i.syscap" -f -- "${pidns[@]}" sleep "$secs" >/dev/null 2>&1
	awk '{ print $1 + $2 }' "$tmp/t" >>"$tmp/idle"
done
counted=$("$ns" report --calls "$tmp/r.syscap" 2>/dev/null | awk '/fix_f/ { print $4; exit }')
rec=$(median <"$tmp/rec") alone=$(median <"$tmp/alone") idle=$(median <"$tmp/idle")
echo "== calls-pidns $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), nsprof $(cd "$root" && git describe --always --dirty)"
echo "   $rate calls/s for $secs s in a PID namespace; nsprof counted $counted calls of fix_f; medians of $runs runs"
awk -v r="$rec" -v a="$alone" -v i="$idle" -v s="$secs" 'BEGIN {
	printf "   recorder CPU %.3f s (%.1f %% of a CPU); idle recorder %.3f s (%.1f %%); program alone %.3f s\n", r, 100 * r / s, i, 100 * i / s, a
}'
