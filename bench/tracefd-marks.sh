#!/usr/bin/env bash
# tracefd-marks.sh: what an application's marks written through
# SYSPROF_TRACE_FD (libsysprof-capture's sysprof_capture_writer on the
# descriptor the recorder hands the command) cost the recorder, nsprof and
# Sysprof's sysprof-cli side by side, in one run.
#
# Workload: internal/testutils/fixtures/tracefd-rate.c writes RATE marks a
# second (0: as fast as it can) for DURATION seconds from one thread and
# prints how many it wrote, its own CPU time and the time it exited. It
# runs on the host and, in mode "pidns", in a new PID namespace
# (unshare -p -f --mount-proc), where the recorder must translate its pids.
# Each tool records it as a command with --use-trace-fd and nothing else:
#   nsprof   nsprof record --no-perf (and no counters)
#   sysprof  sysprof-cli --no-perf (and no counters, no decoding)
# For each run:
#   cpu/mark  the recorder's user+system CPU (GNU time, which counts the
#             command it waited for) minus the workload's own, per mark
#             written, in µs; sysprof-cli's helper daemon sysprofd is
#             shown apart (its CPU over the run, in ms)
#   % CPU     the same CPU over the workload's duration
#   tail      from the workload's exit to the recorder's exit, in s
#   kept      MARK frames in the capture against marks written
# RUNS runs of each tool and mode, interleaved (nsprof, sysprof, nsprof,
# ...); the table shows medians and nsprof's ratio to sysprof-cli.
#
#   bench/tracefd-marks.sh
#
# Environment: RATE (340000), DURATION (3 s), MODES ("host pidns"),
# RUNS (5), BENCH_DIR (/dev/shm; where the captures go), NSPROF
# (bin/nsprof: another build to compare). Needs root, gcc, GNU time,
# libsysprof-4-dev and sysprof (scripts/install-deps.sh). Sysprof 3.46
# talks to sysprofd on the system D-Bus: without a running system bus the
# script starts one (and stops it at the end).
set -euo pipefail

rate=${RATE:-340000}
seconds=${DURATION:-3}
modes=${MODES:-host pidns}
runs=${RUNS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
tmp=$(mktemp -d "$base/nsprof-tracefd.XXXXXX")
dbus_pid=
cleanup() {
	rm -rf "$tmp"
	if [ -n "$dbus_pid" ]; then kill "$dbus_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

nsprof=${NSPROF:-$root/bin/nsprof}
[ -x "$nsprof" ] || (cd "$root" && make -s build)
[ -x /usr/bin/time ] || { echo "tracefd-marks: needs GNU time (/usr/bin/time)"; exit 1; }
gcc -O1 -g -o "$tmp/tracefd-rate" "$root/internal/testutils/fixtures/tracefd-rate.c" $(pkg-config --cflags --libs sysprof-capture-4)

have_sysprof=
if command -v sysprof-cli >/dev/null && command -v dbus-daemon >/dev/null; then
	if ! dbus-send --system --dest=org.freedesktop.DBus --type=method_call --print-reply / org.freedesktop.DBus.GetId >/dev/null 2>&1; then
		mkdir -p /run/dbus
		rm -f /run/dbus/pid
		dbus_pid=$(dbus-daemon --system --fork --print-pid)
	fi
	have_sysprof=1
fi

quiet="--no-cpu --no-disk --no-network --no-memory"
hz=$(getconf CLK_TCK)
# marks FILE: the MARK frames in capture FILE.
marks() { "$nsprof" dump --summary "$1" | awk '$1 == "MARK" { n = $2 } END { print n + 0 }'; }
# daemon_ticks: CPU clock ticks used so far by running sysprofd processes.
daemon_ticks() {
	local t=0 p
	for p in $(pgrep -x sysprofd || true); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
# record TOOL MODE RUN: runs TOOL on the fixture and appends
# "written cpu/mark(µs) %cpu tail(s) kept sysprofd(ms)" to $tmp/TOOL-MODE.
record() {
	local tool=$1 mode=$2 run=$3 out=$tmp/$1-$2-$3
	local work=("$tmp/tracefd-rate" "$rate" "$seconds")
	[ "$mode" = pidns ] && work=(unshare -p -f --mount-proc "${work[@]}")
	local d0
	d0=$(daemon_ticks)
	case $tool in
	nsprof) /usr/bin/time -f "%U %S" -o "$out.time" "$nsprof" record --use-trace-fd --no-perf $quiet -o "$out.syscap" -- "${work[@]}" >"$out.out" 2>"$out.err" ;;
	sysprof) /usr/bin/time -f "%U %S" -o "$out.time" timeout 120 sysprof-cli --force --use-trace-fd --no-perf --no-decode $quiet --no-battery \
		"$out.syscap" -- "${work[@]}" >"$out.out" 2>"$out.err" ;;
	esac || { echo "$tool failed:"; cat "$out.err" "$out.time"; exit 1; }
	local done_ns d1
	done_ns=$(date +%s%N)
	d1=$(daemon_ticks)
	local line
	line=$(grep '^tracefd-rate: wrote' "$out.out") || { echo "$tool: no fixture output"; cat "$out.out" "$out.err"; exit 1; }
	# "tracefd-rate: wrote N marks in S s, CPU C s, ended at T"
	read -r written secs wcpu ended < <(echo "$line" | awk '{ print $3, $6, $9, $13 }')
	read -r u s <"$out.time"
	awk -v n="$written" -v secs="$secs" -v wcpu="$wcpu" -v u="$u" -v s="$s" -v ended="$ended" -v done="$done_ns" \
		-v kept="$(marks "$out.syscap")" -v dt=$((d1 - d0)) -v hz="$hz" \
		'BEGIN { c = u + s - wcpu; printf "%d %.3f %.1f %.3f %d %d\n", n, 1e6 * c / n, 100 * c / secs, (done - ended) / 1e9, kept, 1000 * dt / hz }' \
		>>"$tmp/$tool-$mode"
	# The next run must not pay for writing back this one's capture.
	rm -f "$out.syscap"
	sync
}

tools=nsprof
[ -n "$have_sysprof" ] && tools="$tools sysprof"
echo "workload: 1 thread writing trace-fd marks at $rate/s (0: flat out) for ${seconds}s; modes: $modes; $runs runs each, interleaved; captures in $base"
echo "$(uname -r), $(nproc) CPUs, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
	for mode in $modes; do
		for tool in $tools; do
			record "$tool" "$mode" "$i"
		done
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# median FILE COLUMN: the median of a column.
median() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '\n%-6s %-8s %9s %9s %7s %7s %9s %9s  %s\n' mode tool written "µs/mark" "% CPU" "tail s" kept sysprofd "runs: µs/mark, tail s"
for mode in $modes; do
	for tool in $tools; do
		f=$tmp/$tool-$mode
		printf '%-6s %-8s %9s %9s %7s %7s %9s %9s  %s\n' "$mode" "$tool" "$(median "$f" 1)" "$(median "$f" 2)" "$(median "$f" 3)" \
			"$(median "$f" 4)" "$(median "$f" 5)" "$( [ "$tool" = sysprof ] && echo "$(median "$f" 6)ms" || echo -)" \
			"$(awk '{ s = s (NR > 1 ? ", " : "") $2 "/" $4 } END { print s }' "$f")"
		awk '$5 != $1 { printf "  LOST: %s %s run %d kept %d of %d marks\n", tool, mode, NR, $5, $1 }' tool="$tool" mode="$mode" "$f"
	done
	if [ -n "$have_sysprof" ]; then
		awk -v a="$(median "$tmp/nsprof-$mode" 2)" -v b="$(median "$tmp/sysprof-$mode" 2)" \
			-v ta="$(median "$tmp/nsprof-$mode" 4)" -v tb="$(median "$tmp/sysprof-$mode" 4)" -v mode="$mode" \
			'BEGIN { printf "%-6s nsprof/sysprof-cli: CPU per mark %.2fx, merge tail %.2fx\n", mode, a / b, ta / tb }'
	fi
done
