#!/usr/bin/env bash
# record-overhead.sh: what `nsprof record` costs a CPU-bound program, side
# by side with `perf record` on the same event (cpu-clock), in one run.
#
# Part 1, slowdown: bench/record-overhead/work.c runs a fixed amount of
# work (ITERATIONS calls of a 5-deep call chain in each of THREADS threads)
# and prints the wall and CPU time it measured itself, so the profilers'
# startup and teardown are excluded from "workload wall". RUNS times each,
# alternating (and rotating which goes first), it runs
#   alone:  work ITERATIONS THREADS
#   nsprof: nsprof record -F FREQ --no-cpu --no-memory --no-disk --no-network -o X -f -- work ...
#   perf:   perf record -g -e cpu-clock -F FREQ -o Y -- work ...
# and prints the medians of: the workload's wall and CPU time, the whole
# command's wall time, the CPU time of the profiler process itself (the
# command's user+sys, from getrusage of children, minus the workload's own
# CPU time), the samples captured and the samples lost, with the slowdowns
# against "alone" and the ratios nsprof/perf.
#
# Part 2, lost samples: with every CPU busy (one single-threaded
# internal/testutils/fixtures/callchain per CPU), ALL_RUNS times each
#   nsprof record -a -F ALL_FREQ --duration ALL_SECONDS -o X -f
#   perf record -a -g -F ALL_FREQ -e cpu-clock -o Y -- sleep ALL_SECONDS
# and prints the samples, the samples per second per CPU against the rate
# asked for, the lost samples (nsprof's "(N lost)"; perf's LOST and
# LOST_SAMPLES records) and perf's THROTTLE records.
#
#   bench/record-overhead.sh [ITERATIONS]
#
# Environment: THREADS (default 2), RUNS (5), FREQ (1000), ALL_FREQ (4000),
# ALL_SECONDS (5), ALL_RUNS (2), BENCH_DIR (default /dev/shm: captures go
# to a tmpfs so the disk does not weigh), PERF (default: perf, or the
# newest /usr/bin/perf_*), CC (gcc). Needs root (or perf_event_paranoid
# <= -1 and a readable tracefs) for -a. Results go to stdout only.
set -euo pipefail

iter=${1:-100000}
threads=${THREADS:-2}
runs=${RUNS:-5}
freq=${FREQ:-1000}
all_freq=${ALL_FREQ:-4000}
all_seconds=${ALL_SECONDS:-5}
all_runs=${ALL_RUNS:-2}
cc=${CC:-gcc}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
perf=${PERF:-$(command -v perf || ls /usr/bin/perf_* 2>/dev/null | sort -V | tail -1 || true)}
if [ -z "$perf" ] || ! "$perf" --version >/dev/null 2>&1; then
	echo "record-overhead: perf not found (install linux-perf or set PERF)" >&2
	exit 1
fi
tmp=$(mktemp -d "$base/nsprof-record-overhead.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cflags="-O1 -g -fno-omit-frame-pointer -fno-inline -pthread"
"$cc" $cflags -o "$tmp/work" "$root/bench/record-overhead/work.c"
"$cc" $cflags -o "$tmp/callchain" "$root/internal/testutils/fixtures/callchain.c"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof)
nsprof=$tmp/nsprof
ncpu=$(nproc)

echo "== record-overhead $(date -u +%Y-%m-%dT%H:%MZ): $(uname -sr), $ncpu CPUs ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)),"
echo "   $("$perf" --version), $(go version | cut -d' ' -f3), nsprof $(cd "$root" && git describe --always --dirty 2>/dev/null || echo '?'), output in $tmp ($(stat -f -c %T "$tmp"))"
echo "   perf_event_max_sample_rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate) perf_cpu_time_max_percent=$(cat /proc/sys/kernel/perf_cpu_time_max_percent) perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)"
if [ -r /sys/bus/event_source/devices/cpu/type ]; then
	echo "   hardware PMU: yes (both profilers still sample cpu-clock)"
else
	echo "   hardware PMU: none (software cpu-clock events only)"
fi

# num FILE KEY prints the number after "KEY=" in FILE, or nothing.
num() { sed -n "s/.*\\b$2=\\([0-9.]*\\).*/\\1/p" "$1" | head -1; }

# perf_stats FILE prints "samples lost throttles" of a perf.data file:
# SAMPLE records, samples lost (the sum of PERF_RECORD_LOST and
# PERF_RECORD_LOST_SAMPLES counts) and PERF_RECORD_THROTTLE records.
perf_stats() {
	local samples
	samples=$("$perf" report --stats -i "$1" 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
	"$perf" report -D -i "$1" 2>/dev/null | awk -v s="${samples:-?}" '
		/PERF_RECORD_LOST/ && match($0, /lost:? *[0-9]+/) { x = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", x); lost += x; next }
		/PERF_RECORD_THROTTLE/ { thr++ }
		END { printf "%s %d %d\n", s, lost, thr }'
}

# nsprof_stats FILE STDERR prints "samples lost": SAMPLE frames in the
# capture and the "(N lost)" of nsprof's closing summary.
nsprof_stats() {
	local samples lost
	samples=$("$nsprof" dump --summary "$1" | awk '$1 == "SAMPLE" {print $2; exit}')
	lost=$(sed -n 's/.*(\([0-9]*\) lost).*/\1/p' "$2" | head -1)
	echo "${samples:-0} ${lost:-0}"
}

TIMEFORMAT='cmd_wall_s=%3R cmd_user_s=%3U cmd_sys_s=%3S'

# run1 MODE REP runs one part-1 measurement and appends its line to results.
run1() {
	local mode=$1 rep=$2 cmd
	case $mode in
	alone) cmd=("$tmp/work" "$iter" "$threads") ;;
	nsprof) cmd=("$nsprof" record -F "$freq" --no-cpu --no-memory --no-disk --no-network -o "$tmp/out.syscap" -f -- "$tmp/work" "$iter" "$threads") ;;
	perf) cmd=("$perf" record -g -e cpu-clock -F "$freq" -o "$tmp/out.perf" -- "$tmp/work" "$iter" "$threads") ;;
	esac
	rm -f "$tmp/out.syscap" "$tmp/out.perf"
	{ time "${cmd[@]}" >"$tmp/stdout" 2>"$tmp/stderr"; } 2>"$tmp/time" || {
		echo "record-overhead: $mode run $rep failed:" >&2
		cat "$tmp/stderr" >&2
		exit 1
	}
	local samples=0 lost=0 thr=0
	case $mode in
	nsprof) read -r samples lost < <(nsprof_stats "$tmp/out.syscap" "$tmp/stderr") ;;
	perf) read -r samples lost thr < <(perf_stats "$tmp/out.perf") ;;
	esac
	local ww wc cw cu cs
	ww=$(num "$tmp/stdout" work_wall_s) wc=$(num "$tmp/stdout" work_cpu_s)
	cw=$(num "$tmp/time" cmd_wall_s) cu=$(num "$tmp/time" cmd_user_s) cs=$(num "$tmp/time" cmd_sys_s)
	local line
	line=$(awk -v m="$mode" -v r="$rep" -v ww="$ww" -v wc="$wc" -v cw="$cw" -v cu="$cu" -v cs="$cs" \
		-v s="$samples" -v l="$lost" -v t="$thr" 'BEGIN {
		printf "mode=%s rep=%d work_wall_s=%.3f work_cpu_s=%.3f cmd_wall_s=%.3f prof_cpu_s=%.3f samples=%d lost=%d throttles=%d\n",
			m, r, ww, wc, cw, cu + cs - wc, s, l, t }')
	echo "   $line"
	echo "$line" >>"$tmp/results"
}

echo
echo "== 1. slowdown: work $iter iterations x $threads threads, -F $freq, $runs runs each (alternating)"
: >"$tmp/results"
modes=(alone nsprof perf)
for rep in $(seq "$runs"); do
	for k in 0 1 2; do
		run1 "${modes[$(((rep + k) % 3))]}" "$rep"
	done
done

awk -v freq="$freq" '
function field(name,   i, kv) {
	for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
}
function median(list,   a, k, i, j, v) {
	k = split(list, a, " ")
	for (i = 2; i <= k; i++) {
		v = a[i] + 0
		for (j = i - 1; j >= 1 && a[j] + 0 > v; j--) a[j + 1] = a[j]
		a[j + 1] = v
	}
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{
	m = field("mode")
	for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "mode" && kv[1] != "rep") v[m, kv[1]] = v[m, kv[1]] " " kv[2] }
}
function med(m, k) { return median(v[m, k]) }
function pct(x, base) { return sprintf("%+.1f%%", 100 * (x / base - 1)) }
function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
END {
	aw = med("alone", "work_wall_s"); nw = med("nsprof", "work_wall_s"); pw = med("perf", "work_wall_s")
	ac = med("alone", "work_cpu_s"); nc = med("nsprof", "work_cpu_s"); pc = med("perf", "work_cpu_s")
	ax = med("alone", "cmd_wall_s"); nx = med("nsprof", "cmd_wall_s"); px = med("perf", "cmd_wall_s")
	np = med("nsprof", "prof_cpu_s"); pp = med("perf", "prof_cpu_s")
	ns = med("nsprof", "samples"); ps = med("perf", "samples")
	nl = med("nsprof", "lost"); pl = med("perf", "lost")
	print ""
	printf "   %-34s %9s %9s %9s %12s\n", "median of runs", "alone", "nsprof", "perf", "nsprof/perf"
	printf "   %-34s %9.3f %9.3f %9.3f %12s\n", "workload wall (s)", aw, nw, pw, ratio(nw, pw)
	printf "   %-34s %9s %9s %9s %12s\n", "  slowdown vs alone", "", pct(nw, aw), pct(pw, aw), ratio(nw - aw, pw - aw)
	printf "   %-34s %9.3f %9.3f %9.3f %12s\n", "workload CPU (s)", ac, nc, pc, ratio(nc, pc)
	printf "   %-34s %9s %9s %9s %12s\n", "  increase vs alone", "", pct(nc, ac), pct(pc, ac), ratio(nc - ac, pc - ac)
	printf "   %-34s %9.3f %9.3f %9.3f %12s\n", "whole command wall (s)", ax, nx, px, ratio(nx, px)
	printf "   %-34s %9s %9s %9s %12s\n", "  slowdown vs alone", "", pct(nx, ax), pct(px, ax), ratio(nx - ax, px - ax)
	printf "   %-34s %9s %9.3f %9.3f %12s\n", "profiler process CPU (s)", "-", np, pp, ratio(np, pp)
	printf "   %-34s %9s %9d %9d %12s\n", "samples captured", "-", ns, ps, ratio(ns, ps)
	printf "   %-34s %9s %9.0f %9.0f %12s\n", "  per workload CPU-second", "-", ns / nc, ps / pc, ratio(ns / nc, ps / pc)
	printf "   %-34s %9s %9d %9d\n", "samples lost", "-", nl, pl
	print "   (slowdown rows: ratio of the overheads, (nsprof-alone)/(perf-alone); noisy when both are small)"
}' "$tmp/results"

echo
echo "== 2. lost samples: -a -F $all_freq for ${all_seconds}s with all $ncpu CPUs busy, $all_runs runs each"
rate_before=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
dmesg_before=$(dmesg 2>/dev/null | grep -c 'perf: interrupt took too long' || true)
busy_pids=()
start_busy() {
	busy_pids=()
	for _ in $(seq "$ncpu"); do
		"$tmp/callchain" "$((all_seconds + 3))" 0 nofork >/dev/null &
		busy_pids+=($!)
	done
	sleep 0.5
}
stop_busy() {
	for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${busy_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
for rep in $(seq "$all_runs"); do
	for mode in nsprof perf; do
		start_busy
		rm -f "$tmp/all.syscap" "$tmp/all.perf"
		if [ "$mode" = nsprof ]; then
			{ time "$nsprof" record -a -F "$all_freq" --duration "$all_seconds" -o "$tmp/all.syscap" -f >/dev/null 2>"$tmp/stderr"; } 2>"$tmp/time" || true
			read -r samples lost < <(nsprof_stats "$tmp/all.syscap" "$tmp/stderr")
			thr="n/a"
		else
			{ time "$perf" record -a -g -F "$all_freq" -e cpu-clock -o "$tmp/all.perf" -- sleep "$all_seconds" >/dev/null 2>"$tmp/stderr"; } 2>"$tmp/time" || true
			read -r samples lost thr < <(perf_stats "$tmp/all.perf")
		fi
		stop_busy
		cu=$(num "$tmp/time" cmd_user_s) cs=$(num "$tmp/time" cmd_sys_s)
		awk -v m="$mode" -v r="$rep" -v s="$samples" -v l="$lost" -v t="$thr" -v cu="$cu" -v cs="$cs" \
			-v sec="$all_seconds" -v n="$ncpu" -v f="$all_freq" 'BEGIN {
			printf "   %-6s run %d: samples %7d  %6.0f/s per CPU (%.1f%% of %d Hz)  lost %d  throttle records %s  profiler CPU %.2fs\n",
				m, r, s, s / sec / n, 100 * s / sec / n / f, f, l, t, cu + cs }'
		grep -iE 'lost|throttl|warn' "$tmp/stderr" | sed 's/^/          /' || true
	done
done
dmesg_after=$(dmesg 2>/dev/null | grep -c 'perf: interrupt took too long' || true)
echo "   perf_event_max_sample_rate before/after: $rate_before/$(cat /proc/sys/kernel/perf_event_max_sample_rate);" \
	"new 'perf: interrupt took too long' kernel messages: $((dmesg_after - dmesg_before))"
echo "   (nsprof does not count THROTTLE records; a throttled nsprof shows as a rate below $all_freq Hz)"
