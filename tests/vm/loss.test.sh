#!/usr/bin/env bash
# vm test: localsad under MAD loss on the real kernel MAD stack. Every simhca-relay drops a share
# of the GMPs it carries (SA and every other class but SMPs) in both directions (simhca-relay
# --drop-rate-file): client -> localsad, localsad -> master and both answers cross a lossy relay.
# sa_flood (depth 16) sends PathRecord Gets to localsad's LID: paths of the table (preload or
# cache hits) and six LIDs no port has (NO_RECORDS, not remembered: --negative-ttl-ms 0, so each
# of those goes to the master through the loss). Phases: warm-up without loss, then 1 % and 10 %
# for LOCALSA_LOSS_SECONDS each (default 15). Checks: every query answered or failed cleanly
# (answered + timed out = sent, no sa_flood hangs), the relays really dropped, localsad's RSS
# after the lossy phases within 10 % of its RSS after warm-up, localsad answers afterwards.
# Prints the number of queries per phase.
# Usage: tests/vm/loss.test.sh 6.1|6.12
# vm-lines: 6.12
# (loss is the daemon's and the relay's business, not the kernel line's: one line in the suite)
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    LOCALSA_RELAY_ARGS="--drop-rate-file /tmp/drop-rate --drop-seed 42" \
        exec bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 \
        --timeout $((370 + 2 * ${LOCALSA_LOSS_SECONDS:-15})) \
        -- bash tests/vm/loss.test.sh --guest
fi
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
SECS=${LOCALSA_LOSS_SECONDS:-15}
# LOCALSA_LOSS_RATES: the loss rates to run, in order (default "0.01 0.10")
CTL=/tmp/localsad.sock
cd /tmp
echo 0 >/tmp/drop-rate
"$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --negative-ttl-ms 0 --spread-ms 1000 \
    >/tmp/localsad.log 2>&1 &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
stat_of() { "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
preloaded() { [[ $(stat_of preload_state 2>/dev/null) == "done" ]]; }
check "localsad preloads this port's paths" wait_until 30 preloaded
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$DAEMON/status"; }
OWN_LID=$(port_lid 1)
OWN_GID=$("$BIN/localsactl" --control "$CTL" -j stats |
    python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")
dlids=$("$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --table |
    sed -n 's/^dlid=\([0-9]*\) .*/\1/p' | paste -sd,)
check "destinations known ($dlids)" test -n "$dlids"
# 900-905: no such port: NO_RECORDS from the master each time, through the lossy relays (a GMP
# between two LIDs of one simhca port never leaves it: the client <-> localsad leg is lossless)
DLIDS="$dlids,900,901,902,903,904,905"

# flood COUNT: one sa_flood run; prints "sent answered ok errors timeouts seconds"
flood() {
    local out rc=0
    out=$(timeout 120 "$BIN/sa_flood" --ca simhca1 --slid "$OWN_LID" --dlid "$DLIDS" \
        --lid "$OWN_LID" --count "$1" --depth 16 --timeout 1500 2>/dev/null) || rc=$?
    ((rc == 124)) && { echo "hang"; return; }
    awk '/^sent/ {print $2, $4, $6, $8, $10, $12}' <<<"$out"
}
# phase RATE: floods for SECS seconds at loss RATE; sets P_SENT P_ANS P_OK P_ERR P_TO P_RUNS P_HANG
phase() {
    echo "$1" >/tmp/drop-rate
    sleep 0.3 # the relays read the file every 100 ms
    P_SENT=0 P_ANS=0 P_OK=0 P_ERR=0 P_TO=0 P_RUNS=0 P_HANG=0
    local t0=$SECONDS s a o e t x
    while ((SECONDS - t0 < SECS)); do
        read -r s a o e t x <<<"$(flood 2000)"
        if [[ $s == hang || -z $s ]]; then P_HANG=$((P_HANG + 1)); continue; fi
        P_SENT=$((P_SENT + s)) P_ANS=$((P_ANS + a)) P_OK=$((P_OK + o)) P_ERR=$((P_ERR + e))
        P_TO=$((P_TO + t)) P_RUNS=$((P_RUNS + 1))
    done
    P_SECS=$((SECONDS - t0))
    P_UP=$(stat_of upstream_requests) P_UPTO=$(stat_of upstream_timeouts)
    echo "# loss $1: $P_SENT queries in $P_SECS s ($P_RUNS runs): answered $P_ANS (ok $P_OK," \
        "NO_RECORDS/other $P_ERR), timed out $P_TO; $((P_SENT / (P_SECS ? P_SECS : 1)))/s"
}
dropped() { # GMPs the relays dropped so far (their log line at each rate change)
    local total=0 n f
    for f in "$VM_FABRIC_DIR"/relay-*.log; do
        n=$(sed -n 's/.*loss injection: .*(\([0-9]*\) dropped so far).*/\1/p' "$f" | tail -1)
        total=$((total + ${n:-0}))
    done
    echo "$total"
}

read -r s a o e t x <<<"$(flood 3000)"
echo "# warm-up without loss: sent $s answered $a ok $o errors $e timeouts $t in $x s"
check "warm-up: every query answered" test "${a:-0}" -eq 3000
RSS_WARM=$(rss)
up_timeouts0=$(stat_of upstream_timeouts)
total=0
for rate in ${LOCALSA_LOSS_RATES:-0.01 0.10}; do
    up0=$(stat_of upstream_requests) upto0=$(stat_of upstream_timeouts)
    phase "$rate"
    echo "# loss $rate: localsad asked the master $((P_UP - up0)) times, $((P_UPTO - upto0)) of them failed after all tries"
    total=$((total + P_SENT))
    eq "loss $rate: no sa_flood run hung" 0 "$P_HANG"
    check "loss $rate: queries sent ($P_SENT)" test "$P_SENT" -gt 0
    eq "loss $rate: every query answered or timed out cleanly" "$P_SENT" "$((P_ANS + P_TO))"
    check "loss $rate: most queries answered ($P_ANS of $P_SENT)" test "$((P_ANS * 100))" -ge "$((P_SENT * 50))"
    check "loss $rate: localsad alive" kill -0 "$DAEMON"
done
echo 0 >/tmp/drop-rate
sleep 1.5
DROPPED=$(dropped)
echo "# the relays dropped $DROPPED GMPs in all"
check "the relays dropped GMPs ($DROPPED)" test "$DROPPED" -gt 0
check "localsad saw upstream timeouts under loss ($up_timeouts0 -> $(stat_of upstream_timeouts))" \
    test "$(stat_of upstream_timeouts)" -gt "$up_timeouts0"
eq "nothing left pending at localsad" 0 "$(stat_of pr_pending)"
eq "nothing left in flight to the master" 0 "$(stat_of upstream_outstanding)"
read -r s a o e t x <<<"$(flood 1000)"
eq "after the loss: every query answered again" 1000 "${a:-0}"
RSS_END=$(rss)
echo "# $total queries under loss (plus 4000 without); localsad RSS ${RSS_WARM} kB after warm-up, ${RSS_END} kB at the end"
check "RSS within 10 % of warm-up ($RSS_WARM -> $RSS_END kB)" test "$((RSS_END * 10))" -le "$((RSS_WARM * 11))"
check "localsad still running" kill -0 "$DAEMON"
((VM_FAILS)) && { echo "--- localsad.log"; tail -20 /tmp/localsad.log; }
finish
