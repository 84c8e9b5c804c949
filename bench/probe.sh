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
# libfixture.so's fix_f@plt stub, a third trap a call. Both take two traps
# a call: the script checks perf's hits (uprobe_profile) and the calls an
# untimed nsprof recording counts against N.
#
# BASELINE names another nsprof build (main's, say) to time in the same
# interleaving, as "base": a change is compared under the same load.
#
#   bench/probe.sh
#   BASELINE=/tmp/main/bin/nsprof RUNS=7 bench/probe.sh
#
# CPU=1 times the CPU the tool and program use (user and system) instead
# of the wall: on a loaded machine, waiting for a CPU inflates the wall.
#
# Environment: CALLS (200000), RUNS (5), BENCH_DIR (/dev/shm), BASELINE, CPU.
# Needs root, gcc and perf (scripts/install-deps.sh).
set -euo pipefail

calls=${CALLS:-200000}
runs=${RUNS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
tmp=$(mktemp -d "$base/nsprof-probe.XXXXXX")
group=nsprof_bench_$$
# perf probe refuses an event name that any group has: two runs at once
# (another engineer's) must not share one.
f=f_$$ r=r_$$
trap 'perf probe -q -d "$group:*" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

nsprof=$root/bin/nsprof
[ -x "$nsprof" ] || (cd "$root" && make -s build)
src=$root/cmd/nsprof/testdata/calls
gcc -O2 -g -fPIC -shared -o "$tmp/libfixture.so" "$src/fixture.c"
gcc -O2 -g -o "$tmp/main" "$src/main.c" -L"$tmp" -lfixture -Wl,-rpath,"$tmp"
addr=0x$(nm "$tmp/libfixture.so" | awk '$3 == "fix_f" { print $1 }')
if ! perf probe -q -x "$tmp/libfixture.so" -a "$group:$f=$addr" -a "$group:$r=$addr%return"; then
	echo "perf probe could not define $group:$f and $group:$r on $tmp/libfixture.so" >&2
	exit 1
fi

# now prints a monotonic-enough wall clock in ns.
now() { local t=${EPOCHREALTIME/./}; echo $((10#$t * 1000)); }

# cpu reads bash's times (a subshell's own, then its finished
# children's: the tool and the program it waited for) and prints the
# children's user and system time in ns.
cpu() {
	tail -n 1 | awk 'function ns(t, m) { split(t, m, /[ms]/); return (m[1] * 60 + m[2]) * 1e9 } { printf "%.0f\n", ns($1) + ns($2) }'
}

# run TOOL N prints the wall ns of one run; with CPU=1, its CPU time
# (the tool's and the program's, user and system), which waiting for a
# CPU of a loaded machine does not inflate.
run() {
	local tool=$1 n=$2 t0 t1
	rm -rf "$tmp/out"
	if [ "${CPU:-0}" = 1 ]; then
		(run_tool "$tool" "$n"; times) | cpu
		return
	fi
	t0=$(now)
	run_tool "$tool" "$n"
	t1=$(now)
	echo $((t1 - t0))
}

# run_tool TOOL N runs one recording; a failure names the tool and shows
# the end of its output (set -e would otherwise end the script silently).
run_tool() {
	local rc=0
	case $1 in
	plain) "$tmp/main" "$2" ;;
	nsprof) "$nsprof" record --probe libfixture.so:fix_f -o "$tmp/out" -- "$tmp/main" "$2" ;;
	base) "$BASELINE" record --probe libfixture.so:fix_f -o "$tmp/out" -- "$tmp/main" "$2" ;;
	perf) perf record -q -e "$group:$f" -e "$group:${r}__return" -o "$tmp/out" -- "$tmp/main" "$2" ;;
	esac >"$tmp/log" 2>&1 || rc=$?
	if [ $rc -ne 0 ]; then
		echo "$1 with $2 calls failed (exit $rc):" >&2
		tail -n 5 "$tmp/log" >&2
		return 1
	fi
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

tools="plain nsprof perf"
[ -z "${BASELINE:-}" ] || tools="plain nsprof base perf"

# The traps: perf's events hit once a call each (uprobe_profile counts
# the hits of every defined probe), and nsprof counts every call.
hits() { awk -v e="$1" '$2 == e { print $3 }' /sys/kernel/tracing/uprobe_profile; }
f0=$(hits $f) r0=$(hits ${r}__return)

what=wall
[ "${CPU:-0}" = 1 ] && what="CPU"
declare -A slope
for tool in $tools; do
	: >"$tmp/$tool.n" && : >"$tmp/$tool.0"
done
for _ in $(seq "$runs"); do
	for tool in $tools; do
		run $tool "$calls" >>"$tmp/$tool.n"
		run $tool 0 >>"$tmp/$tool.0"
	done
done
f1=$(hits $f) r1=$(hits ${r}__return)
if [ $((f1 - f0)) -ne $((runs * calls)) ] || [ $((r1 - r0)) -ne $((runs * calls)) ]; then
	echo "perf's probes hit $((f1 - f0)) entries and $((r1 - r0)) returns, want $((runs * calls)) each" >&2
	exit 1
fi
rm -rf "$tmp/out"
"$nsprof" record --probe libfixture.so:fix_f -o "$tmp/out" -- "$tmp/main" "$calls" >/dev/null 2>&1
got=$("$nsprof" report --calls "$tmp/out" 2>/dev/null | awk '$NF == "(libfixture.so)" && $(NF-1) == "fix_f" { print $4; exit }')
if [ "$got" != "$calls" ]; then
	echo "nsprof counted $got calls of fix_f, want $calls" >&2
	exit 1
fi
echo "traps a call: perf 2 (uprobe_profile: $runs x $calls entries and returns), nsprof 2 (an entry and a return probe; $got calls counted)"
for tool in $tools; do
	a=$(median <"$tmp/$tool.n")
	b=$(median <"$tmp/$tool.0")
	slope[$tool]=$(((a - b) / calls))
	printf '%-7s %d calls: %8.1f ms, none: %7.1f ms (%s, medians of %d)\n' $tool "$calls" "$(echo "$a / 1000000" | bc -l)" "$(echo "$b / 1000000" | bc -l)" "$what" "$runs"
done
n=$((slope[nsprof] - slope[plain]))
p=$((slope[perf] - slope[plain]))
printf 'per call (entry and return probed): nsprof %d ns, perf %d ns, ratio %.2f\n' $n $p "$(echo "$n / $p" | bc -l)"
if [ -n "${BASELINE:-}" ]; then
	b=$((slope[base] - slope[plain]))
	printf 'baseline %s: %d ns, ratio to perf %.2f; nsprof/baseline %.2f\n' "$BASELINE" $b "$(echo "$b / $p" | bc -l)" "$(echo "$n / $b" | bc -l)"
fi
