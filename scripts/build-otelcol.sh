#!/bin/bash
# Builds the OpenTelemetry Collector that nsprof's OTLP tests send profiles
# to (scripts/otelcol/builder-config.yaml) into a cache directory keyed by
# the config's hash, and prints the binary's path. A second run finds the
# binary and returns at once.
#
# The builder's own `go mod tidy` also resolves the file exporter's
# test-only dependencies, one of which the module proxy refuses (403 on
# otlpencodingextension's .zip): so the builder only generates the sources
# and go.mod (its tidy failing), go mod tidy -e finishes the go.mod, and
# the builder compiles without touching the modules again.
#
# Environment: NSPROF_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/nsprof),
# GO (default go).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
config=$here/otelcol/builder-config.yaml
GO=${GO:-go}
builder_version=v0.165.0

cache=${NSPROF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nsprof}
key=$( (cat "$config"; echo "builder $builder_version") | sha256sum | cut -c1-16)
dir=$cache/otelcol-$key
bin=$dir/otelcol-profiles

if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/otelcol-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

GOBIN=$work/gobin "$GO" install "go.opentelemetry.io/collector/cmd/builder@$builder_version" >&2
cp "$config" "$work/builder-config.yaml"
cd "$work"
./gobin/builder --config=builder-config.yaml --skip-compilation >&2 ||
	[ -f dist/go.mod ] || { echo "build-otelcol.sh: the builder wrote no dist/go.mod" >&2; exit 1; }
(cd dist && "$GO" mod tidy -e >&2)
./gobin/builder --config=builder-config.yaml --skip-generate --skip-get-modules >&2

# Publish atomically: a concurrent run either finds nothing or the whole
# binary.
mkdir -p "$dir"
cp dist/otelcol-profiles "$dir/otelcol-profiles.tmp.$$"
mv "$dir/otelcol-profiles.tmp.$$" "$bin"
echo "$bin"
