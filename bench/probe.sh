#!/usr/bin/env bash
# probe.sh: what a probed call costs under `nsprof record --probe`, side
# by side with perf's own user probes (`perf probe` + `perf record -e
# probe_...`) on the same function, in one run: the --calls test
# fixture (cmd/nsprof/testdata/calls) built without instrumentation,
# libfixture.so's fix_f called N times, probed at its entry and return.
#
# Each tool records the whole program as a user would (wall time of its
# command, start-up and finishing included), with N calls and with none
# (fix_run(0): about a thousand calls of fix_g); the cost per call is the
# difference over N, less the same for the program alone. RUNS runs of
# each, interleaved; the medians are shown. perf's return probe is placed
# by address: `perf probe fix_f%return` also probes the return of
# libfixture.so's fix_f@plt stub, a third trap a call.
#
#   bench/probe.sh
#
# Environment: CALLS (200000), RUNS (5), BENCH_DIR (/dev/shm).
# Needs root, gcc and perf (scripts/install-deps.sh).
set -euo pipefail

calls=${CALLS:-200000}
runs=${RUNS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
tmp=$(mktemp -d "$base/nsprof-probe.XXXXXX")
group=nsprof_bench_$$
trap 'perf probe -q -d "$group:*" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

nsprof=$root/bin/nsprof
[ -x "$nsprof" ] || (cd "$root" && make -s build)
src=$root/cmd/nsprof/testdata/calls
gcc -O2 -g -fPIC -shared -o "$tmp/libfixture.so" "$src/fixture.c"
gcc -O2 -g -o "$tmp/main" "$src/main.c" -L"$tmp" -lfixture -Wl,-rpath,"$tmp"
addr=0x$(nm "$tmp/libfixture.so" | awk '$3 == "fix_f" { print $1 }')
perf probe -q -x "$tmp/libfixture.so" -a "$group:f=$addr" -a "$group:r=$addr%return"

# now prints a monotonic-enough wall clock in ns.
now() { local t=${EPOCHREALTIME/./}; echo $((10#$t * 1000)); }

# run TOOL N prints the wall ns of one run.
run() {
	local tool=$1 n=$2 t0 t1
	rm -rf "$tmp/out"
	t0=$(now)
	case $tool in
	plain) "$tmp/main" "$n" ;;
	nsprof) "$nsprof" record --probe libfixture.so:fix_f -o "$tmp/out" -- "$tmp/main" "$n" ;;
	perf) perf record -q -e "$group:f" -e "$group:r__return" -o "$tmp/out" -- "$tmp/main" "$n" ;;
	esac >/dev/null 2>&1
	t1=$(now)
	echo $((t1 - t0))
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A slope
for tool in plain nsprof perf; do
	: >"$tmp/$tool.n" && : >"$tmp/$tool.0"
done
for _ in $(seq "$runs"); do
	for tool in plain nsprof perf; do
		run $tool "$calls" >>"$tmp/$tool.n"
		run $tool 0 >>"$tmp/$tool.0"
	done
done
for tool in plain nsprof perf; do
	a=$(median <"$tmp/$tool.n")
	b=$(median <"$tmp/$tool.0")
	slope[$tool]=$(((a - b) / calls))
	printf '%-7s %d calls: %8.1f ms, none: %7.1f ms (medians of %d)\n' $tool "$calls" "$(echo "$a / 1000000" | bc -l)" "$(echo "$b / 1000000" | bc -l)" "$runs"
done
n=$((slope[nsprof] - slope[plain]))
p=$((slope[perf] - slope[plain]))
printf 'per call (entry and return probed): nsprof %d ns, perf %d ns, ratio %.2f\n' $n $p "$(echo "$n / $p" | bc -l)"
