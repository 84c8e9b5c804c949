#!/usr/bin/env bash
# capture-writer.sh: nsprof's capture.Writer against libsysprof-capture's
# writer (Sysprof 3.46, Debian's libsysprof-4-dev) on the same workloads:
# 1,000,000 SAMPLE frames with 32-address callchains, and 1,000,000 MARK
# frames (group, name, short message). Builds bench/capture-writer/bench.c
# and bench/capture-writer (Go), runs them alternately RUNS times each
# writing to the same directory, and prints the median frames/s of each and
# the ratio ours/theirs (> 1: we are faster).
#
#   bench/capture-writer.sh [N]
#
# Environment: BENCH_DIR (default /dev/shm, a tmpfs, so the disk does not
# dominate; set it to a directory on disk to include the file system),
# RUNS (default 3), CC (default gcc).
set -euo pipefail

n=${1:-1000000}
runs=${RUNS:-3}
cc=${CC:-gcc}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
tmp=$(mktemp -d "$base/nsprof-capture-writer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$cc" -O2 -o "$tmp/bench-c" "$root/bench/capture-writer/bench.c" $(pkg-config --cflags --libs sysprof-capture-4)
(cd "$root" && go build -o "$tmp/bench-go" ./bench/capture-writer)

fs=$(stat -f -c %T "$tmp")
echo "output: $tmp (file system: $fs), $n frames per workload, $runs runs each, alternating C and Go"
echo "libsysprof-capture-4 $(pkg-config --modversion sysprof-capture-4), $("$cc" --version | head -1), $(go version | cut -d' ' -f3-)"

: >"$tmp/results"
for r in $(seq "$runs"); do
	"$tmp/bench-c" "$tmp/out.syscap" "$n" | tee -a "$tmp/results"
	"$tmp/bench-go" -o "$tmp/out.syscap" -n "$n" | tee -a "$tmp/results"
done

# Median of each impl/workload, the byte counts (same workload, same size),
# and the ratio.
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
	return a[int((k + 1) / 2)]
}
{
	key = field("impl") "/" field("workload")
	rates[key] = rates[key] " " field("frames_per_s")
	bytes[key] = field("bytes")
}
END {
	print ""
	printf "%-9s %18s %18s %13s %14s\n", "workload", "libsysprof frames/s", "nsprof frames/s", "ours/theirs", "bytes c/go"
	n = split("samples marks", ws, " ")
	for (i = 1; i <= n; i++) {
		w = ws[i]; c = median(rates["c/" w]); g = median(rates["go/" w])
		printf "%-9s %18.0f %18.0f %12.2fx %14s\n", w, c, g, g / c, bytes["c/" w] "/" bytes["go/" w]
	}
}' "$tmp/results"
