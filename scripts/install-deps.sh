#!/usr/bin/env bash
# Installs the Debian 12 packages nsprof's tests need, and only those that
# are missing: `apt-get update` runs only when something must be installed.
# Run as root (CI and the project's machines are). Elsewhere it lists what
# is missing and exits 0: tests that need a missing tool skip themselves.
set -euo pipefail

# Packages, and the tests that need them.
PACKAGES=(
	gcc libc6-dev make pkg-config # capture/testdata/interop: build C programs against libsysprof-capture
	libsysprof-4-dev libglib2.0-dev # capture interop: the reference libsysprof-capture (pkg-config sysprof-capture-4) and its GLib dependency
	sysprof # capture interop: sysprof-cli / sysprof-cat read and write reference captures
	binutils elfutils # symbol/, unwind/ fixtures: objcopy, readelf, eu-readelf, eu-unstrip
	debuginfod # symbol/: debuginfod client and server tests
	g++ # symbol/ TestDemangleFixture: a C++ fixture library with a namespaced class method
	xz-utils # symbol/ TestMiniDebugInfo: xz compresses the .gnu_debugdata section as Fedora builds it
	libc6-dbg # symbol/ TestLoadHostLibc, BenchmarkLoadLibc: libc.so.6's debug file under /usr/lib/debug/.build-id
	bubblewrap podman runc fuse-overlayfs uidmap # container/, proc/ namespace tests: processes in other pid/mount namespaces, overlay roots
	util-linux # proc/ namespace tests: unshare, nsenter
	linux-perf # perf/: compare with `perf record` / `perf script`
	procps # proc/ tests: ps, pgrep, sysctl
	heaptrack bc dbus # bench/memprof.sh: heaptrack and sysprof-cli --memprof (sysprofd on the system bus) side by side with nsprof --memprof
)

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install-deps: not a Debian system; install the equivalents of: ${PACKAGES[*]}" >&2
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PACKAGES[@]} packages installed"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing ${missing[*]}; as root run: apt-get install -y --no-install-recommends ${missing[*]}" >&2
	exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
