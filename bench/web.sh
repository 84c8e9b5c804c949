#!/usr/bin/env bash
# web.sh: how `nsprof web` copes with a large capture: the time to load
# and index it, to the first complete page in headless Chromium, to the
# views of a dragged range, and the server's memory (web's
# BenchmarkLargeCapture, which logs each figure).
#
#   bench/web.sh [CAPTURE]
#
# Without CAPTURE it records one as issue 23 describes: `nsprof record -a
# -F 4000` for SECS seconds during a loop of go builds.
# Environment: SECS (20), BENCH_DIR (/var/tmp). Needs root and chromium.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
capture=${1:-}
if [ -z "$capture" ]; then
	tmp=$(mktemp -d "${BENCH_DIR:-/var/tmp}/nsprof-web.XXXXXX")
	trap 'kill $work 2>/dev/null; rm -rf "$tmp"' EXIT
	(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof)
	(export GOCACHE=$tmp/gocache GOFLAGS=-buildvcs=false; while :; do rm -rf "$GOCACHE"; (cd "$root" && go build -o /dev/null ./cmd/nsprof) >/dev/null 2>&1 || true; done) &
	work=$!
	sleep 2
	capture=$tmp/web.syscap
	"$tmp/nsprof" record -a -F 4000 --duration "${SECS:-20}" -o "$capture" >/dev/null
	kill $work 2>/dev/null || true
fi
cd "$root" && NSPROF_WEB_CAPTURE=$capture go test -run '^$' -bench LargeCapture -benchtime 1x -v ./web
