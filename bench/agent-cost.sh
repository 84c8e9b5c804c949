#!/bin/bash
# What nsprof agent costs, against a real OpenTelemetry Collector on this
# machine (scripts/build-otelcol.sh).
#
#   bench/agent-cost.sh cpu [SECONDS]   agent -F 19 system-wide
#       (--no-mmap-build-ids, see README: Compatibility) and
#       perf record -a -g -F 19 side by side over the same SECONDS (60):
#       each one's user+system CPU time (/usr/bin/time) and the ratio.
#   bench/agent-cost.sh offcpu [SECONDS]   agent -F 19 for SECONDS (60)
#       without, then with --off-cpu, one after the other: each run's
#       user+system CPU time, the load average around it and the
#       machine's context switches a second, the largest
#       request the collector wrote (JSON) and the agent's summary.
#   bench/agent-cost.sh mem [MINUTES]   agent -F 19 --period 10s for
#       MINUTES (10) while 1,000 short-lived processes start, spread over
#       the run; VmRSS and VmHWM of the agent every 10 s, and at 1, 5 and
#       MINUTES minutes.
#
# AGENT_FLAGS are added to the agent's (e.g. AGENT_FLAGS=--off-cpu).
# Run as root. Say how loaded the machine was (the load average is
# printed at the start and the end): the CPU figures move with it.
set -euo pipefail

mode=${1:-cpu}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$here" && CGO_ENABLED=0 go build -o "$tmp/nsprof" ./cmd/nsprof && CGO_ENABLED=0 go build -tags otlp -o "$tmp/nsprof-otlp" ./cmd/nsprof)
otelcol=$(bash "$here/scripts/build-otelcol.sh")
port=$((20000 + RANDOM % 20000))
cat >"$tmp/collector.yaml" <<EOF
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$port
exporters:
  file:
    path: $tmp/profiles.jsonl
    format: json
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file]
EOF
"$otelcol" --config="$tmp/collector.yaml" --feature-gates=service.profilesSupport >"$tmp/collector.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
	sleep 0.1
done
echo "machine: $(nproc) CPUs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# shellcheck disable=SC2206 # AGENT_FLAGS is split on purpose
agent=("$tmp/nsprof" agent --otlp-endpoint "http://127.0.0.1:$port" -F 19 --period 10s --spool "$tmp/spool" ${AGENT_FLAGS:-})

case $mode in
cpu)
	secs=${2:-60}
	# Side by side with perf, the agent asks for no build-ids in MMAP2
	# records: with them, the kernel flags perf's MMAP2 records too and
	# perf aborts at its end, before the build-id work it would do.
	timeout -s INT "$secs" /usr/bin/time -f "%U %S %M" -o "$tmp/agent.time" "${agent[@]}" --no-mmap-build-ids 2>"$tmp/agent.log" &
	a=$!
	timeout -s INT "$secs" /usr/bin/time -f "%U %S %M" -o "$tmp/perf.time" perf record -a -g -F 19 -o "$tmp/x.data" >"$tmp/perf.log" 2>&1 &
	p=$!
	wait $a || true
	wait $p || true
	read -r au as am <"$tmp/agent.time"
	read -r pu ps pm < <(tail -1 "$tmp/perf.time")
	echo "over ${secs}s, -F 19 on every CPU, side by side:"
	echo "  nsprof agent: user ${au}s system ${as}s = $(echo "$au + $as" | bc)s CPU ($(echo "scale=2; 100*($au+$as)/$secs" | bc)% of one CPU), max RSS ${am} KB"
	echo "  perf record:  user ${pu}s system ${ps}s = $(echo "$pu + $ps" | bc)s CPU ($(echo "scale=2; 100*($pu+$ps)/$secs" | bc)% of one CPU), max RSS ${pm} KB"
	echo "  ratio agent/perf: $(echo "scale=2; ($au+$as)/($pu+$ps)" | bc)"
	tail -1 "$tmp/agent.log"
	;;
offcpu)
	secs=${2:-60}
	for flags in "" "--off-cpu"; do
		: >"$tmp/profiles.jsonl"
		rm -rf "$tmp/spool"
		l0=$(cut -d' ' -f1 /proc/loadavg)
		c0=$(awk '/^ctxt/{print $2}' /proc/stat)
		timeout -s INT "$secs" /usr/bin/time -f "%U %S %M" -o "$tmp/agent.time" "${agent[@]}" $flags 2>"$tmp/agent.log" || true
		read -r au as am < <(tail -1 "$tmp/agent.time")
		c1=$(awk '/^ctxt/{print $2}' /proc/stat)
		sleep 1 # the collector's file exporter flushes
		big=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$tmp/profiles.jsonl")
		echo "agent ${flags:-(CPU only)} over ${secs}s: user ${au}s system ${as}s = $(echo "$au + $as" | bc)s CPU ($(echo "scale=2; 100*($au+$as)/$secs" | bc)% of one CPU), max RSS ${am} KB; load average $l0 -> $(cut -d' ' -f1 /proc/loadavg), $(((c1 - c0) / secs)) context switches/s; largest request ${big} bytes of JSON"
		echo "  $(tail -1 "$tmp/agent.log")"
	done
	;;
mem)
	mins=${2:-10}
	"${agent[@]}" 2>"$tmp/agent.log" &
	a=$!
	pids+=($a)
	# 1,000 short-lived processes over the run, each burning a moment of
	# CPU (so that samples hit some) under a name of its own.
	(
		gap=$(echo "scale=3; $mins*60/1000" | bc)
		for i in $(seq 1000); do
			sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done' "short-$i" &
			sleep "$gap"
		done
		wait
	) &
	pids+=($!)
	start=$(date +%s)
	end=$((start + mins * 60))
	echo "minute  VmRSS(KB)  VmHWM(KB)"
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep 10
		el=$(($(date +%s) - start))
		rss=$(awk '/VmRSS/{print $2}' /proc/$a/status)
		hwm=$(awk '/VmHWM/{print $2}' /proc/$a/status)
		printf "%6.2f  %9s  %9s\n" "$(echo "scale=2; $el/60" | bc)" "$rss" "$hwm"
	done
	kill -INT $a
	wait $a || true
	tail -3 "$tmp/agent.log"
	;;
*)
	echo "usage: $0 cpu [SECONDS] | offcpu [SECONDS] | mem [MINUTES]" >&2
	exit 2
	;;
esac
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
