#!/usr/bin/env bash
# report-scale.sh: how the time and memory of `nsprof report` and
# `nsprof export` grow with the capture, against `perf report --stdio
# --no-children`, at three capture sizes of the same system-wide,
# many-process workload.
#
# The workload is Go builds from an empty cache, over and over (the go
# command, compile, asm, link and cgo in many short processes, as the
# capture of a build is), plus bench/record-overhead/work.c in THREADS
# threads. For each duration of SECONDS, nsprof and then perf record it
# for that time:
#   nsprof record -a -F FREQ --duration S -o X
#   perf record -a -g -F FREQ -o Y -- sleep S
# Then, RUNS times each, alternating, with GNU time's wall clock and peak
# resident size:
#   nsprof report X                            (top functions)
#   nsprof export X --format pprof             (to /dev/null)
#   perf report -i Y --stdio --no-children     (the same flat view)
# and prints, per size, the samples and capture size of each tool, the
# median seconds and MiB of each command, perf/nsprof time ratios (> 1:
# nsprof is faster) and nsprof report's peak memory over its capture's
# size (both in MiB).
#
#   bench/report-scale.sh [SECONDS ...]     (default: 2 15 60)
#
# Environment: FREQ (4000), RUNS (5), THREADS (2), RT (set: each timed
# command runs at real-time priority, chrt -f 10, which holds its timings
# on a machine other work loads; the ratios to perf stay like for like),
# BENCH_DIR (/var/tmp:
# captures of a minute are hundreds of MB), PERF (perf), CC (gcc), KEEP
# (set to keep the captures, e.g. for NSPROF_CPUPROFILE), REUSE (the
# directory KEEP left: its n-S.syscap and p-S.data are reported again,
# by the nsprof built now, without recording).
set -euo pipefail

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(2 15 60)
freq=${FREQ:-4000}
runs=${RUNS:-5}
threads=${THREADS:-2}
cc=${CC:-gcc}
perf=${PERF:-perf}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${BENCH_DIR:-/var/tmp}/nsprof-report-scale.XXXXXX")
work_pid=
cleanup() {
	[ -n "$work_pid" ] && kill "$work_pid" 2>/dev/null && wait "$work_pid" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

"$cc" -O1 -g -fno-omit-frame-pointer -pthread -o "$tmp/work" "$root/bench/record-overhead/work.c"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof)
ns=$tmp/nsprof

# workload runs the builds and work.c until killed.
workload() {
	export GOCACHE=$tmp/gocache GOFLAGS=-buildvcs=false
	"$tmp/work" 100000000 "$threads" >/dev/null &
	trap 'kill $! 2>/dev/null; exit 0' TERM
	while :; do
		rm -rf "$GOCACHE"
		(cd "$root" && go build -o /dev/null ./cmd/nsprof) >/dev/null 2>&1 || true
	done
}

echo "== report-scale $(date -u +%Y-%m-%dT%H:%MZ): $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $("$perf" --version), nsprof $(cd "$root" && git describe --always --dirty)${RT:+, each timed command at chrt -f 10}"
echo "   workload: go build from an empty cache, in a loop, and work.c x $threads threads; -a -F $freq; $runs runs each, alternating"

# timed CMD...: appends "wall_s max_rss_kib" of one run to $tmp/t. The
# wall clock is bash's, in microseconds, around GNU time (whose own %e
# counts hundredths of a second: a 2 s capture's report and export take
# 0.05-0.08 s, and those steps made ratios to perf of 5.00 or 5.71 out
# of one run's rounding); GNU time gives the peak resident size.
timed() {
	local t0=${EPOCHREALTIME/[.,]/}
	/usr/bin/time -o "$tmp/rss" -f "%M" ${RT:+chrt -f 10} "$@" >/dev/null 2>"$tmp/err" || {
		echo "failed: $*" >&2
		cat "$tmp/err" >&2
		exit 1
	}
	local t1=${EPOCHREALTIME/[.,]/}
	echo "$(awk -v us=$((10#$t1 - 10#$t0)) 'BEGIN { printf "%.4f", us / 1e6 }') $(cat "$tmp/rss")" >>"$tmp/t"
}

# median FILE COLUMN
median() { awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# record_both SECONDS NSPROF_CAPTURE PERF_DATA records the workload with
# nsprof and then with perf.
record_both() {
	workload &
	work_pid=$!
	sleep 2 # the builds under way
	# One after the other, not side by side: while an event asking for
	# build-ids in MMAP2 records (nsprof's) is open, kernel 6.18 sets
	# the build-id flag on the MMAP2 records of the other events too,
	# and perf 6.1 then aborts ("assertion failed at
	# util/build-id.c:1010") reading its own capture.
	"$ns" record -a -F "$freq" --duration "$1" -o "$2" -f >/dev/null 2>"$tmp/nsprof-record.log"
	# perf 6.1 also aborts in that pass now and then on its own, over
	# hundreds of short-lived processes (the 60 s recording, one run in
	# three): its file is then unreadable, so it records again.
	local try
	for try in 1 2 3; do
		if "$perf" record -q -a -g -e cpu-clock -F "$freq" -o "$3" -- sleep "$1" >/dev/null 2>"$tmp/perf-record.log"; then
			break
		fi
		echo "   perf record of ${1}s failed (try $try of 3): $(grep -v '^\[' "$tmp/perf-record.log" | sort | uniq -c | sort -rn | head -2 | tr -s ' \n' ' ')" >&2
		[ "$try" -lt 3 ] || exit 1
	done
	kill "$work_pid"
	wait "$work_pid" 2>/dev/null || true
	work_pid=
}

printf '\n%6s %9s %8s %9s %8s | %17s %17s %17s | %9s %9s %10s\n' \
	"secs" "nsprof" "MB" "perf" "MB" "nsprof report" "nsprof export" "perf report" "perf/rep" "perf/exp" "peak/size"
printf '%6s %9s %8s %9s %8s | %17s %17s %17s | %9s %9s %10s\n' \
	"" "samples" "" "samples" "" "s       MiB" "s       MiB" "s       MiB" "" "" "report"
for s in "${sizes[@]}"; do
	x=$tmp/n-$s.syscap y=$tmp/p-$s.data
	if [ -n "${REUSE:-}" ]; then
		x=$REUSE/n-$s.syscap y=$REUSE/p-$s.data
	else
		record_both "$s" "$x" "$y"
	fi
	: >"$tmp/rep" && : >"$tmp/exp" && : >"$tmp/perf"
	for _ in $(seq "$runs"); do
		: >"$tmp/t" && timed "$ns" report "$x" && cat "$tmp/t" >>"$tmp/rep"
		: >"$tmp/t" && timed "$ns" export "$x" --format pprof && cat "$tmp/t" >>"$tmp/exp"
		: >"$tmp/t" && timed "$perf" report -i "$y" --stdio --no-children && cat "$tmp/t" >>"$tmp/perf"
	done
	nsamples=$("$ns" dump --summary "$x" | awk '$1 == "SAMPLE" { print $2 }')
	psamples=$("$perf" report --stats -i "$y" 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
	xmb=$(awk -v b="$(stat -c %s "$x")" 'BEGIN { printf "%.1f", b / 1e6 }')
	ymb=$(awk -v b="$(stat -c %s "$y")" 'BEGIN { printf "%.1f", b / 1e6 }')
	rs=$(median "$tmp/rep" 1) rm=$(median "$tmp/rep" 2)
	es=$(median "$tmp/exp" 1) em=$(median "$tmp/exp" 2)
	ps=$(median "$tmp/perf" 1) pm=$(median "$tmp/perf" 2)
	awk -v s="$s" -v ns="$nsamples" -v xmb="$xmb" -v psm="$psamples" -v ymb="$ymb" \
		-v rs="$rs" -v rm="$rm" -v es="$es" -v em="$em" -v ps="$ps" -v pm="$pm" 'BEGIN {
		printf "%6s %9s %8s %9s %8s | %7.3f %9.0f %7.3f %9.0f %7.3f %9.0f | %8.2fx %8.2fx %10.1f\n",
			s, ns, xmb, psm, ymb, rs, rm / 1024, es, em / 1024, ps, pm / 1024,
			ps / rs, ps / es, (rm / 1024) / (xmb / 1.048576)
	}'
done
[ -n "${KEEP:-}" ] && echo "   kept: $tmp"
exit 0
