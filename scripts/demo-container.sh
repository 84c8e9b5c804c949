#!/usr/bin/env bash
# demo-container.sh BUILD: the container part of `make demo`. A rootful
# podman container, on a root file system holding only a shell (a copy of
# the host's, with its libraries) and the demo program (BUILD/tracefd-demo,
# static), runs the program 80 times in a row, about 25 ms each: recorded
# with `nsprof record -- podman run ...`. Then the container's files are
# removed and the capture reported: by container, the container's
# processes (their pids inside it, most of them gone before the recorder
# could read their /proc), and the program's functions, named from the
# capture's bundle.
#
# podman's storage is a private one under a temporary directory (the
# host's is not touched), removed at the end. Without root or podman the
# part is skipped with a message: `make deps` installs podman.
set -euo pipefail

build=$1
nsprof=${NSPROF:-bin/nsprof}
if [ "$(id -u)" != 0 ] || ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	echo "== container demo skipped: it needs root, podman and runc (make deps installs them)"
	exit 0
fi

# A short path: podman refuses a runroot of more than 50 characters.
tmp=$(mktemp -d /var/tmp/nsprof-demo.XXXXXX)
podman_flags=(--root "$tmp/root" --runroot "$tmp/run" --storage-driver overlay
	--cgroup-manager cgroupfs --events-backend file --runtime runc)
cleanup() {
	podman "${podman_flags[@]}" rm -f -t 0 nsprof-demo >/dev/null 2>&1 || true
	podman "${podman_flags[@]}" system reset --force >/dev/null 2>&1 || true
	grep -o " $tmp/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

rootfs=$tmp/rootfs
mkdir -p "$rootfs"/{proc,dev,sys,tmp,etc,run}
cp "$build/tracefd-demo" "$rootfs/tracefd-demo"
for lib in /bin/sh $(ldd /bin/sh | grep -o '/[^ ]*'); do
	mkdir -p "$rootfs$(dirname "$lib")"
	cp -n "$lib" "$rootfs$lib"
done
n=$(ulimit -Hn)
capture=$build/demo-container.syscap
loop='i=0; while [ $i -lt 80 ]; do /tracefd-demo -sort 20000 -o /tmp/self.syscap >/dev/null; i=$((i+1)); done'
echo "== nsprof record -f -o $capture -- podman run --name nsprof-demo --rootfs ROOTFS /bin/sh -c '$loop'"
"$nsprof" record -f -o "$capture" --no-cpu --no-memory --no-disk --no-network -- \
	podman "${podman_flags[@]}" run --rm --name nsprof-demo --network none \
	--ulimit "nofile=$n:$n" --ulimit nproc=32768:32768 --rootfs "$rootfs" /bin/sh -c "$loop"
echo "== rm -rf ROOTFS: the container's files are gone; the capture names its code from its bundle"
rm -rf "$rootfs"
echo "== nsprof report --by container --limit 5 $capture"
"$nsprof" report --by container --limit 5 "$capture"
echo "== nsprof report --processes --container nsprof-demo $capture (its first 10 processes, their threads left out)"
"$nsprof" report --processes --container nsprof-demo "$capture" | awk 'NR <= 2 || (/podman:nsprof-demo/ && n++ < 10)'
echo "== nsprof report --container nsprof-demo --comm tracefd-demo --limit 8 $capture"
"$nsprof" report --container nsprof-demo --comm tracefd-demo --limit 8 "$capture"
