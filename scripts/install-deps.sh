#!/usr/bin/env bash
# Installs the Debian 12 packages nsprof's tests need, and only those that
# are missing: `apt-get update` runs only when something must be installed.
# Run as root (CI and the project's machines are). Elsewhere it lists what
# is missing and exits 0: tests that need a missing tool skip themselves.
set -euo pipefail

# Packages, and the tests that need them.
PACKAGES=(
	gcc libc6-dev make pkg-config # capture/testdata/interop: build C programs against libsysprof-capture
	libsysprof-4-dev libglib2.0-dev # capture interop: the reference libsysprof-capture (pkg-config sysprof-capture-4) and its GLib dependency; cmd/nsprof TestCollectorRingLossCounted: its collector; cmd/nsprof TestSpeedtrack*: a GLib main loop (pkg-config glib-2.0)
	sysprof # capture interop: sysprof-cli / sysprof-cat read and write reference captures; bench/controlfd-marks.sh, bench/tracefd-marks.sh
	time # bench/tracefd-marks.sh: GNU time gives the recorders' CPU
	binutils elfutils # symbol/, unwind/ fixtures: objcopy, readelf, eu-readelf, eu-unstrip; cmd/nsprof TestExportGmon: gprof reads the gmon.out export
	dwz # symbol/ TestDWZ*, e2e TestDWZInlineNames: debug files whose DWARF dwz -m moved into a supplementary file, as Debian's and Fedora's debug packages are
	llvm # symbol/ TestSplitDWARFPackage: llvm-dwp packs a split-DWARF program's .dwo files into a .dwp
	clang-14 # symbol/ TestSplitDWARF: clang's split DWARF, whose .dwo files have no line table of their own
	debuginfod # symbol/: debuginfod client and server tests
	g++ # symbol/ TestDemangleFixture: a C++ fixture library with a namespaced class method
	xz-utils # symbol/ TestMiniDebugInfo: xz compresses the .gnu_debugdata section as Fedora builds it
	libc6-dbg # symbol/ TestLoadHostLibc, BenchmarkLoadLibc: libc.so.6's debug file under /usr/lib/debug/.build-id
	python3.11 python3.11-dbg # e2e TestPythonLTOInlineNames: Debian's LTO-built /usr/bin/python3.11 and its debug file under /usr/lib/debug/.build-id (python3.11-dbg pins python3.11 to its own version)
	bubblewrap podman runc fuse-overlayfs uidmap # container/, proc/ namespace tests: processes in other pid/mount namespaces, overlay roots
	util-linux # proc/ namespace tests: unshare, nsenter; cmd/nsprof TestTraceFDMarksMerged: unshare --pid
	linux-perf # perf/: compare with `perf record` / `perf script`
	nodejs # e2e TestNodeJITDump*: node --perf-prof writes the jitdump V8's compiled code is named from
	procps # proc/ tests: ps, pgrep, sysctl
	uftrace # cmd/nsprof TestCallsUftrace, bench/calls.sh: uftrace counts and times calls of a -pg build, side by side with nsprof --calls
	heaptrack bc dbus # bench/memprof.sh: heaptrack and sysprof-cli --memprof (sysprofd on the system bus) side by side with nsprof --memprof
	dbus polkitd # e2e TestSysprofCLIPodman, bench/*.sh: sysprof-cli records through sysprofd on the system bus, which asks polkitd
	chromium # export/ TestSpeedscopeRenders: renders an export in speedscope, headless; TestSVGZoom: clicks a flame graph frame over the DevTools protocol; web/ TestBrowser: drives nsprof web's page
	graphviz # web/ TestPprofUI: google/pprof's graph view (under pprof/…) renders its SVG with dot
	xvfb xdotool x11-apps # bench/sysprof-gui.sh: Sysprof's GUI under Xvfb, timed to its window and to its call graph painted
	libgtk-4-dev libgtk-4-bin # cmd/nsprof TestRecordGTKMarks: a GTK 4 program built in the test, run under gtk4-broadwayd
)

# npm packages, installed with npm under NPM_PREFIX (npm comes with the
# nodejs package, else Debian's npm package is installed for it).
NPM_PREFIX=/opt/nsprof-npm
NPM_PACKAGES=(
	speedscope@1.25.0 # export/ TestSpeedscopeRenders: speedscope's page, served locally
)

# install_npm installs the missing NPM_PACKAGES (as root only).
install_npm() {
	local missing=() p
	for p in "${NPM_PACKAGES[@]}"; do
		[ -f "$NPM_PREFIX/node_modules/${p%@*}/package.json" ] || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing npm ${missing[*]}; as root run: npm install --prefix $NPM_PREFIX ${missing[*]}" >&2
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm
	fi
	echo "install-deps: npm installing ${missing[*]} into $NPM_PREFIX"
	mkdir -p "$NPM_PREFIX"
	npm install --no-audit --no-fund --prefix "$NPM_PREFIX" "${missing[@]}"
}

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
	install_npm
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing ${missing[*]}; as root run: apt-get install -y --no-install-recommends ${missing[*]}" >&2
	install_npm
	exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
install_npm
