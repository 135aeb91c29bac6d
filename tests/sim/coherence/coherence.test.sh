#!/usr/bin/env bash
# sim tier: localsad follows the master. A host's link is removed in ibsim (Unlink): OpenSM
# sweeps and sends trap 65, localsad must stop serving paths to it; ReLink brings trap 64 and the
# paths back. Cached answers are refreshed on schedule; a stalled master leaves hits served and
# misses failing cleanly. Prints the measured staleness windows.
# Usage: coherence.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric coherence
start_localsad --path-ttl-s 3 --upstream-timeout-ms 100

status_of() { q "$@" 2>/dev/null | sed -n 's/^status=//p'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
log_ms() { # epoch ms of the first localsad log line matching $1
    local line
    line=$(grep -m1 -- "$1" "$WORK/localsad.log" | cut -c1-23) || return 1
    [[ -n $line ]] && echo $(($(date -d "$line" +%s%N) / 1000000))
}

OWN_LID=$("$FABRIC" lid --dir "$WORK/fabric" H1)
for _ in $(seq 30); do [[ $(stats_of subscriptions) == 6 ]] && break; sleep 0.1; done
check "subscribed to the six traps at the master" test "$(stats_of subscriptions)" = 6
OWN_GID=$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")
gid_of() { q pr --sgid "$OWN_GID" --dlid "$("$FABRIC" lid --dir "$WORK/fabric" "$1")" |
    sed -n 's/.* dgid=\([^ ]*\).*/\1/p'; }
G3=$(gid_of H3)
G5=$(gid_of H5)
check "both paths served by localsad" test "$(status_of pr --sgid "$OWN_GID" --dgid "$G3" --lid "$OWN_LID")" = OK -a \
    "$(status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID")" = OK

# watch_after COMMAND STATUS: watch the path to H3 through localsad every 10 ms while ibsim runs
# COMMAND; sets t_cmd (when COMMAND was sent) and t_seen (first answer with STATUS), epoch ms.
watch_after() {
    q pr --sgid "$OWN_GID" --dgid "$G3" --lid "$OWN_LID" --watch-ms 5000 --interval-ms 10 \
        >"$WORK/watch" &
    local watch=$!
    sleep 0.4
    t_cmd=$(now_ms)
    "$FABRIC" cmd --dir "$WORK/fabric" "$1" >/dev/null
    wait $watch
    t_seen=$(sed -n "s/^t=\([0-9]*\) status=$2\$/\1/p" "$WORK/watch" | head -1)
}

# --- Unlink: trap 65 -----------------------------------------------------------------------
watch_after 'Unlink "H3"' NO_RECORDS
t_unlink=$t_cmd
t_gone=$t_seen
t_report=$(log_ms "Report: trap 65")
check "trap 65 reached localsad (Report at +$((${t_report:-0} - t_unlink)) ms after Unlink)" test -n "$t_report"
check "localsad stopped serving the path (+$((${t_gone:-0} - t_unlink)) ms after Unlink)" test -n "$t_gone"
if [[ -n $t_report && -n $t_gone ]]; then
    window=$((t_gone - t_report))
    echo "# staleness after the Report: ${window} ms (query interval 10 ms)"
    check "served no longer than 100 ms after the Report (${window} ms)" test "$window" -le 100
fi
check "the master says the same: NO_RECORDS" \
    test "$(status_of pr --sgid "$OWN_GID" --dgid "$G3")" = NO_RECORDS
hits=$(stats_of pr_cache_hits)
misses=$(stats_of pr_cache_misses)
check "the path to H5 is untouched: still served from the cache" \
    test "$(status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID")" = OK -a \
    "$(stats_of pr_cache_hits)" -eq $((hits + 1)) -a "$(stats_of pr_cache_misses)" -eq "$misses"

# --- ReLink: trap 64 -----------------------------------------------------------------------
watch_after 'ReLink "H3"' OK
t_relink=$t_cmd
t_back=$t_seen
t_report64=$(log_ms "Report: trap 64")
check "trap 64 reached localsad (+$((${t_report64:-0} - t_relink)) ms after ReLink)" test -n "$t_report64"
check "the path is served again (+$((${t_back:-0} - t_relink)) ms after ReLink)" test -n "$t_back"
check "the answer equals the master's again" test \
    "$(q pr --sgid "$OWN_GID" --dgid "$G3" --lid "$OWN_LID" --raw | sed -n 's/^raw=//p' | cut -c33-240)" = \
    "$(q pr --sgid "$OWN_GID" --dgid "$G3" --raw | sed -n 's/^raw=//p' | cut -c33-240)"
check "Reports counted ($(stats_of reports_received))" test "$(stats_of reports_received)" -ge 2
check "nothing stale was served" test "$(stats_of stale_served)" -eq 0

# --- refresh -------------------------------------------------------------------------------
sleep 4
check "cached answers are refreshed on schedule ($(stats_of refreshes) refreshes)" \
    test "$(stats_of refreshes)" -ge 1
check "refresh keeps them cached" test "$(stats_of cache_entries)" -ge 2

# --- a stalled master: hits served, misses fail cleanly, recovery ---------------------------
kill -STOP "$FABRIC_OPENSM_PID"
check "master stalled: a cached path is still served" \
    test "$(status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID" --timeout-ms 1000)" = OK
t0=$(now_ms)
miss=$(status_of pr --sgid "$OWN_GID" --dgid fe80::dead:1 --lid "$OWN_LID" --timeout-ms 1500)
t1=$(now_ms)
check "master stalled: a miss gets no answer, cleanly ($((t1 - t0)) ms)" test -z "$miss"
sleep 0.5
check "... and is counted as an upstream timeout" test "$(stats_of upstream_timeouts)" -ge 1
kill -CONT "$FABRIC_OPENSM_PID"
check "master back: misses are answered again" \
    test "$(status_of pr --sgid "$OWN_GID" --dgid fe80::dead:2 --lid "$OWN_LID" --timeout-ms 2000)" = NO_RECORDS
check "localsad is still running" kill -0 "$DAEMON_PID"

summary
