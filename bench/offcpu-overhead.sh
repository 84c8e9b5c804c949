#!/usr/bin/env bash
# offcpu-overhead.sh: what `nsprof record --off-cpu` costs a
# context-switch-heavy program, side by side with perf on the same
# workload, in one run.
#
# internal/testutils/fixtures/pingpong.c passes a byte back and forth
# between two threads through two pipes ROUNDS times (two context
# switches a round at least; about 100-200 k a second on a 2-CPU VM) and
# prints the wall and CPU time it measured itself. RUNS times each,
# in turn (rotating which goes first), it runs
#   alone:        pingpong ROUNDS
#   nsprof:       nsprof record --off-cpu -o X -f -- pingpong ROUNDS
#   perf:         perf record -e sched:sched_switch -g -o Y -- pingpong ROUNDS
#   perf-switch:  the same with --switch-events (the switch-ins too, which
#                 off-CPU durations need, as nsprof records them)
#   base:         nsprof as in nsprof mode, but the binary NSPROF_BASE
#                 (another build, such as main's, for an A/B comparison)
# perf runs with -B (--no-buildid): perf 6.1 aborts in its build-id pass
# on this machine ("assertion failed at util/build-id.c:1010", even for
# `perf record -- true`); the pass runs after the workload has ended, so
# skipping it changes only perf's own CPU time (lower).
# and prints, per run and as medians: the workload's wall and CPU time
# (the CPU time of the profiled program includes the kernel's work for
# the profiler's events in its context), the whole command's wall time,
# the profiler's own CPU time (the command's user+sys, from getrusage of
# children, minus the workload's), the records lost (nsprof: the "(N
# lost)" of its summary plus the context switches that lost their other
# half; perf: the counts of its LOST and LOST_SAMPLES records), and the
# ratios nsprof/perf of each pair of runs of the same round (interleaved,
# so a machine whose speed drifts weighs on both alike), as medians.
#
#   bench/offcpu-overhead.sh [ROUNDS]
#
# Environment: RUNS (default 7), MODES (default "alone nsprof perf
# perf-switch", and base when NSPROF_BASE is set), NSPROF_ARGS (extra
# record flags, e.g. "--call-graph fp,0"), NSPROF_BASE (an nsprof binary
# to compare with: the base mode), PIN (a CPU list: every mode runs the
# workload under `taskset -c PIN`, the recorders unpinned; PIN=0 puts both
# threads on one CPU, so every switch is between them, none through the
# idle task or across CPUs, and the workload's time is its CPU time: the
# kernel's cost per switch, without the wake-up placement and the
# recorder's own CPU that make an unpinned run's wall time vary by tens
# of percent from run to run), PRIO (a SCHED_FIFO priority for the
# workload alone, with PIN=0: nothing else runs on its CPU while it runs,
# neither the recorders' readers nor another user's jobs, so its time is
# its own and the kernel's work per switch, steadier on a shared machine;
# the recorders' readers, kept off that CPU, may then lose records when
# the other CPU is busy too), BENCH_DIR (default /dev/shm: captures go to a tmpfs), PERF
# (default: perf, or the newest /usr/bin/perf_*), CC (gcc). Needs root,
# or perf_event_paranoid <= -1 and a readable tracefs. Results go to
# stdout only.
set -euo pipefail

rounds=${1:-200000}
runs=${RUNS:-7}
read -r -a modes <<<"${MODES:-alone nsprof perf perf-switch${NSPROF_BASE:+ base}}"
read -r -a nsargs <<<"${NSPROF_ARGS:-}"
cc=${CC:-gcc}
pin=()
if [ -n "${PRIO:-}" ]; then
	pin=(chrt -f "$PRIO")
fi
if [ -n "${PIN:-}" ]; then
	pin+=(taskset -c "$PIN")
fi
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
perf=${PERF:-$(command -v perf || ls /usr/bin/perf_* 2>/dev/null | sort -V | tail -1 || true)}
if [ -z "$perf" ] || ! "$perf" --version >/dev/null 2>&1; then
	echo "offcpu-overhead: perf not found (install linux-perf or set PERF)" >&2
	exit 1
fi
tmp=$(mktemp -d "$base/nsprof-offcpu-overhead.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$cc" -O1 -g -fno-omit-frame-pointer -pthread -o "$tmp/pingpong" "$root/internal/testutils/fixtures/pingpong.c"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof)
nsprof=$tmp/nsprof
base_bin=${NSPROF_BASE:-}
if [[ " ${modes[*]} " == *" base "* ]] && ! [ -x "$base_bin" ]; then
	echo "offcpu-overhead: mode base needs NSPROF_BASE, an nsprof binary (got '$base_bin')" >&2
	exit 2
fi

echo "== offcpu-overhead $(date -u +%Y-%m-%dT%H:%MZ): $(uname -sr), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg),"
echo "   $("$perf" --version), $(go version | cut -d' ' -f3), nsprof $(cd "$root" && git describe --always --dirty 2>/dev/null || echo '?')${NSPROF_ARGS:+ (record $NSPROF_ARGS)}"
echo "   pingpong $rounds rounds${PRIO:+ (chrt -f $PRIO)}${PIN:+ (taskset -c $PIN)}, $runs runs of each of: ${modes[*]}"

# num FILE KEY prints the number after "KEY=" in FILE, or nothing.
num() { sed -n "s/.*\\b$2=\\([0-9.]*\\).*/\\1/p" "$1" | head -1; }

# perf_lost FILE prints the records a perf.data file says were lost: the
# sums of its LOST and LOST_SAMPLES records, read from the file itself
# (perf 6.1's report and script abort on this machine: "assertion failed
# at util/build-id.c:1010", even for `perf record -- true`).
perf_lost() {
	python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
if b[:8] != b"PERFILE2":
    sys.exit("offcpu-overhead: not a perf.data file: " + sys.argv[1])
off, size = struct.unpack_from("<QQ", b, 40)  # the data section
lost, p = 0, off
while p + 8 <= off + size:
    typ, _, sz = struct.unpack_from("<IHH", b, p)
    if sz < 8:
        sys.exit("offcpu-overhead: %s: bad record at byte %d" % (sys.argv[1], p))
    if typ == 2:  # PERF_RECORD_LOST: id, lost
        lost += struct.unpack_from("<Q", b, p + 16)[0]
    elif typ == 13:  # PERF_RECORD_LOST_SAMPLES: lost
        lost += struct.unpack_from("<Q", b, p + 8)[0]
    p += sz
print(lost)
PY
}

# nsprof_lost STDERR prints the records nsprof's summary says were lost:
# ring records, and context switches whose other half was lost.
nsprof_lost() {
	local lost unpaired
	lost=$(sed -n 's/.*(\([0-9]*\) lost).*/\1/p' "$1" | head -1)
	unpaired=$(sed -n 's/.*off-CPU: \([0-9]*\) context switches lost.*/\1/p' "$1" | head -1)
	echo $((${lost:-0} + ${unpaired:-0}))
}

TIMEFORMAT='cmd_wall_s=%3R cmd_user_s=%3U cmd_sys_s=%3S'

# run1 MODE REP runs one measurement and appends its line to results.
run1() {
	local mode=$1 rep=$2 cmd
	case $mode in
	alone) cmd=("${pin[@]}" "$tmp/pingpong" "$rounds") ;;
	nsprof) cmd=("$nsprof" record --off-cpu "${nsargs[@]}" -o "$tmp/out.syscap" -f -- "${pin[@]}" "$tmp/pingpong" "$rounds") ;;
	base) cmd=("$base_bin" record --off-cpu "${nsargs[@]}" -o "$tmp/out.syscap" -f -- "${pin[@]}" "$tmp/pingpong" "$rounds") ;;
	perf) cmd=("$perf" record -q -B -e sched:sched_switch -g -o "$tmp/out.perf" -- "${pin[@]}" "$tmp/pingpong" "$rounds") ;;
	perf-switch) cmd=("$perf" record -q -B -e sched:sched_switch -g --switch-events -o "$tmp/out.perf" -- "${pin[@]}" "$tmp/pingpong" "$rounds") ;;
	*)
		echo "offcpu-overhead: unknown mode $mode" >&2
		exit 2
		;;
	esac
	rm -f "$tmp/out.syscap" "$tmp/out.perf"
	{ time "${cmd[@]}" >"$tmp/stdout" 2>"$tmp/stderr"; } 2>"$tmp/time" || {
		echo "offcpu-overhead: $mode run $rep failed:" >&2
		cat "$tmp/stderr" >&2
		exit 1
	}
	local lost=0
	case $mode in
	nsprof | base) lost=$(nsprof_lost "$tmp/stderr") ;;
	perf*) lost=$(perf_lost "$tmp/out.perf") ;;
	esac
	local line
	line=$(awk -v m="$mode" -v r="$rep" -v ww="$(num "$tmp/stdout" work_wall_s)" -v wc="$(num "$tmp/stdout" work_cpu_s)" \
		-v cw="$(num "$tmp/time" cmd_wall_s)" -v cu="$(num "$tmp/time" cmd_user_s)" -v cs="$(num "$tmp/time" cmd_sys_s)" \
		-v l="$lost" 'BEGIN {
		printf "mode=%s rep=%d work_wall_s=%.3f work_cpu_s=%.3f cmd_wall_s=%.3f prof_cpu_s=%.3f lost=%d\n",
			m, r, ww, wc, cw, cu + cs - wc, l }')
	echo "   $line"
	echo "$line" >>"$tmp/results"
}

: >"$tmp/results"
n=${#modes[@]}
for rep in $(seq "$runs"); do
	for k in $(seq 0 $((n - 1))); do
		run1 "${modes[$(((rep + k) % n))]}" "$rep"
	done
done

# The machine may be shared: the load at the end too, beside the start's.
echo "   load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"

awk '
function field(name,   i, kv) {
	for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
}
function median(list,   a, k, i, j, v) {
	k = split(list, a, " ")
	if (k == 0) return 0
	for (i = 2; i <= k; i++) {
		v = a[i] + 0
		for (j = i - 1; j >= 1 && a[j] + 0 > v; j--) a[j + 1] = a[j]
		a[j + 1] = v
	}
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{
	m = field("mode"); r = field("rep"); seen[m] = 1
	for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "mode" && kv[1] != "rep") { v[m, kv[1]] = v[m, kv[1]] " " kv[2]; x[m, r, kv[1]] = kv[2] } }
	if (r > reps) reps = r
}
# pairs(a, b, k): the median over rounds of a/b of key k.
function pairs(a, b, k,   r, l) {
	l = ""
	for (r = 1; r <= reps; r++) if ((a, r, k) in x && (b, r, k) in x && x[b, r, k] > 0) l = l " " x[a, r, k] / x[b, r, k]
	return l == "" ? "-" : sprintf("%.2f", median(l))
}
END {
	split("alone nsprof perf perf-switch base", order, " ")
	print ""
	printf "   %-12s %10s %10s %10s %10s %8s\n", "median", "work wall", "work CPU", "cmd wall", "prof CPU", "lost"
	for (i = 1; i <= 5; i++) {
		m = order[i]
		if (!(m in seen)) continue
		printf "   %-12s %10.3f %10.3f %10.3f %10.3f %8d\n", m, median(v[m, "work_wall_s"]), median(v[m, "work_cpu_s"]),
			median(v[m, "cmd_wall_s"]), median(v[m, "prof_cpu_s"]), median(v[m, "lost"])
	}
	print ""
	print "   ratios, median over rounds of the pair in each round:"
	for (k = 1; k <= 2; k++) {
		a = k == 1 ? "nsprof" : "base"
		if (!(a in seen)) continue
		for (i = 3; i <= 5; i++) {
			m = order[i]
			if (!(m in seen) || m == a) continue
			printf "   %s/%-12s work wall %s  work CPU %s  cmd wall %s  prof CPU %s\n", a, m,
				pairs(a, m, "work_wall_s"), pairs(a, m, "work_cpu_s"), pairs(a, m, "cmd_wall_s"), pairs(a, m, "prof_cpu_s")
		}
	}
	if ("alone" in seen) {
		for (i = 2; i <= 5; i++) {
			m = order[i]
			if (!(m in seen)) continue
			printf "   %-12s/alone work wall %s\n", m, pairs(m, "alone", "work_wall_s")
		}
	}
}' "$tmp/results"
