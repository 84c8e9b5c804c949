#!/usr/bin/env bash
# report-speed.sh: how long `nsprof report` takes against `perf report
# --stdio` on the same workload, each recorded by its own tool for the same
# duration, in one run.
#
# The workload is bench/record-overhead/work.c (a 5-deep call chain in
# THREADS threads, with libc and ld.so mapped); it runs about SECONDS
# seconds under
#   nsprof record -F FREQ -o X -- work ...
#   perf record -g -e cpu-clock -F FREQ -o Y -- work ...
# Then, RUNS times each, alternating:
#   nsprof report X          (text, top functions; symbols from the bundle)
#   perf report --stdio -i Y (default view: children, call graphs)
#   perf report --stdio --no-children -g none -i Y (flat, as nsprof's default)
# and prints the median wall and CPU time of each and the ratios perf/nsprof
# (> 1: nsprof is faster). The same is then done on a multi-process
# capture, where the reports have many processes and DSOs to name: each
# tool records the whole system (-a, ALL_SECONDS) while a loop compiles
# work.c over and over (the cc driver, cc1, as and collect2/ld: hundreds
# of short processes). Each report is timed alone, one at a time. Both reports write to a file, so both print
# every function. The symbol bundling nsprof does at the end of `record`
# is shown from its log line, and timed per DSO by bench/symbolize-dso
# (open the mapped file, find its symbols, build the table: the cost of
# each new DSO).
#
#   bench/report-speed.sh [SECONDS]
#
# Environment: THREADS (2), FREQ (1000), RUNS (5), ALL_SECONDS (10),
# BENCH_DIR (/dev/shm),
# PERF (perf), CC (gcc), KEEP (set to keep the captures and binaries in
# BENCH_DIR, e.g. for profiling nsprof report with NSPROF_CPUPROFILE).
set -euo pipefail

secs=${1:-10}
threads=${THREADS:-2}
freq=${FREQ:-1000}
runs=${RUNS:-5}
all_secs=${ALL_SECONDS:-10}
cc=${CC:-gcc}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
perf=${PERF:-perf}
tmp=$(mktemp -d "$base/nsprof-report-speed.XXXXXX")
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$tmp"' EXIT; fi

"$cc" -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o "$tmp/work" "$root/bench/record-overhead/work.c"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof && go build -o "$tmp/symbolize-dso" ./bench/symbolize-dso)

# Iterations for about secs seconds: calibrate with a short run.
cal=$("$tmp/work" 2000 1 | sed -n 's/.*work_wall_s=\([0-9.]*\).*/\1/p')
iter=$(awk -v c="$cal" -v s="$secs" 'BEGIN { printf "%d", 2000 * s / c }')

echo "== report-speed $(date -u +%Y-%m-%dT%H:%MZ): $(uname -sr), $(nproc) CPUs, $("$perf" --version), nsprof $(cd "$root" && git describe --always --dirty)"
echo "   workload: work $iter iterations x $threads threads (~${secs}s), -F $freq"

"$tmp/nsprof" record -F "$freq" --no-cpu --no-memory --no-disk --no-network -o "$tmp/n.syscap" -f -- "$tmp/work" "$iter" "$threads" >/dev/null 2>"$tmp/nsprof-record.log"
"$perf" record -q -g -e cpu-clock -F "$freq" -o "$tmp/p.data" -- "$tmp/work" "$iter" "$threads" >/dev/null 2>"$tmp/perf-record.log"
echo "   nsprof capture: $(stat -c %s "$tmp/n.syscap") bytes, $("$tmp/nsprof" dump --summary "$tmp/n.syscap" | awk '$1 == "SAMPLE" {print $2}') samples;" \
	"perf.data: $(stat -c %s "$tmp/p.data") bytes, $("$perf" report --stats -i "$tmp/p.data" 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}') samples"
grep -h "bundled" "$tmp/nsprof-record.log" | sed 's/^nsprof: /   nsprof record: /' || true
echo "   symbolization per new DSO (bench/symbolize-dso, open + find symbols + table; first load in the process, then median of 5):"
"$tmp/symbolize-dso" -runs 5 "$tmp/n.syscap" | awk '
	/^dso=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = substr($i, length(kv[1]) + 2) }
		  n = split(v["dso"], parts, "/"); src = v["source"]; sub(/:.*/, "", src)
		  printf "     %-28s %7s symbols from %-9s %8.2f ms first %8.2f ms median\n", parts[n], v["symbols"], src, v["first_ms"], v["median_ms"]; next }
	/^dsos=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		   printf "     %-28s %7s %-22s %8.2f ms first %8.2f ms median\n", v["dsos"] " DSOs", "", "", v["first_ms_total"], v["median_ms_total"]; next }
	{ print "     " $0 }'

# time1 NAME COMMAND... runs COMMAND alone, its output to NAME.out, and
# appends its wall, user and system seconds to the results; a failure
# stops the bench with the command's errors.
time1() {
	local name=$1
	shift
	if ! { time "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; } 2>"$tmp/time"; then
		echo "report-speed: $name failed: $*" >&2
		tail -5 "$tmp/$name.err" >&2
		exit 1
	fi
	echo "$name $(cat "$tmp/time")" >>"$tmp/results"
}

# time_reports LABEL NSPROF_CAPTURE PERF_DATA times the three reports, each
# alone, RUNS times in turn, and prints their medians.
time_reports() {
	local label=$1 n=$2 p=$3
	TIMEFORMAT='%3R %3U %3S'
	: >"$tmp/results"
	for r in $(seq "$runs"); do
		wait
		time1 nsprof "$tmp/nsprof" report "$n"
		time1 perf "$perf" report --stdio -i "$p"
		time1 perf-flat "$perf" report --stdio --no-children -g none -i "$p"
	done
	echo
	echo "   top of nsprof report:"; sed -n 1,12p "$tmp/nsprof.out" | sed 's/^/     /'
	echo "   top of perf report --no-children -g none:"; grep -v '^#' "$tmp/perf-flat.out" | grep -v '^$' | sed -n '1,6s/^/     /p'
	awk -v label="$label" -v runs="$runs" '
	function median(list,   a, k, i, j, v) {
		k = split(list, a, " ")
		for (i = 2; i <= k; i++) { v = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	{ w[$1] = w[$1] " " $2; c[$1] = c[$1] " " ($3 + $4) }
	END {
		n = median(w["nsprof"]); p = median(w["perf"]); f = median(w["perf-flat"])
		nc = median(c["nsprof"]); pc = median(c["perf"]); fc = median(c["perf-flat"])
		print ""
		printf "   %-44s %8s %10s %8s %10s\n", label ": median of " runs " runs", "wall s", "perf/nsprof", "CPU s", "perf/nsprof"
		printf "   %-44s %8.3f %10s %8.3f %10s\n", "nsprof report", n, "-", nc, "-"
		printf "   %-44s %8.3f %9.1fx %8.3f %9.1fx\n", "perf report --stdio", p, p / n, pc, pc / nc
		printf "   %-44s %8.3f %9.1fx %8.3f %9.1fx\n", "perf report --stdio --no-children -g none", f, f / n, fc, fc / nc
	}' "$tmp/results"
}

echo
echo "== 1. single process: work"
time_reports "single process" "$tmp/n.syscap" "$tmp/p.data"

# compile_loop SECONDS compiles work.c again and again for SECONDS.
compile_loop() {
	local end=$(($(date +%s) + $1))
	while [ "$(date +%s)" -lt "$end" ]; do
		"$cc" -O1 -g -pthread -o "$tmp/loop.out" "$root/bench/record-overhead/work.c" || true
	done
}

echo
echo "== 2. multi-process: -a for ${all_secs}s during a loop of $cc compiles"
compile_loop $((all_secs + 2)) &
loop=$!
sleep 1
"$tmp/nsprof" record -a -F "$freq" --no-cpu --no-memory --no-disk --no-network --duration "$all_secs" -v -o "$tmp/na.syscap" -f >/dev/null 2>"$tmp/nsprof-all.log"
wait "$loop"
compile_loop $((all_secs + 2)) &
loop=$!
sleep 1
"$perf" record -q -a -g -e cpu-clock -F "$freq" -o "$tmp/pa.data" -- sleep "$all_secs" >/dev/null 2>"$tmp/perf-all.log"
wait "$loop"
echo "   nsprof capture: $(stat -c %s "$tmp/na.syscap") bytes, $("$tmp/nsprof" dump --summary "$tmp/na.syscap" | awk '$1 == "SAMPLE" {print $2}') samples;" \
	"perf.data: $(stat -c %s "$tmp/pa.data") bytes, $("$perf" report --stats -i "$tmp/pa.data" 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}') samples"
grep -h "bundled" "$tmp/nsprof-all.log" | sed 's/^nsprof: /   nsprof record: /' || true
time_reports "multi-process" "$tmp/na.syscap" "$tmp/pa.data"
[ -n "${KEEP:-}" ] && echo "   kept: $tmp"
true
