#!/usr/bin/env bash
# memprof.sh: what `nsprof record --memprof` costs a malloc-heavy program,
# side by side with heaptrack and Sysprof's own memprof preload
# (libsysprof-memory-4.so through sysprof-cli --memprof), in one run.
#
# Workload: internal/testutils/fixtures/memstress.c, THREADS threads each
# doing COUNT malloc(100)/free pairs (default 8 × 1,000,000: 16 M events).
# Every tool runs the whole workload as a user would run it (wall time of
# the tool's command, start-up and finishing included), RUNS times each,
# interleaved; the table shows the median and the slowdown against the
# program alone, and the median CPU seconds; then the sizes of nsprof's
# and heaptrack's files. Also: the cost of a trivial program (/bin/true)
# under --memprof against the same recording without it.
#
#   bench/memprof.sh
#
# Environment: THREADS (8), COUNT (1000000), RUNS (3), BENCH_DIR (/dev/shm;
# /var/tmp puts the captures on disk, as a user would), NSPROF_OLD
# (another nsprof build, with its own libnsprof-memprof.so next to it,
# run as nsprof-old in the same rotation: before and after a change),
# TOOLS (the tools to run besides the baseline, e.g. "nsprof-fp
# nsprof-old heaptrack"; default all), STARTUP (0: skip the /bin/true
# start-up measurement). Each nsprof capture is deleted after its run,
# untimed, so that no run pays for dropping the previous one's pages.
# Needs root, gcc, heaptrack and sysprof (scripts/install-deps.sh). Sysprof
# 3.46 opens everything through sysprofd on the system D-Bus: without a
# running system bus the script starts one (and stops it at the end).
# Sysprof drops the events its rings cannot take (it does not wait), so
# its "events kept" column says how much of the work it recorded. To
# compare with it at a like share of events, nsprof-sample2k records
# about one 100-byte allocation in 20 (--memprof-sample 2048) and the
# frees of those: more events than Sysprof keeps here, chosen by weight
# rather than dropped when a ring is full.
set -euo pipefail

threads=${THREADS:-8}
count=${COUNT:-1000000}
runs=${RUNS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
tmp=$(mktemp -d "$base/nsprof-memprof.XXXXXX")
dbus_pid=
cleanup() {
	rm -rf "$tmp"
	if [ -n "$dbus_pid" ]; then kill "$dbus_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

nsprof=$root/bin/nsprof
lib=$root/bin/libnsprof-memprof.so
[ -x "$nsprof" ] && [ -f "$lib" ] || (cd "$root" && make -s build)
flags="-O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -pthread"
gcc $flags -o "$tmp/memstress" "$root/internal/testutils/fixtures/memstress.c"
work=("$tmp/memstress" "$threads" "$count" 100)
events=$((threads * count * 2))

have_sysprof=
if command -v sysprof-cli >/dev/null && command -v dbus-daemon >/dev/null; then
	if ! dbus-send --system --dest=org.freedesktop.DBus --type=method_call --print-reply / org.freedesktop.DBus.GetId >/dev/null 2>&1; then
		mkdir -p /run/dbus
		rm -f /run/dbus/pid
		dbus_pid=$(dbus-daemon --system --fork --print-pid)
	fi
	have_sysprof=1
fi
have_heaptrack=
size_ht=
command -v heaptrack >/dev/null && have_heaptrack=1

# want NAME: whether TOOLS selects tool NAME.
want() { [ -z "${TOOLS:-}" ] || [[ " $TOOLS " == *" $1 "* ]]; }
old=${NSPROF_OLD:-}
[ -z "$old" ] || [ -x "$old" ] || { echo "NSPROF_OLD=$old is not an executable"; exit 1; }
size_old=

now() { date +%s.%N; }
# timed NAME CMD...: runs CMD, appends its wall seconds to $tmp/NAME and
# its CPU seconds (user + system, its children included: heaptrack's
# interpreter and compressor, nsprof's recorder and the program) to
# $tmp/NAME.cpu. On a loaded machine the CPU seconds vary less. Not
# counted: sysprofd, the daemon that does part of sysprof-cli's work.
timed() {
	local name=$1
	shift
	local t0 t1
	t0=$(now)
	("$@" >/dev/null 2>"$tmp/$name.err" && times >"$tmp/$name.times") || { echo "$name failed:"; cat "$tmp/$name.err"; exit 1; }
	t1=$(now)
	echo "$t1 - $t0" | bc -l >>"$tmp/$name"
	# times' second line: the children's user and system time, as 0m1.234s.
	awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.3f\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$tmp/$name.times" >>"$tmp/$name.cpu"
}
median() { sort -g "$tmp/$1" | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'; }
quiet="--no-cpu --no-disk --no-network --no-memory --no-perf -f"

echo "workload: $threads threads × $count malloc(100)/free ($events events), $runs runs each, interleaved"
echo "$(uname -r), $(nproc) CPUs, $(gcc --version | head -1)"
for i in $(seq "$runs"); do
	timed baseline "${work[@]}"
	if want nsprof-fp; then
		timed nsprof-fp "$nsprof" record --memprof $quiet -o "$tmp/fp.syscap" -- "${work[@]}"
		size_fp=$(stat -c %s "$tmp/fp.syscap")
		kept_fp=$(grep -o '[0-9]* allocations and [0-9]* frees' "$tmp/nsprof-fp.err" | awk '{ print $1 + $4 }')
		rm -f "$tmp/fp.syscap"
	fi
	if [ -n "$old" ] && want nsprof-old; then
		timed nsprof-old "$old" record --memprof $quiet -o "$tmp/old.syscap" -- "${work[@]}"
		size_old=$(stat -c %s "$tmp/old.syscap")
		kept_old=$(grep -o '[0-9]* allocations and [0-9]* frees' "$tmp/nsprof-old.err" | awk '{ print $1 + $4 }')
		rm -f "$tmp/old.syscap"
	fi
	if want nsprof-backtrace; then
		timed nsprof-backtrace "$nsprof" record --memprof -e NSPROF_MEMPROF_UNWIND=backtrace $quiet -o "$tmp/bt.syscap" -- "${work[@]}"
	fi
	if want nsprof-sample2k; then
		timed nsprof-sample2k "$nsprof" record --memprof --memprof-sample 2048 $quiet -o "$tmp/s2.syscap" -- "${work[@]}"
		kept_s2=$(grep -o '[0-9]* allocations and [0-9]* frees' "$tmp/nsprof-sample2k.err" | awk '{ print $1 + $4 }')
	fi
	if want nsprof-sample512k; then
		timed nsprof-sample512k "$nsprof" record --memprof --memprof-sample 524288 $quiet -o "$tmp/s.syscap" -- "${work[@]}"
		kept_s512=$(grep -o '[0-9]* allocations and [0-9]* frees' "$tmp/nsprof-sample512k.err" | awk '{ print $1 + $4 }')
	fi
	if want nsprof-perf+memprof; then
		timed nsprof-perf+memprof "$nsprof" record --memprof --no-cpu --no-disk --no-network --no-memory -f -o "$tmp/pm.syscap" -- "${work[@]}"
	fi
	if [ -n "$have_heaptrack" ] && want heaptrack; then
		timed heaptrack heaptrack -o "$tmp/ht" "${work[@]}"
		size_ht=$(find "$tmp" -maxdepth 1 -name 'ht*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
		rm -f "$tmp"/ht*.zst "$tmp"/ht*.gz
	fi
	if [ -n "$have_sysprof" ] && want sysprof; then
		timed sysprof timeout 300 sysprof-cli --force --memprof --no-perf --no-decode --no-cpu --no-disk --no-network --no-memory --no-battery "$tmp/sp.syscap" -- "${work[@]}"
		kept_sp=$("$nsprof" dump --summary "$tmp/sp.syscap" | awk '$1 == "ALLOCATION" { print $2 }')
	fi
done

b=$(median baseline)
ht=
[ -f "$tmp/heaptrack" ] && ht=$(median heaptrack)
printf '\n%-22s %10s %10s %12s %10s %14s\n' tool "median s" slowdown "vs heaptrack" "CPU s" "events kept"
for name in baseline nsprof-fp nsprof-old nsprof-backtrace nsprof-sample2k nsprof-sample512k nsprof-perf+memprof heaptrack sysprof; do
	[ -f "$tmp/$name" ] || continue
	m=$(median "$name")
	slow=$(echo "$m / $b" | bc -l)
	vs=-
	if [ -n "$ht" ] && [ "$name" != baseline ]; then
		vs=$(printf '%.2f' "$(echo "($m / $b) / ($ht / $b)" | bc -l)")
	fi
	kept=-
	case $name in
	nsprof-fp) kept="$kept_fp/$events" ;;
	nsprof-old) kept="$kept_old/$events" ;;
	nsprof-sample2k) kept="$kept_s2/$events" ;;
	nsprof-sample512k) kept="$kept_s512/$events" ;;
	heaptrack) kept="all" ;;
	sysprof) kept="$kept_sp/$events" ;;
	esac
	printf '%-22s %10s %9.2fx %12s %10s %14s\n' "$name" "$m" "$slow" "$vs" "$(median "$name.cpu")" "$kept"
done
echo "file sizes of the last run: nsprof-fp capture ${size_fp:--} bytes, nsprof-old ${size_old:--} bytes, heaptrack ${size_ht:--} bytes"
[ "${STARTUP:-1}" = 0 ] && exit 0

echo
echo "start-up: /bin/true recorded 10 times with and without --memprof (same recorder settings)"
for i in $(seq 10); do
	timed true-plain "$nsprof" record $quiet -o "$tmp/t0.syscap" -- /bin/true
	timed true-memprof "$nsprof" record --memprof $quiet -o "$tmp/t1.syscap" -- /bin/true
	timed true-alone /bin/true
	timed true-preload env LD_PRELOAD="$lib" /bin/true
done
printf '%-34s %8s s\n' "nsprof record -- /bin/true" "$(median true-plain)"
printf '%-34s %8s s\n' "nsprof record --memprof -- /bin/true" "$(median true-memprof)"
printf '%-34s %8s s\n' "/bin/true alone" "$(median true-alone)"
printf '%-34s %8s s\n' "/bin/true, library loaded, no recorder" "$(median true-preload)"
