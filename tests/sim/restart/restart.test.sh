#!/usr/bin/env bash
# sim tier: localsad restarted under load. sa_flood on H1 keeps 8 PathRecord Gets in flight to
# localsad's LID in back-to-back runs while localsad is stopped (SIGTERM, then SIGKILL) and
# started again. Checks: SIGTERM under load ends it cleanly and quickly; a new localsad comes up
# on the same port (also after SIGKILL, whose ibsim slot is only freed once ibsim writes to it)
# and serves; queries during the gap fail by timeout, never hang; afterwards a whole run is
# answered; OpenSM stays up. Prints the query counts.
# Usage: restart.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric restart
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
DLIDS=$(IFS=,; echo "${LIDS[*]:2:12}")
LOG_LEVEL=info start_localsad
check "localsad starts" test -S "$CTL"
eq() { check "$1 ($2 = $3)" test "$2" = "$3"; }

# flood COUNT: one sa_flood run from H1 to localsad; prints "sent answered ok timeouts"
flood() {
    timeout 60 "$FABRIC" run --dir "$WORK/fabric" --node H1 -- "$BIN/sa_flood" --slid "$OWN_LID" \
        --dlid "$DLIDS" --lid "$OWN_LID" --count "$1" --depth 8 --timeout 1000 2>/dev/null |
        awk '/^sent/ {print $2, $4, $6, $10}'
    return "${PIPESTATUS[0]}"
}
# load in the background: runs of 500 until $WORK/stop exists; one line per run in load.out
load() {
    while [[ ! -e $WORK/stop ]]; do
        out=$(flood 500)
        echo "$? $out" >>"$WORK/load.out"
    done
}
read -r s a o t <<<"$(flood 2000)"
eq "warm-up: 2000 queries answered" 2000 "${a:-0}"

load &
LOAD_PID=$!
sleep 2
restart() { # SIGNAL
    local old=$DAEMON_PID t0
    t0=$(date +%s%N)
    kill "-$1" "$old"
    wait "$old"
    local rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
    mv "$WORK/localsad.log" "$WORK/localsad-$1.log"
    if [[ $1 == TERM ]]; then
        eq "SIGTERM under load: exit status 0" 0 "$rc"
        check "... within 2 s ($ms ms)" test "$ms" -lt 2000
        check "... after unsubscribing" grep -q 'signal 15: shutting down' "$WORK/localsad-$1.log"
    else
        eq "SIGKILL under load: killed" 137 "$rc"
    fi
    rm -f "$CTL"
    local tries=0
    while :; do
        tries=$((tries + 1))
        start_localsad
        [[ -S $CTL ]] && kill -0 "$DAEMON_PID" 2>/dev/null && break
        wait "$DAEMON_PID" 2>/dev/null
        ((tries < 10)) || break
        sleep 0.5
    done
    check "a new localsad serves the port after SIG$1 (start attempts: $tries)" test -S "$CTL"
    subscribed() { grep -q 'subscribed to traps' "$WORK/localsad.log"; }
    for _ in $(seq 30); do subscribed && break; sleep 0.1; done
    check "... and subscribed at the master" subscribed
    sleep 3 # load on the new daemon
}
restart TERM
restart KILL
touch "$WORK/stop"
wait "$LOAD_PID"
runs=$(wc -l <"$WORK/load.out")
hung=$(awk '$1 == 124' "$WORK/load.out" | wc -l)
read -r sent answered timeouts < <(awk '{s += $2; a += $3; t += $5} END {print s + 0, a + 0, t + 0}' "$WORK/load.out")
echo "# load: $runs runs, $sent queries, $answered answered, $timeouts timed out (the restarts' gaps)"
eq "no sa_flood run hung" 0 "$hung"
check "load ran through both restarts ($runs runs)" test "$runs" -ge 4
eq "every query answered or timed out" "$sent" "$((answered + timeouts))"
check "the gaps cost some queries ($timeouts)" test "$timeouts" -gt 0
served() { echo $(($(stats_of pr_cache_hits) + $(stats_of pr_cache_misses) + $(stats_of pr_coalesced))); }
served0=$(served)
read -r s a o t <<<"$(flood 2000)"
eq "after the restarts: 2000 queries answered" 2000 "${a:-0}"
eq "... by the new daemon (hits + misses + coalesced)" "$((served0 + 2000))" "$(served)"
check "OpenSM still running" "$FABRIC" status --dir "$WORK/fabric"
check "localsad still running" kill -0 "$DAEMON_PID"
summary
