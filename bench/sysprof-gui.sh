#!/usr/bin/env bash
# sysprof-gui.sh: how long Sysprof's GUI takes to show a capture, for
# comparison with `nsprof web` (bench/web.sh) on the same file.
#
#   bench/sysprof-gui.sh CAPTURE
#
# It runs `sysprof CAPTURE` under Xvfb (1600x1000) and prints, in ms from
# the start: the window mapped (xdotool search --sync), then each time the
# screen's two regions change: the share of dark pixels in the function
# list (the call graph's first column) and in the stack traces lane of
# the timeline, as Sysprof 3.46 lays out its window. The list filled is
# the call graph painted. Each sample (xwd of the screen) takes about
# 0.2-1 s on a loaded machine: that is the resolution.
# Environment: SECS (40), how long to watch. Needs sysprof, xvfb,
# xdotool, x11-apps (xwd), dbus and python3.
set -euo pipefail
capture=${1:?usage: bench/sysprof-gui.sh CAPTURE}
if [ -z "${SYSPROF_GUI_INNER:-}" ]; then
	SYSPROF_GUI_INNER=1 exec xvfb-run -a -s "-screen 0 1600x1000x24" dbus-run-session -- "$0" "$@"
fi
region() {
	python3 -c '
import struct, sys
d = sys.stdin.buffer.read()
h = struct.unpack(">25I", d[:100])
hsize, w, bpl, ncolors = h[0], h[4], h[12], h[19]
off = hsize + ncolors * 12
def dark(x0, y0, x1, y1):
    n = k = 0
    for y in range(y0, y1, 2):
        row = d[off + y * bpl: off + (y + 1) * bpl]
        for x in range(x0, x1, 2):
            n += 1
            k += row[4 * x] + row[4 * x + 1] + row[4 * x + 2] < 500
    return k / n
print("function list %.3f, stack traces lane %.3f" % (dark(5, 385, 200, 540), dark(190, 120, 520, 155)))
'
}
t0=$(date +%s%N)
ms() { echo $((($(date +%s%N) - t0) / 1000000)); }
sysprof "$capture" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
xdotool search --sync --onlyvisible --pid $pid >/dev/null
echo "$(ms) ms: window mapped"
last=
while [ "$(ms)" -lt $((${SECS:-40} * 1000)) ]; do
	r=$(xwd -root -silent | region)
	if [ "$r" != "$last" ]; then
		echo "$(ms) ms: $r"
		last=$r
	fi
	sleep 0.2
done
