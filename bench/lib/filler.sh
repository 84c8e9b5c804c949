# shellcheck shell=bash
# Helpers for the symbol cache filler that nsprof record starts in the
# background (record.SymbolFill): it writes its pid on record's stderr.

# filler_pid FILE: the pid of the filler nsprof record's output FILE says
# it started, or nothing.
filler_pid() {
	sed -n 's/.*whole in the background (pid \([0-9]*\),.*/\1/p' "$1" | tail -1
}

# wait_filler FILE: waits until the filler nsprof record's output FILE
# names, if any, has exited (it is not our child: poll /proc).
wait_filler() {
	local pid
	pid=$(filler_pid "$1")
	[ -n "$pid" ] || return 0
	while [ -e "/proc/$pid" ] && ! grep -q ') Z' "/proc/$pid/stat" 2>/dev/null; do
		sleep 0.05
	done
}

# filler_usage CACHE PID: "CPU-s RSS-MB" of filler PID, from the last line
# it wrote to the fill log of cache directory CACHE ("- -" if none).
filler_usage() {
	local line
	line=$(grep "nsprof\[$2\]: .*entries filled" "$1/fill.log" 2>/dev/null | tail -1)
	if [ -z "$line" ]; then
		echo "- -"
		return
	fi
	echo "$line" | sed -n 's/.*(CPU \([0-9.]*\)s, peak RSS \([0-9]*\) MB).*/\1 \2/p'
}
