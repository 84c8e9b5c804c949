#!/usr/bin/env bash
# record-soak.sh: whether a long system-wide recording's memory stays flat
# while processes come and go.
#
# Runs a loop of Go compiles (`go tool compile` and `go vet` of a generated
# 200-function file: short-lived processes of the same toolchain binaries,
# about 30 a second) and, over it, one
#   nsprof record -a -F FREQ --duration SECONDS -o X -f
# sampling the recorder's VmRSS from /proc every STEP seconds. Printed: the
# samples, then the RSS at 10 %, 50 % and 90 % of the recording, the slope
# of a least-squares line over the second half (MB a minute: flat is
# near 0), the processes the recording saw, its CPU and peak RSS (GNU
# time, which includes the end-of-recording symbol bundle).
#
#   bench/record-soak.sh [SECONDS]      (default 600)
#
# Run it on an otherwise quiet machine: every program started elsewhere
# meanwhile (a go build, a test binary, python) has its unwind tables
# read and kept (up to 64 MiB), which shows as growth.
#
# Environment: FREQ (1000), STEP (5), BENCH_DIR (default /dev/shm),
# NSPROF (a built nsprof; default: build this checkout). Needs root.
set -euo pipefail

secs=${1:-600}
freq=${FREQ:-1000}
step=${STEP:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
if [ ! -x /usr/bin/time ]; then
	echo "record-soak: /usr/bin/time not found (install the time package)" >&2
	exit 1
fi
tmp=$(mktemp -d "$base/nsprof-record-soak.XXXXXX")
bg=
cleanup() {
	[ -n "$bg" ] && { kill -- "-$bg" 2>/dev/null || kill "$bg" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT

nsprof=${NSPROF:-}
if [ -z "$nsprof" ]; then
	(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof)
	nsprof=$tmp/nsprof
fi
# shellcheck source=lib/compile-src.sh
. "$root/bench/lib/compile-src.sh"
write_compile_src "$tmp/src"
setsid bash -c 'cd "$1" && while :; do go tool compile -p main -o x.o main.go; go vet main.go >/dev/null 2>&1 || true; done' _ "$tmp/src" &
bg=$!
sleep 1

echo "== record-soak $(date -u +%Y-%m-%dT%H:%MZ): $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   nsprof $(cd "$root" && git describe --always --dirty 2>/dev/null || echo '?'), record -a -F $freq for ${secs}s over a compile loop, RSS every ${step}s"
/usr/bin/time -f 'cpu_s=%U+%S rss_kb=%M wall_s=%e' -o "$tmp/time" \
	"$nsprof" record -a -F "$freq" --duration "$secs" --no-symbol-cache -o "$tmp/x.syscap" -f 2>"$tmp/stderr" &
tp=$!
sleep 0.5
rec=$(pgrep -P "$tp" | head -1 || true)
if [ -z "$rec" ]; then
	echo "record-soak: nsprof did not start: $(cat "$tmp/stderr")" >&2
	exit 1
fi
t0=$(date +%s.%N)
: >"$tmp/rss"
while kill -0 "$rec" 2>/dev/null; do
	kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$rec/status" 2>/dev/null || true)
	[ -n "$kb" ] && echo "$(echo "$(date +%s.%N) - $t0" | bc) $kb" >>"$tmp/rss"
	sleep "$step"
done
wait "$tp" || { echo "record-soak: nsprof failed: $(tail -3 "$tmp/stderr")" >&2; exit 1; }
awk '{printf "   t=%6.1fs rss=%5.1f MB\n", $1, $2 / 1024}' "$tmp/rss"
echo "   $(grep -o 'recorded.*' "$tmp/stderr" | tail -1)"
echo "   $(cat "$tmp/time")"
# The recording ends (symbols bundled) after secs: only samples before
# that count for the trend.
awk -v secs="$secs" '
$1 <= secs { t[n] = $1; r[n] = $2 / 1024; n++ }
function at(f,   i) { i = int(f * (n - 1)); return r[i] }
END {
	if (n < 4) { print "   too few samples for a trend"; exit }
	h = int(n / 2); sx = sy = sxx = sxy = 0; m = n - h
	for (i = h; i < n; i++) { sx += t[i]; sy += r[i]; sxx += t[i] * t[i]; sxy += t[i] * r[i] }
	slope = (m * sxy - sx * sy) / (m * sxx - sx * sx)
	printf "   rss at 10%%/50%%/90%% of the recording: %.1f / %.1f / %.1f MB; second-half slope %.2f MB/min\n", at(0.1), at(0.5), at(0.9), slope * 60
}' "$tmp/rss"
