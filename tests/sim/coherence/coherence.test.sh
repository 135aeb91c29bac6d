#!/usr/bin/env bash
# sim tier: localsad follows the master. A host's link is removed in ibsim (Unlink): OpenSM
# sweeps and sends trap 65, localsad must stop serving paths to it; ReLink brings trap 64 and the
# paths back. Used answers are refreshed on schedule; a stalled master leaves hits served and
# misses failing cleanly, and cached answers stop being served once refresh time + max staleness
# have passed. An OpenSM restart on the same LID (its subscriptions gone, nothing the port poll
# could see) is noticed by the subscription check: localsad resyncs and subscribes again; the
# checks leave no error in OpenSM's log. Prints the measured staleness windows.
# Usage: coherence.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric coherence
# --idle-window-s 60: the paths this test asks once stay cached and refreshed throughout (the
# idle rule has tests of its own, coherence.idle); this one is about Reports and staleness.
# --no-routing-epoch: the staleness bounds here are the TTL rules'; with the routing epoch (OpenSM
# loads liblocalsaepoch.so when built) answers are kept until it changes (sim.routing_epoch).
start_localsad --no-routing-epoch --path-ttl-s 3 --max-staleness-s 10 --upstream-timeout-ms 100 --idle-window-s 60 \
    --subscription-check-s 1 --spread-ms 500

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
# Refresh follows use: both paths are used for 4 s (more than one TTL), so both are refreshed.
t0=$(now_ms)
while (($(now_ms) - t0 < 4000)); do
    status_of pr --sgid "$OWN_GID" --dgid "$G3" --lid "$OWN_LID" >/dev/null
    status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID" >/dev/null
    sleep 0.3
done
check "used answers are refreshed on schedule ($(stats_of refreshes) refreshes)" \
    test "$(stats_of refreshes)" -ge 1
check "refresh keeps them cached" test "$(stats_of cache_entries)" -ge 2

# --- a stalled master: hits served, misses fail cleanly, recovery ---------------------------
kill -STOP "$FABRIC_OPENSM_PID"
t_stall=$(now_ms)
check "master stalled: a cached path is still served" \
    test "$(status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID" --timeout-ms 1000)" = OK
t0=$(now_ms)
miss=$(status_of pr --sgid "$OWN_GID" --dgid fe80::dead:1 --lid "$OWN_LID" --timeout-ms 1500)
t1=$(now_ms)
check "master stalled: a miss gets no answer, cleanly ($((t1 - t0)) ms)" test -z "$miss"
sleep 0.5
check "... and is counted as an upstream timeout" test "$(stats_of upstream_timeouts)" -ge 1
# Max staleness 10 s: the H5 answer, last confirmed before the stall, comes due within 3.3 s
# (TTL 3 s +-10 %); from then on it is served on max staleness alone (counted as stale_served
# from 3.7 s into the stall at the latest) until 9.9 s into the stall at least, and from 13.3 s
# into the stall no more.
while :; do
    status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID" --timeout-ms 200 >/dev/null
    (($(now_ms) - t_stall < 9000)) || break
    sleep 0.2
done
check "master stalled: answers past their refresh time are served, counted ($(stats_of stale_served) stale_served)" \
    test "$(stats_of stale_served)" -ge 1
while (($(now_ms) - t_stall < 14300)); do sleep 0.1; done
check "... and no longer once refresh time + max staleness have passed (14.3 s into the stall)" \
    test -z "$(status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID" --timeout-ms 300)"
kill -CONT "$FABRIC_OPENSM_PID"
check "master back: misses are answered again" \
    test "$(status_of pr --sgid "$OWN_GID" --dgid fe80::dead:2 --lid "$OWN_LID" --timeout-ms 2000)" = NO_RECORDS
check "... and the expired path is served again" \
    test "$(status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID" --timeout-ms 2000)" = OK
check "localsad is still running" kill -0 "$DAEMON_PID"
stale=$(stats_of stale_served)

# --- OpenSM restarted on the same LID: subscriptions renewed ---------------------------------
lost=$(stats_of subscriptions_lost)
resyncs=$(stats_of resyncs)
"$FABRIC" sm-restart --dir "$WORK/fabric" >/dev/null || fail "OpenSM restart"
t0=$(now_ms) # the new OpenSM has swept and is MASTER
# shellcheck disable=SC1091
source "$WORK/fabric/env"
renewed() { [[ $(stats_of subscriptions_lost) -gt $lost && $(stats_of subscriptions) == 6 ]]; }
t_renewed=
for _ in $(seq 100); do renewed && { t_renewed=$(now_ms); break; }; sleep 0.1; done
check "OpenSM restarted: the lost subscriptions are noticed and renewed (+$((${t_renewed:-0} - t0)) ms after SUBNET UP, check every 1 s)" \
    test -n "$t_renewed"
check "... with a resync (cache flushed)" test "$(stats_of resyncs)" -gt "$resyncs"
reports=$(stats_of reports_received)
"$FABRIC" cmd --dir "$WORK/fabric" 'Unlink "H5"' >/dev/null
for _ in $(seq 100); do [[ $(stats_of reports_received) -gt $reports ]] && break; sleep 0.1; done
check "Reports arrive again on the renewed subscriptions (trap 65 for H5)" \
    test "$(stats_of reports_received)" -gt "$reports"
check "nothing stale served since the master came back" test "$(stats_of stale_served)" -eq "$stale"

# --- the subscription checks are no errors at the master -------------------------------------
# A Get naming only the SubscriberGID matches every subscription (OpenSM numbers them Enum 0):
# TOO_MANY_RECORDS and an ERR line in OpenSM's log per check. localsad asks a GetTable.
checks=$(stats_of subscription_checks)
check "subscription checks were made ($checks)" test "$checks" -ge 5
errors=$(grep -c "records for SubnAdmGet(InformInfoRecord)" "$FABRIC_OSM_LOG")
check "... and OpenSM logged no error for them ($errors)" test "$errors" -eq 0

summary
