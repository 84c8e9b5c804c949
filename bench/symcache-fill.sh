#!/usr/bin/env bash
# symcache-fill.sh: what each of four recordings of the same workload costs
# the recorder, from an empty symbol cache, and what the symbol cache
# filler (started by a recording in the background) costs apart.
#
# The workload is a Python loop (json, re, sort) run by python3.11 for
# SECONDS, recorded with
#   nsprof record -F FREQ -v --symbol-cache DIR -o X -f -- python3.11 loop.py
# four times in a row from an empty DIR, each recording timed by GNU time.
# The recorder's CPU is GNU time's user+sys less the workload's own CPU
# (the loop prints it: the command is the recorder's child); peak RSS is
# the largest of the two, the recorder's. Before the next recording, the
# filler the last one started (if any) is waited for, as when recordings
# are seconds apart on a machine with an idle CPU (WAIT=0: not; the
# recordings follow each other at once, a filler still running beside
# the next one); its CPU and peak RSS are read from the cache's fill log
# once it has exited, and printed apart: they are spent, but not by the
# recording. With NSPROF_OLD (a build before the filler),
# its sequences interleave with NSPROF's (order alternating per round),
# each from its own empty cache.
#
#   bench/symcache-fill.sh [SECONDS]
#
# Environment: RUNS (sequences per build, 3), FREQ (4000), WAIT (1), PYTHON
# (/usr/bin/python3.11: its DWARF comes from libpython3.11-dbg, libc's from
# libc6-dbg), NSPROF (a built nsprof; default: build this checkout),
# NSPROF_OLD, BENCH_DIR (/dev/shm). Needs root. Results go to stdout: one
# line per recording, then the medians per build and recording.
set -euo pipefail

secs=${1:-3}
runs=${RUNS:-3}
freq=${FREQ:-4000}
wait_fill=${WAIT:-1}
python=${PYTHON:-/usr/bin/python3.11}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
for tool in /usr/bin/time "$python"; do
	if [ ! -x "$tool" ]; then
		echo "symcache-fill: $tool not found" >&2
		exit 1
	fi
done
tmp=$(mktemp -d "$base/nsprof-symcache-fill.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/filler.sh
. "$root/bench/lib/filler.sh"

nsprof=${NSPROF:-}
if [ -z "$nsprof" ]; then
	(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof)
	nsprof=$tmp/nsprof
fi
builds=(new)
[ -n "${NSPROF_OLD:-}" ] && builds+=(old)

cat >"$tmp/loop.py" <<EOF
import json, re, time
t = time.time()
data = [{"k": i, "v": str(i) * 5, "l": list(range(i % 20))} for i in range(2000)]
pat = re.compile(r"(\d+)5")
n = 0
while time.time() - t < $secs:
    s = json.dumps(data)
    d = json.loads(s)
    n += len(pat.findall(s[:20000]))
    d.sort(key=lambda x: x["v"])
print("workload_cpu_s", time.process_time())
EOF

# sequence BUILD ROUND: four recordings from an empty cache.
sequence() {
	local build=$1 round=$2 bin=$nsprof lines=() loads=()
	[ "$build" = old ] && bin=$NSPROF_OLD
	local cache=$tmp/cache-$build-$round
	rm -rf "$cache"
	for i in 1 2 3 4; do
		local load
		load=$(cut -d' ' -f1 /proc/loadavg)
		/usr/bin/time -f 'cpu_s=%U+%S rss_kb=%M wall_s=%e' -o "$tmp/time" \
			"$bin" record -F "$freq" -v --symbol-cache "$cache" -o "$tmp/x.syscap" -f -- "$python" "$tmp/loop.py" \
			>"$tmp/out" 2>"$tmp/err"
		[ "$wait_fill" = 0 ] || wait_filler "$tmp/err"
		cp "$tmp/err" "$tmp/err-$i"
		local total work cpu rss wall bundle
		total=$(sed -n 's/.*cpu_s=\([0-9.]*\)+\([0-9.]*\).*/\1 \2/p' "$tmp/time" | awk '{print $1 + $2}')
		work=$(sed -n 's/^workload_cpu_s //p' "$tmp/out")
		cpu=$(awk -v t="$total" -v w="$work" 'BEGIN { printf "%.2f", t - w }')
		rss=$(($(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' "$tmp/time") / 1024))
		wall=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$tmp/time")
		bundle=$(sed -n 's/.*bundled .* in \([0-9.]*\)s .*/\1/p' "$tmp/err")
		lines[i]="build=$build round=$round rec=$i cpu_s=$cpu wall_s=$wall rss_mb=$rss bundle_s=${bundle:--}"
		loads[i]=$load
	done
	for i in 1 2 3 4; do
		local pid fill="- -"
		wait_filler "$tmp/err-$i"
		pid=$(filler_pid "$tmp/err-$i")
		[ -n "$pid" ] && fill=$(filler_usage "$cache" "$pid")
		echo "${lines[i]} filler_cpu_s=${fill% *} filler_rss_mb=${fill#* } load=${loads[i]}" | tee -a "$tmp/results"
	done
}

: >"$tmp/results"
for round in $(seq "$runs"); do
	for k in $(seq 0 $((${#builds[@]} - 1))); do
		sequence "${builds[$(((round + k) % ${#builds[@]}))]}" "$round"
	done
done

echo
echo "medians over $runs sequences (recorder CPU-s / wall-s / peak RSS MB / bundle-s; filler CPU-s / peak RSS MB)"
awk '
function val(f,   i) { for (i = 1; i <= NF; i++) if (index($i, f "=") == 1) return substr($i, length(f) + 2); return "-" }
function median(list,   a, n, i, j, v) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > v + 0; j--) a[j + 1] = a[j]; a[j + 1] = v }
	if (n == 0) return "-"
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	k = val("build") " rec " val("rec")
	keys[k] = 1
	cpu[k] = cpu[k] " " val("cpu_s"); wall[k] = wall[k] " " val("wall_s"); rss[k] = rss[k] " " val("rss_mb"); b[k] = b[k] " " val("bundle_s")
	if (val("filler_cpu_s") != "-") { fc[k] = fc[k] " " val("filler_cpu_s"); fr[k] = fr[k] " " val("filler_rss_mb") }
}
END {
	for (k in keys) {
		f = (k in fc) ? sprintf("%.2f / %d", median(fc[k]), median(fr[k])) : "none"
		printf "   %-10s %5.2f / %5.2f / %3d / %5.3f   filler %s\n", k, median(cpu[k]), median(wall[k]), median(rss[k]), median(b[k]), f
	}
}' "$tmp/results" | sort
