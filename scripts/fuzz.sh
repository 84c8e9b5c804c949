#!/usr/bin/env bash
# Runs every Fuzz* target of the module for FUZZTIME each (`make fuzz`).
#
# Go 1.26's fuzz coordinator can fail a run at the end of a duration
# -fuzztime with a bare "context deadline exceeded" and no input: a race
# between its deadline and the workers' cancellation (golang/go#75804,
# fixed in Go 1.27). Seen here on FuzzParseMounts and FuzzReader, each
# passing on a rerun. Such a run is reported as a warning and does not fail
# this script; any other failure does, as does a new input under the
# package's testdata/fuzz/NAME, which is what the fuzzer writes for a
# real crasher.
#
# Environment: FUZZTIME (default 10s), FUZZMINIMIZETIME (default 5s: Go's
# 60 s default stalls on the large ELF seeds of symbol/), GO (default go).
set -uo pipefail

go=${GO:-go}
fuzztime=${FUZZTIME:-10s}
minimize=${FUZZMINIMIZETIME:-5s}
cd "$(dirname "$0")/.."

# "PKG NAME" lines, one per target.
targets=$("$go" test -list 'Fuzz.*' ./... | awk '/^Fuzz/ { f[n++] = $1; next } /^ok/ { for (i = 0; i < n; i++) print $2, f[i]; n = 0 }')
if [ -z "$targets" ]; then
	echo "no fuzz targets"
	exit 0
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=() raced=()
while read -r pkg name; do
	corpus="$("$go" list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null)
	echo "== $pkg $name ($fuzztime)"
	if "$go" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" 2>&1 | tee "$out"; then
		continue
	fi
	added=$(comm -13 <(echo "$before") <(ls "$corpus" 2>/dev/null))
	if [ -z "$added" ] && grep -qx $'[ \t]*context deadline exceeded' "$out"; then
		echo "warning: $pkg $name: \"context deadline exceeded\" with no new input: Go's fuzz coordinator race (golang/go#75804), not a crasher"
		raced+=("$pkg $name")
	else
		failed+=("$pkg $name${added:+ (new input: $added)}")
	fi
done <<<"$targets"

echo "fuzz: $(wc -l <<<"$targets") targets, ${#failed[@]} failed, ${#raced[@]} ended by the coordinator race"
for f in "${failed[@]}"; do
	echo "FAIL: $f"
done
[ ${#failed[@]} -eq 0 ]
