#!/usr/bin/env bash
# calls.sh: what a call of instrumented code costs under `nsprof record
# --calls`, side by side with uftrace, in one run, for the -pg and the
# -finstrument-functions builds of the --calls test fixture
# (cmd/nsprof/testdata/calls: libfixture.so's fix_f called N times).
#
# Each tool records the whole program as a user would (wall time of its
# command, start-up and finishing included), with N calls and with none
# (fix_run(0): about a thousand calls); the cost per call is the
# difference over N, less the same for the program alone. RUNS runs of
# each, interleaved; the medians are shown. nsprof records without perf
# (--no-perf), as uftrace samples nothing either. uftrace times every call
# (entry and exit records) in both builds; nsprof counts -pg calls per arc
# (no time) and times -finstrument-functions calls.
#
#   bench/calls.sh
#
# Environment: CALLS (10000000), RUNS (5), BENCH_DIR (/dev/shm).
# Needs root, gcc and uftrace (scripts/install-deps.sh).
set -euo pipefail

calls=${CALLS:-10000000}
runs=${RUNS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
tmp=$(mktemp -d "$base/nsprof-calls.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

nsprof=$root/bin/nsprof
lib=$root/bin/libnsprof-memprof.so
[ -x "$nsprof" ] && [ -f "$lib" ] || (cd "$root" && make -s build)
src=$root/cmd/nsprof/testdata/calls
for b in pg cyg; do
	flag=-pg
	[ $b = cyg ] && flag=-finstrument-functions
	mkdir -p "$tmp/$b"
	gcc -O2 -g -fPIC -shared $flag -o "$tmp/$b/libfixture.so" "$src/fixture.c"
	gcc -O2 -g -o "$tmp/$b/main" "$src/main.c" -L"$tmp/$b" -lfixture -Wl,-rpath,"$tmp/$b"
done

# now prints a monotonic-enough wall clock in ns.
now() { local t=${EPOCHREALTIME/./}; echo $((10#$t * 1000)); }

# run TOOL BUILD N prints the wall ns of one run.
run() {
	local tool=$1 b=$2 n=$3 t0 t1
	rm -rf "$tmp/out"
	t0=$(now)
	case $tool in
	plain) "$tmp/$b/main" "$n" ;;
	nsprof) NSPROF_MEMPROF_LIB=$lib "$nsprof" record --calls --no-perf -o "$tmp/out" -- "$tmp/$b/main" "$n" ;;
	uftrace) uftrace record --force --no-libcall --no-event -d "$tmp/out" "$tmp/$b/main" "$n" ;;
	esac >/dev/null 2>&1
	t1=$(now)
	echo $((t1 - t0))
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A slope
printf '%-8s %-22s %12s %12s %14s\n' build tool "N=0 ms" "N=$calls ms" "ns/call extra"
for b in pg cyg; do
	for tool in plain nsprof uftrace; do
		: >"$tmp/zero" && : >"$tmp/full"
		for ((i = 0; i < runs; i++)); do
			run $tool $b 0 >>"$tmp/zero"
			run $tool $b "$calls" >>"$tmp/full"
		done
		z=$(median <"$tmp/zero")
		f=$(median <"$tmp/full")
		slope[$b.$tool]=$(((f - z) / (calls / 1000)))
		extra=$(((slope[$b.$tool] - slope[$b.plain])))
		printf '%-8s %-22s %12.1f %12.1f %14.2f\n' $b $tool "$(echo "$z / 1000000" | bc -l)" "$(echo "$f / 1000000" | bc -l)" "$(echo "$extra / 1000" | bc -l)"
	done
done
