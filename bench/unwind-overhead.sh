#!/usr/bin/env bash
# unwind-overhead.sh: what `nsprof record --call-graph dwarf` costs, side by
# side with `perf record --call-graph dwarf` on the same event (cpu-clock),
# rate and stack copy size, in one run.
#
# The workload is internal/testutils/fixtures/omitfp.c built -O2
# -fomit-frame-pointer (THREADS threads plus a forked child, for SECONDS,
# its hot code called back by libc's qsort), which prints the CPU time it
# used itself (OMITFP_RUSAGE=1). Part 1 runs, RUNS times each, alternating
# (rotating which goes first),
#   alone:  omitfp SECONDS THREADS
#   nsprof: nsprof record -F FREQ --call-graph dwarf,SIZE --no-cpu --no-memory --no-disk --no-network -- omitfp ...
#   perf:   perf record -e cpu-clock -F FREQ --call-graph dwarf,SIZE -- omitfp ...
# and prints the medians of the profiler's own CPU time (the command's
# user+sys from getrusage of children, minus the workload's), samples and
# lost samples. nsprof unwinds while recording; perf leaves the unwinding
# to `perf report`, so the CPU time of `perf report --stdio` on the same
# file is shown too, and the sum. Each command is timed alone: the sample
# and lost-sample counts (perf report -D) are taken before, and waited for.
#
# Part 2, lost samples: with every CPU busy (one omitfp per CPU), ALL_RUNS
# times each, nsprof record -a and perf record -a, both -F FREQ
# --call-graph dwarf,SIZE, for ALL_SECONDS.
#
#   bench/unwind-overhead.sh [SECONDS]
#
# Environment: THREADS (default 1), RUNS (5), FREQ (1000), SIZE (8192),
# ALL_SECONDS (5), ALL_RUNS (2), BENCH_DIR (default /dev/shm), PERF, CC.
# Needs root. Results go to stdout only.
set -euo pipefail

seconds=${1:-3}
threads=${THREADS:-1}
runs=${RUNS:-5}
freq=${FREQ:-1000}
size=${SIZE:-8192}
all_seconds=${ALL_SECONDS:-5}
all_runs=${ALL_RUNS:-2}
cc=${CC:-gcc}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
perf=${PERF:-$(command -v perf || ls /usr/bin/perf_* 2>/dev/null | sort -V | tail -1 || true)}
if [ -z "$perf" ] || ! "$perf" --version >/dev/null 2>&1; then
	echo "unwind-overhead: perf not found (install linux-perf or set PERF)" >&2
	exit 1
fi
tmp=$(mktemp -d "$base/nsprof-unwind-overhead.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$cc" -O2 -fomit-frame-pointer -g -pthread -o "$tmp/omitfp" "$root/internal/testutils/fixtures/omitfp.c"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof)
nsprof=$tmp/nsprof
ncpu=$(nproc)
export OMITFP_RUSAGE=1

echo "== unwind-overhead $(date -u +%Y-%m-%dT%H:%MZ): $(uname -sr), $ncpu CPUs, $("$perf" --version), nsprof $(cd "$root" && git describe --always --dirty 2>/dev/null || echo '?')"
echo "   workload: omitfp $seconds s, $threads thread(s) + main + forked child; -F $freq; --call-graph dwarf,$size"

num() { sed -n "s/.*\\b$2=\\([0-9.]*\\).*/\\1/p" "$1" | head -1; }

perf_stats() {
	local samples
	samples=$("$perf" report --stats -i "$1" 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
	"$perf" report -D -i "$1" 2>/dev/null | awk -v s="${samples:-?}" '
		/PERF_RECORD_LOST/ && match($0, /lost:? *[0-9]+/) { x = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", x); lost += x; next }
		END { printf "%s %d\n", s, lost }'
}

nsprof_stats() {
	local samples lost
	samples=$("$nsprof" dump --summary "$1" | awk '$1 == "SAMPLE" {print $2; exit}')
	lost=$(sed -n 's/.*(\([0-9]*\) lost).*/\1/p' "$2" | head -1)
	echo "${samples:-0} ${lost:-0}"
}

TIMEFORMAT='cmd_wall_s=%3R cmd_user_s=%3U cmd_sys_s=%3S'

run1() {
	local mode=$1 rep=$2 cmd
	case $mode in
	alone) cmd=("$tmp/omitfp" "$seconds" "$threads") ;;
	nsprof) cmd=("$nsprof" record -F "$freq" --call-graph "dwarf,$size" --no-cpu --no-memory --no-disk --no-network -o "$tmp/out.syscap" -f -- "$tmp/omitfp" "$seconds" "$threads") ;;
	perf) cmd=("$perf" record -e cpu-clock -F "$freq" --call-graph "dwarf,$size" -o "$tmp/out.perf" -- "$tmp/omitfp" "$seconds" "$threads") ;;
	esac
	rm -f "$tmp/out.syscap" "$tmp/out.perf"
	wait # no child of an earlier step is reaped into this timing
	{ time "${cmd[@]}" >"$tmp/stdout" 2>"$tmp/stderr"; } 2>"$tmp/time" || {
		echo "unwind-overhead: $mode run $rep failed:" >&2
		cat "$tmp/stderr" >&2
		exit 1
	}
	local samples=0 lost=0 rep_cpu=0
	case $mode in
	nsprof)
		nsprof_stats "$tmp/out.syscap" "$tmp/stderr" >"$tmp/stats"
		read -r samples lost <"$tmp/stats"
		;;
	perf)
		# The counts first, each command waited for: bash's time takes
		# the CPU of every child reaped while it runs, and a process
		# substitution (perf report -D, seconds of CPU) is reaped late,
		# into the timed perf report. The report is timed alone.
		perf_stats "$tmp/out.perf" >"$tmp/stats"
		read -r samples lost <"$tmp/stats"
		wait
		{ time "$perf" report --stdio -i "$tmp/out.perf" >/dev/null 2>&1; } 2>"$tmp/rtime"
		rep_cpu=$(awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "cmd_user_s" || kv[1] == "cmd_sys_s") c += kv[2] } } END { print c }' "$tmp/rtime")
		;;
	esac
	local wc cu cs line
	wc=$(num "$tmp/stdout" work_cpu_s) cu=$(num "$tmp/time" cmd_user_s) cs=$(num "$tmp/time" cmd_sys_s)
	line=$(awk -v m="$mode" -v r="$rep" -v wc="$wc" -v cu="$cu" -v cs="$cs" -v s="$samples" -v l="$lost" -v rc="$rep_cpu" 'BEGIN {
		printf "mode=%s rep=%d work_cpu_s=%.3f prof_cpu_s=%.3f report_cpu_s=%.3f samples=%d lost=%d\n", m, r, wc, cu + cs - wc, rc, s, l }')
	echo "   $line"
	echo "$line" >>"$tmp/results"
}

echo
echo "== 1. profiler CPU: $runs runs each (alternating)"
: >"$tmp/results"
modes=(alone nsprof perf)
for rep in $(seq "$runs"); do
	for k in 0 1 2; do
		run1 "${modes[$(((rep + k) % 3))]}" "$rep"
	done
done

awk '
function field(name,   i, kv) { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] } }
function median(list,   a, k, i, j, v) {
	k = split(list, a, " ")
	for (i = 2; i <= k; i++) { v = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ m = field("mode"); for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "mode" && kv[1] != "rep") v[m, kv[1]] = v[m, kv[1]] " " kv[2] } }
function med(m, k) { return median(v[m, k]) }
function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
END {
	ac = med("alone", "work_cpu_s"); nc = med("nsprof", "work_cpu_s"); pc = med("perf", "work_cpu_s")
	np = med("nsprof", "prof_cpu_s"); pp = med("perf", "prof_cpu_s"); pr = med("perf", "report_cpu_s")
	ns = med("nsprof", "samples"); ps = med("perf", "samples")
	print ""
	printf "   %-40s %9s %9s %9s %12s\n", "median of runs", "alone", "nsprof", "perf", "nsprof/perf"
	printf "   %-40s %9.3f %9.3f %9.3f %12s\n", "workload CPU (s)", ac, nc, pc, ratio(nc, pc)
	printf "   %-40s %9s %9.3f %9.3f %12s\n", "recorder CPU (s)", "-", np, pp, ratio(np, pp)
	printf "   %-40s %9s %9s %9.3f\n", "perf report CPU, its offline unwind (s)", "-", "-", pr
	printf "   %-40s %9s %9.3f %9.3f %12s\n", "recorder + unwinding CPU (s)", "-", np, pp + pr, ratio(np, pp + pr)
	printf "   %-40s %9s %9d %9d %12s\n", "samples", "-", ns, ps, ratio(ns, ps)
	printf "   %-40s %9s %9.1f %9.1f %12s\n", "recorder CPU per 1000 samples (ms)", "-", 1e6 * np / ns, 1e6 * pp / ps, ratio(np / ns, pp / ps)
	printf "   %-40s %9s %9d %9d\n", "samples lost", "-", med("nsprof", "lost"), med("perf", "lost")
}' "$tmp/results"
grep -h "dwarf unwinding" "$tmp/stderr" 2>/dev/null | sed 's/^/   last nsprof run: /' || true

echo
echo "== 2. lost samples: -a -F $freq --call-graph dwarf,$size for ${all_seconds}s with all $ncpu CPUs busy, $all_runs runs each"
busy_pids=()
start_busy() {
	busy_pids=()
	for _ in $(seq "$ncpu"); do
		OMITFP_RUSAGE=0 "$tmp/omitfp" "$((all_seconds + 2))" 0 >/dev/null &
		busy_pids+=($!)
	done
	sleep 0.5
}
# stop_busy waits for the busy fixtures (and their forked children, which
# end at the same time) to finish by themselves.
stop_busy() {
	for p in "${busy_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	sleep 0.2
}
for rep in $(seq "$all_runs"); do
	for mode in nsprof perf; do
		start_busy
		if [ "$mode" = nsprof ]; then
			"$nsprof" record -a -F "$freq" --call-graph "dwarf,$size" --no-cpu --no-memory --no-disk --no-network --duration "$all_seconds" -o "$tmp/all.syscap" -f 2>"$tmp/all.err" >/dev/null
			nsprof_stats "$tmp/all.syscap" "$tmp/all.err" >"$tmp/stats"
			read -r samples lost <"$tmp/stats"
		else
			"$perf" record -a -e cpu-clock -F "$freq" --call-graph "dwarf,$size" -o "$tmp/all.perf" -- sleep "$all_seconds" 2>"$tmp/all.err" >/dev/null
			perf_stats "$tmp/all.perf" >"$tmp/stats"
			read -r samples lost <"$tmp/stats"
		fi
		stop_busy
		awk -v m="$mode" -v r="$rep" -v s="$samples" -v l="$lost" -v n="$ncpu" -v d="$all_seconds" -v f="$freq" 'BEGIN {
			printf "   mode=%s rep=%d samples=%d per_cpu_per_s=%.0f (asked %d) lost=%d\n", m, r, s, s / n / d, f, l }'
	done
done
