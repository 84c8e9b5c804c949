#!/usr/bin/env bash
# controlfd-marks.sh: how many of an application's collector marks
# (libsysprof-capture's sysprof_collector_mark, through SYSPROF_CONTROL_FD)
# reach the capture, nsprof and Sysprof's sysprof-cli side by side, in one
# run, at several rates.
#
# Workload: internal/testutils/fixtures/collector-marks.c writes RATE marks
# a second for DURATION seconds from one thread and prints how many it
# wrote; libsysprof-capture drops a mark its ring has no room for, without
# counting it, so "lost" is written minus the MARK frames in the capture.
# Each tool records the fixture as a command with SYSPROF_CONTROL_FD
# (--use-trace-fd):
#   nsprof       nsprof record --no-perf (and no counters)
#   nsprof+perf  nsprof record with its default perf sampling (999 Hz)
#   sysprof      sysprof-cli --no-perf (and no counters, no decoding)
# RUNS runs of each, interleaved; the table shows each tool's median loss
# and, for nsprof, the loss it reported itself (rings found full, marks
# estimated lost).
#
#   bench/controlfd-marks.sh
#
# Environment: RATES ("100000 300000 1000000"), DURATION (2 s), RUNS (3),
# BENCH_DIR (/dev/shm), NSPROF (bin/nsprof: another build to compare). Needs root, gcc, libsysprof-4-dev and sysprof
# (scripts/install-deps.sh). Sysprof 3.46 talks to sysprofd on the system
# D-Bus: without a running system bus the script starts one (and stops it
# at the end).
set -euo pipefail

rates=${RATES:-100000 300000 1000000}
seconds=${DURATION:-2}
runs=${RUNS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
tmp=$(mktemp -d "$base/nsprof-ctlfd.XXXXXX")
dbus_pid=
cleanup() {
	rm -rf "$tmp"
	if [ -n "$dbus_pid" ]; then kill "$dbus_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

nsprof=${NSPROF:-$root/bin/nsprof}
[ -x "$nsprof" ] || (cd "$root" && make -s build)
gcc -O1 -g -o "$tmp/collector-marks" "$root/internal/testutils/fixtures/collector-marks.c" $(pkg-config --cflags --libs sysprof-capture-4)

have_sysprof=
if command -v sysprof-cli >/dev/null && command -v dbus-daemon >/dev/null; then
	if ! dbus-send --system --dest=org.freedesktop.DBus --type=method_call --print-reply / org.freedesktop.DBus.GetId >/dev/null 2>&1; then
		mkdir -p /run/dbus
		rm -f /run/dbus/pid
		dbus_pid=$(dbus-daemon --system --fork --print-pid)
	fi
	have_sysprof=1
fi

quiet="--no-cpu --no-disk --no-network --no-memory -f"
# marks FILE: the MARK frames in capture FILE.
marks() { "$nsprof" dump --summary "$1" | awk '$1 == "MARK" { n = $2 } END { print n + 0 }'; }
# written FILE: what the fixture says it wrote, from its output in FILE.
written() { awk '/^collector-marks: wrote/ { print $3 }' "$1"; }
# record TOOL RATE RUN: runs TOOL on the fixture and appends
# "written received reported-full reported-lost" to $tmp/TOOL-RATE.
record() {
	local tool=$1 rate=$2 run=$3 out=$tmp/$1-$2-$3
	local work=("$tmp/collector-marks" "$rate" "$seconds")
	case $tool in
	nsprof) "$nsprof" record --use-trace-fd --no-perf $quiet -o "$out.syscap" -- "${work[@]}" >"$out.out" 2>"$out.err" ;;
	nsprof+perf) "$nsprof" record --use-trace-fd $quiet -o "$out.syscap" -- "${work[@]}" >"$out.out" 2>"$out.err" ;;
	sysprof) timeout 120 sysprof-cli --force --use-trace-fd --no-perf --no-decode --no-cpu --no-disk --no-network --no-memory --no-battery \
		"$out.syscap" -- "${work[@]}" >"$out.out" 2>"$out.err" ;;
	esac || { echo "$tool failed:"; cat "$out.err"; exit 1; }
	local full=- est=-
	if [ "$tool" != sysprof ]; then
		full=$(grep -o 'rings found full: [0-9]*' "$out.err" | awk 'NR == 1 { print $4 }' || true)
		est=$(grep -o 'about [0-9]* frames lost' "$out.err" | awk 'NR == 1 { print $2 }' || true)
		full=${full:-0} est=${est:-0}
	fi
	echo "$(written "$out.out") $(marks "$out.syscap") $full $est" >>"$tmp/$tool-$rate"
	rm -f "$out.syscap"
}

tools="nsprof nsprof+perf"
[ -n "$have_sysprof" ] && tools="$tools sysprof"
echo "workload: 1 thread writing collector marks for ${seconds}s at $rates marks/s, $runs runs each, interleaved"
echo "$(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for rate in $rates; do
	for i in $(seq "$runs"); do
		for tool in $tools; do
			record "$tool" "$rate" "$i"
		done
	done
done

printf '\n%-9s %-12s %10s %10s %8s  %s\n' rate tool written received "lost %" "runs: lost % (nsprof: rings found full, marks it estimated lost)"
for rate in $rates; do
	for tool in $tools; do
		f=$tmp/$tool-$rate
		# Each run's loss, then the median run's.
		awk -v rate="$rate" -v tool="$tool" '
			{ w[NR] = $1; r[NR] = $2; p[NR] = 100 * ($1 - $2) / $1
			  d[NR] = sprintf("%.2f", p[NR]) ($3 == "-" ? "" : " (" $3 ", " $4 ")") }
			END {
				n = NR
				for (i = 1; i <= n; i++) o[i] = i
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (p[o[j]] < p[o[i]]) { t = o[i]; o[i] = o[j]; o[j] = t }
				m = o[int((n + 1) / 2)]
				runs = d[1]; for (i = 2; i <= n; i++) runs = runs ", " d[i]
				printf "%-9s %-12s %10d %10d %7.2f%%  %s\n", rate, tool, w[m], r[m], p[m], runs
			}' "$f"
	done
done
