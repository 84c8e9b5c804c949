#!/usr/bin/env bash
# capture-writer.sh: nsprof's capture.Writer against libsysprof-capture's
# writer (Sysprof 3.46, Debian's libsysprof-4-dev) on the same workloads:
# 1,000,000 SAMPLE frames with 32-address callchains, and 1,000,000 MARK
# frames (group, name, short message). Builds bench/capture-writer/bench.c
# and bench/capture-writer (Go), runs them alternately RUNS times each
# writing to the same directory (the previous run's captures are removed
# first, outside the timed process: main.go says why that matters for Go),
# and prints the median frames/s of each and
# the ratio ours/theirs (> 1: we are faster). Then it times the encoding
# alone, RUNS times each: bench.c linked with discard.c (write(2) does
# nothing) against the Go side's -discard (io.Discard). On a tmpfs most of
# the full run is the kernel copying the buffers into the page cache, the
# same bytes in the same 262080-byte writes for both; the encoding table is
# each writer's own work. Last, the file runs are repeated in DISK_DIR, a
# directory on a disk file system, where captures are normally written.
# There libsysprof-capture's close(2) is slow on ext4: its writer calls
# ftruncate(fd, 0) after opening, which arms ext4's auto_da_alloc, and
# close then allocates blocks and starts writeback for the whole file
# (strace -T shows it). nsprof opens with O_TRUNC on a file it just
# created, which truncates nothing. That close is most of the difference
# in the disk table: timed apart (an LD_PRELOAD wrapper around close), the
# rest of the C run takes what the Go run takes.
#
#   bench/capture-writer.sh [N]
#
# Environment: BENCH_DIR (default /dev/shm, a tmpfs, so the disk does not
# dominate), DISK_DIR (default /var/tmp; empty to skip the disk runs),
# RUNS (default 3), CC (default gcc).
set -euo pipefail

n=${1:-1000000}
runs=${RUNS:-3}
cc=${CC:-gcc}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/dev/shm}
tmp=$(mktemp -d "$base/nsprof-capture-writer.XXXXXX")
disk=
trap 'rm -rf "$tmp" ${disk:+"$disk"}' EXIT
if [ -n "${DISK_DIR-/var/tmp}" ]; then
	disk=$(mktemp -d "${DISK_DIR:-/var/tmp}/nsprof-capture-writer.XXXXXX")
fi

"$cc" -O2 -o "$tmp/bench-c" "$root/bench/capture-writer/bench.c" $(pkg-config --cflags --libs sysprof-capture-4)
"$cc" -O2 -o "$tmp/bench-c-enc" "$root/bench/capture-writer/bench.c" "$root/bench/capture-writer/discard.c" $(pkg-config --cflags --libs sysprof-capture-4)
(cd "$root" && go build -o "$tmp/bench-go" ./bench/capture-writer)

fs=$(stat -f -c %T "$tmp")
echo "output: $tmp (file system: $fs), $n frames per workload, $runs runs each, alternating C and Go"
echo "libsysprof-capture-4 $(pkg-config --modversion sysprof-capture-4), $("$cc" --version | head -1), $(go version | cut -d' ' -f3-)"

: >"$tmp/results"
: >"$tmp/results-enc"
# clean DIR: removes the previous run's captures, outside the timed process.
clean() { rm -f "$1/samples.syscap" "$1/marks.syscap"; }
mkdir "$tmp/out"
for r in $(seq "$runs"); do
	clean "$tmp/out"; "$tmp/bench-c" "$tmp/out" "$n" | tee -a "$tmp/results"
	clean "$tmp/out"; "$tmp/bench-go" -o "$tmp/out" -n "$n" | tee -a "$tmp/results"
done
for r in $(seq "$runs"); do
	clean "$tmp/out"; "$tmp/bench-c-enc" "$tmp/out" "$n" | tee -a "$tmp/results-enc"
	clean "$tmp/out"; "$tmp/bench-go" -o "$tmp/out" -n "$n" -discard | tee -a "$tmp/results-enc"
done
clean "$tmp/out"
: >"$tmp/results-disk"
if [ -n "$disk" ]; then
	echo "disk runs: $disk (file system: $(stat -f -c %T "$disk"))"
	for r in $(seq "$runs"); do
		clean "$disk"; "$tmp/bench-c" "$disk" "$n" | tee -a "$tmp/results-disk"
		clean "$disk"; "$tmp/bench-go" -o "$disk" -n "$n" | tee -a "$tmp/results-disk"
	done
	clean "$disk"
fi

# Median of each impl/workload, the byte counts (same workload, same size),
# and the ratio.
summary() {
	awk -v title="$1" '
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
	print title
	printf "%-9s %18s %18s %13s %14s %14s\n", "workload", "libsysprof frames/s", "nsprof frames/s", "ours/theirs", "ns/frame c/go", "bytes c/go"
	n = split("samples marks", ws, " ")
	for (i = 1; i <= n; i++) {
		w = ws[i]; c = median(rates["c/" w]); g = median(rates["go/" w])
		printf "%-9s %18.0f %18.0f %12.2fx %14s %14s\n", w, c, g, g / c, sprintf("%.1f/%.1f", 1e9 / c, 1e9 / g), bytes["c/" w] "/" bytes["go/" w]
	}
}' "$2"
}
summary "writing the capture file (medians of $runs runs):" "$tmp/results"
summary "encoding alone, writes discarded (medians of $runs runs):" "$tmp/results-enc"
if [ -n "$disk" ]; then
	summary "writing the capture file on disk, $(stat -f -c %T "$disk") (medians of $runs runs):" "$tmp/results-disk"
fi
