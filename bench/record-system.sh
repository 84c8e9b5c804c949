#!/usr/bin/env bash
# record-system.sh: what a system-wide recording costs the recorder itself,
# nsprof against perf, over the same workload, in one run.
#
# Two workloads run in the background for the whole bench, one after the
# other:
#   busy:    one single-threaded internal/testutils/fixtures/callchain per
#            CPU (every CPU busy with one long-lived process)
#   compile: a loop of `go tool compile` of a generated 200-function file
#            and `go vet` of it: short-lived processes of the same toolchain
#            binaries, hundreds of pids mapping the same files
# Over each, RUNS times, alternating which goes first, each timed alone
# (the other recorder not running):
#   nsprof record -a -F FREQ --duration SECONDS -o X -f [--no-symbol-cache]
#   perf record -a -g -F FREQ -e cpu-clock -o Y -- sleep SECONDS
# nsprof runs twice per round: with its symbol cache (a private directory,
# warmed by two untimed recordings of the workload before the rounds: what
# a recording of binaries recorded before costs, once the symbol cache
# filler the recordings start has cached whole the files with DWARF they
# read) and without (what the first
# recording costs: every file read). Each recorder's CPU (user+sys of
# the recorder process, from GNU time) and peak RSS are printed per run,
# then the medians and the ratios nsprof/perf. perf's figures are those of
# `perf record` only: it names nothing at record time (perf report does),
# while nsprof's include bundling the symbols and source lines; so after
# each perf run, `perf report --stdio --no-children -g caller` of its
# file is timed too (its CPU printed as report_cpu_s; PERF_REPORT=0 skips
# it), and the medians add a line comparing nsprof with perf record plus
# that report: what a named profile costs with each.
#
#   bench/record-system.sh [SECONDS]
#
# Each result line carries the 1-minute load average when the run began:
# the machine is shared, quote ratios of one round with it.
#
# Environment: FREQS ("1000 4000"), RUNS (5), WORKLOADS ("busy compile"),
# BENCH_DIR (default /dev/shm: captures go to a tmpfs so the disk does not
# weigh), PERF (perf), CC (gcc), NSPROF (a built nsprof; default: build
# this checkout), NSPROF_OLD (another build, run without the cache in
# the same rotation: before and after a change), OLD_CACHE (set to 1:
# NSPROF_OLD runs with a symbol cache of its own too, warmed as nsprof's
# is: before and after a change to the cache). Needs root. Results go to
# stdout only.
set -euo pipefail

secs=${1:-10}
freqs=${FREQS:-1000 4000}
runs=${RUNS:-5}
workloads=${WORKLOADS:-busy compile}
cc=${CC:-gcc}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
perf=${PERF:-perf}
if ! "$perf" --version >/dev/null 2>&1; then
	echo "record-system: perf not found (install linux-perf or set PERF)" >&2
	exit 1
fi
if [ ! -x /usr/bin/time ]; then
	echo "record-system: /usr/bin/time not found (install the time package)" >&2
	exit 1
fi
tmp=$(mktemp -d "$base/nsprof-record-system.XXXXXX")
bg=()
cleanup() {
	for p in "${bg[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

"$cc" -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -o "$tmp/callchain" "$root/internal/testutils/fixtures/callchain.c"
nsprof=${NSPROF:-}
if [ -z "$nsprof" ]; then
	(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof)
	nsprof=$tmp/nsprof
fi
ncpu=$(nproc)

# The compile workload's source: 200 small types and functions, no imports.
# shellcheck source=lib/compile-src.sh
. "$root/bench/lib/compile-src.sh"
# shellcheck source=lib/filler.sh
. "$root/bench/lib/filler.sh"
write_compile_src "$tmp/src"

# start_workload NAME starts the background workload in its own process
# group.
start_workload() {
	case $1 in
	busy)
		for _ in $(seq "$ncpu"); do
			setsid "$tmp/callchain" 100000 0 nofork >/dev/null &
			bg+=($!)
		done
		;;
	compile)
		setsid bash -c 'cd "$1" && while :; do go tool compile -p main -o x.o main.go; go vet main.go >/dev/null 2>&1 || true; done' _ "$tmp/src" &
		bg+=($!)
		;;
	esac
	sleep 1
}
stop_workload() {
	for p in "${bg[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
	for p in "${bg[@]}"; do wait "$p" 2>/dev/null || true; done
	bg=()
}

echo "== record-system $(date -u +%Y-%m-%dT%H:%MZ): $(uname -sr), $ncpu CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   $("$perf" --version), nsprof $(cd "$root" && git describe --always --dirty 2>/dev/null || echo '?'), ${secs}s per recording, output in $tmp"

# run1 WORKLOAD FREQ MODE REP records once and appends a result line.
run1() {
	local w=$1 f=$2 mode=$3 rep=$4 cmd
	case $mode in
	nsprof) cmd=("$nsprof" record -a -F "$f" --duration "$secs" --symbol-cache "$tmp/symcache" -o "$tmp/x.syscap" -f) ;;
	nsprof-nocache) cmd=("$nsprof" record -a -F "$f" --duration "$secs" --no-symbol-cache -o "$tmp/x.syscap" -f) ;;
	nsprof-old) cmd=("$NSPROF_OLD" record -a -F "$f" --duration "$secs" --no-symbol-cache -o "$tmp/x.syscap" -f) ;;
	nsprof-old-cache) cmd=("$NSPROF_OLD" record -a -F "$f" --duration "$secs" --symbol-cache "$tmp/symcache-old" -o "$tmp/x.syscap" -f) ;;
	perf) cmd=("$perf" record -a -g -F "$f" -e cpu-clock -o "$tmp/x.perf" -- sleep "$secs") ;;
	esac
	rm -f "$tmp/x.syscap" "$tmp/x.perf"
	local load
	load=$(cut -d' ' -f1 /proc/loadavg)
	if ! /usr/bin/time -f 'cpu_s=%U+%S rss_kb=%M wall_s=%e' -o "$tmp/time" "${cmd[@]}" >/dev/null 2>"$tmp/stderr"; then
		# perf 6.1 has aborted in its end-of-record build-id pass
		# ("assertion failed at util/build-id.c", stack smashing) over
		# hundreds of short-lived processes: say so, leave the run out.
		# Its figures up to the abort are printed, left out of the medians.
		echo "   workload=$w freq=$f mode=$mode rep=$rep FAILED after $(sed -n 's/.*cpu_s=\([0-9.+]*\) rss_kb=\([0-9]*\).*/cpu_s=\1 rss_kb=\2/p' "$tmp/time") ($(grep -v '^\[' "$tmp/stderr" | sort | uniq -c | sort -rn | head -2 | tr -s ' \n' ' '))"
		return 0
	fi
	# A filler the recording started would run, and be sampled, in the
	# next timed run: its cost is its own (not the recorder's), so it is
	# waited for, and its CPU said apart.
	wait_filler "$tmp/stderr"
	local fill=""
	if [ -n "$(filler_pid "$tmp/stderr")" ]; then
		local cache=$tmp/symcache
		[ "$mode" = nsprof-old-cache ] && cache=$tmp/symcache-old
		fill=" filler_cpu_s=$(filler_usage "$cache" "$(filler_pid "$tmp/stderr")" | cut -d' ' -f1)"
	fi
	local cpu rss wall
	cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\)+\([0-9.]*\).*/\1 \2/p' "$tmp/time" | awk '{printf "%.2f", $1 + $2}')
	rss=$(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' "$tmp/time")
	wall=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$tmp/time")
	# What naming perf's samples costs: perf names nothing at record
	# time, perf report does (every address of every callchain with -g),
	# where nsprof's figures include its bundle. Timed alone, after.
	local named=""
	if [ "$mode" = perf ] && [ "${PERF_REPORT:-1}" = 1 ]; then
		if /usr/bin/time -f 'cpu_s=%U+%S rss_kb=%M' -o "$tmp/time2" "$perf" report -i "$tmp/x.perf" --stdio --no-children -g caller >/dev/null 2>&1; then
			named=" report_cpu_s=$(sed -n 's/.*cpu_s=\([0-9.]*\)+\([0-9.]*\).*/\1 \2/p' "$tmp/time2" | awk '{printf "%.2f", $1 + $2}') report_rss_mb=$(($(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' "$tmp/time2") / 1024))"
		fi
	fi
	local line="workload=$w freq=$f mode=$mode rep=$rep cpu_s=$cpu rss_mb=$((rss / 1024)) wall_s=$wall load=$load$fill$named"
	echo "   $line"
	echo "$line" >>"$tmp/results"
}

: >"$tmp/results"
modes=(nsprof nsprof-nocache perf)
[ -n "${NSPROF_OLD:-}" ] && modes+=(nsprof-old)
[ -n "${NSPROF_OLD:-}" ] && [ "${OLD_CACHE:-}" = 1 ] && modes+=(nsprof-old-cache)
for w in $workloads; do
	start_workload "$w"
	# Warm the symbol cache with this workload's binaries, untimed: the
	# filler each recording starts in the background caches whole the
	# files with DWARF it read (waited for: it would run in the timed
	# rounds, and be sampled by them).
	for _ in 1 2; do
		"$nsprof" record -a -F "${freqs%% *}" --duration "$secs" --symbol-cache "$tmp/symcache" -o "$tmp/x.syscap" -f >/dev/null 2>"$tmp/warm.err" || true
		wait_filler "$tmp/warm.err"
		if [[ " ${modes[*]} " == *" nsprof-old-cache "* ]]; then
			"$NSPROF_OLD" record -a -F "${freqs%% *}" --duration "$secs" --symbol-cache "$tmp/symcache-old" -o "$tmp/x.syscap" -f >/dev/null 2>"$tmp/warm.err" || true
			wait_filler "$tmp/warm.err"
		fi
	done
	for f in $freqs; do
		echo
		echo "== $w, -F $f, $runs rounds (each recorder alone in turn, order rotating)"
		for rep in $(seq "$runs"); do
			for k in $(seq 0 $((${#modes[@]} - 1))); do
				run1 "$w" "$f" "${modes[$(((rep + k) % ${#modes[@]}))]}" "$rep"
			done
		done
	done
	stop_workload
done

echo
awk '
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
	key = field("workload") " -F " field("freq")
	if (!(key in seen)) { seen[key] = 1; order[++n] = key }
	m = field("mode")
	cpu[key, m] = cpu[key, m] " " field("cpu_s")
	rss[key, m] = rss[key, m] " " field("rss_mb")
	if (m == "perf" && field("report_cpu_s") != "")
		named[key] = named[key] " " (field("cpu_s") + field("report_cpu_s"))
	ld[key] = ld[key] " " field("load")
}
END {
	printf "   %-18s %-26s %-26s %-16s %-46s %s\n", "medians", "nsprof (cache) cpu/rss", "nsprof (no cache) cpu/rss", "perf cpu/rss", "ratios nsprof/perf cpu, rss (cache; no cache)", "load"
	for (i = 1; i <= n; i++) {
		k = order[i]
		nc = median(cpu[k, "nsprof"]); nr = median(rss[k, "nsprof"])
		xc = median(cpu[k, "nsprof-nocache"]); xr = median(rss[k, "nsprof-nocache"])
		if (cpu[k, "perf"] == "") {
			printf "   %-18s %8.2fs %6d MB          %8.2fs %6d MB          (every perf run failed)\n", k, nc, nr, xc, xr
			continue
		}
		pc = median(cpu[k, "perf"]); pr = median(rss[k, "perf"])
		if (cpu[k, "nsprof-old"] != "")
			printf "   %-18s NSPROF_OLD (no cache) %.2fs %d MB: ratios to perf %.2f, %.2f\n", k, median(cpu[k, "nsprof-old"]), median(rss[k, "nsprof-old"]), median(cpu[k, "nsprof-old"]) / pc, median(rss[k, "nsprof-old"]) / pr
		if (cpu[k, "nsprof-old-cache"] != "")
			printf "   %-18s NSPROF_OLD (cache) %.2fs %d MB: ratios to perf %.2f, %.2f\n", k, median(cpu[k, "nsprof-old-cache"]), median(rss[k, "nsprof-old-cache"]), median(cpu[k, "nsprof-old-cache"]) / pc, median(rss[k, "nsprof-old-cache"]) / pr
		printf "   %-18s %8.2fs %6d MB          %8.2fs %6d MB          %6.2fs %4d MB   %-46s %.2f\n",
			k, nc, nr, xc, xr, pc, pr, sprintf("%.2f, %.2f; %.2f, %.2f", nc / pc, nr / pr, xc / pc, xr / pr), median(ld[k])
		if (named[k] != "") {
			qc = median(named[k])
			printf "   %-18s perf record + perf report -g (what naming its samples adds) %.2fs: ratios nsprof/that %.2f (cache), %.2f (no cache)\n", k, qc, nc / qc, xc / qc
		}
	}
}' "$tmp/results"
