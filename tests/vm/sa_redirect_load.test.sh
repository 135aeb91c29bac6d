#!/usr/bin/env bash
# vm test: a job start through sa_redirect while the master is slow. 8-host ibsim fabric,
# OpenSM on simhca0, localsad on simhca1 with sa_redirect=simhca1:1=self and a cold cache
# (--no-preload); the relays hold every SA answer for LOCALSA_SLOW_MS (default 400 ms, twice
# sa_redirect_timeout_ms) on its way to the kernel: a master slower than the redirect's timeout.
# localsa_test path_burst sends a burst of concurrent path queries to each other host in turn.
#   - cold: each query the kernel gave localsad falls back to the master by itself after the
#     timeout (that query only: the port stays redirected) and every query is answered;
#   - localsad's own query for each destination still fills its cache, however slow the master,
#     within its patience (--upstream-timeout-ms x tries): the second round is answered by
#     localsad at once, no query falls back, nothing reaches the master;
#   - for comparison, the same round without localsa, and through a new (cold) localsad over
#     the netlink path service, which ib_sa asks before any MAD (localsad's default).
# The master's load is counted on the wire: the PathRecord queries simhca1's relay carries to
# the fabric (every one that leaves the node).
# Usage: tests/vm/sa_redirect_load.test.sh 6.1|6.12
# vm-lines: 6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    t0=$SECONDS
    rc=0
    LOCALSA_RELAY_ARGS="--sa-delay-file /tmp/sa-delay" LOCALSA_VM_COUNT_SA=1 \
        bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --timeout 400 \
        --modparam 'ib_core:sa_redirect=simhca1:1=self' \
        -- bash tests/vm/sa_redirect_load.test.sh --guest || rc=$?
    echo "sa_redirect_load $LINE: $((SECONDS - t0)) s"
    exit $rc
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
# shellcheck source=tests/vm/lib/localsa-test.sh
. "$(dirname "$0")/lib/localsa-test.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
SLOW_MS=${LOCALSA_SLOW_MS:-400}
PER_DEST=${LOCALSA_LOAD_PER_DEST:-20}
cd /tmp
echo 0 >/tmp/sa-delay

stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# PathRecord queries that left simhca1 for the fabric: the master's path load from this node
# (the kernel's queries to localsad stay on the port)
to_master() { awk '$1 == "pr_requests_to_fabric" { print $2 }' "$VM_FABRIC_DIR/relay-1.counters"; }
# ... and as OpenSM counts them (every PathRecord request it dispatched: LOCALSA_VM_COUNT_SA)
osm_pr() { grep -c 'Posting Dispatcher message OSM_MSG_MAD_PATH_RECORD$' "$VM_FABRIC_DIR/opensm.log"; }
delayed() { awk '$1 == "delayed_to_kernel" { print $2 }' "$VM_FABRIC_DIR/relay-1.counters"; }

# round: PER_DEST concurrent queries to each destination in turn (localsa_test runs one
# operation at a time). Sets R_OK R_COUNT R_LOST R_FAILED and R_MEAN_MAX (the largest of the
# bursts' mean latencies), and prints each burst's result.
round() {
    local d r m
    R_OK=0 R_COUNT=0 R_MEAN_MAX=0 R_LOST=0 R_FAILED=0
    for d in "${DESTS[@]}"; do
        r=$(op path_burst "$d" "$PER_DEST")
        echo "     $d: $r"
        R_OK=$((R_OK + $(val ok "$r")))
        R_COUNT=$((R_COUNT + $(val count "$r")))
        R_LOST=$((R_LOST + $(val lost "$r")))
        R_FAILED=$((R_FAILED + $(val etimedout "$r") + $(val other "$r")))
        m=$(val mean_ms "$r")
        ((m > R_MEAN_MAX)) && R_MEAN_MAX=$m
    done
}

check "localsa_test loads" modprobe localsa_test
REDIR_MS=$(cat /sys/module/ib_core/parameters/sa_redirect_timeout_ms)
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
# --netlink off: the kernel's path queries take the redirected MAD (with netlink on, ib_sa asks
# localsad over netlink first: the last round below)
start_localsad() {
    "$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --no-preload --spread-ms 0 "$@" \
        >>/tmp/localsad.log 2>&1 &
    DAEMON=$!
}
start_localsad --netlink off
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
check "the redirect is in force" wait_until 30 state_is redirect
# (no process substitution: the guest has no /dev/fd)
mapfile -t DESTS <<<"$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" \
    --table | sed -n 's/^dlid=.* dgid=\(.*\)$/\1/p' | grep -vx "$OWN_GID" | sort -u)"
check "destinations: ${#DESTS[@]} other hosts" test "${#DESTS[@]}" -ge 4
TOTAL=$((${#DESTS[@]} * PER_DEST))

echo "$SLOW_MS" >/tmp/sa-delay
slow_on() { test "$(delayed)" -gt 0; }
timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --dgid "${DESTS[0]}" >/dev/null
check "the relay holds SA answers ${SLOW_MS} ms" wait_until 5 slow_on
"$BIN/localsactl" --control "$CTL" flush >/dev/null
m0=$(to_master) o0=$(osm_pr) fb0=$(redir 5) up0=$(stat_of upstream_requests)

echo "--- cold round: $TOTAL queries to ${#DESTS[@]} destinations, master answers after ${SLOW_MS} ms"
round
m1=$(to_master) o1=$(osm_pr) fb1=$(redir 5) up1=$(stat_of upstream_requests)
eq "cold: every query answered" "$TOTAL" "$R_OK"
eq "cold: none lost, timed out or failed" "0 0" "$R_LOST $R_FAILED"
eq "cold: the port stays redirected" redirect "$(redir 3)"
check "cold: the queries localsad could not answer in time fell back one by one ($fb0 -> $fb1)" \
    test $((fb1 - fb0)) -le "$TOTAL"
echo "     cold: PathRecord queries to the master: $((m1 - m0)) for $TOTAL queries" \
    "(localsad $((up1 - up0)), kernel fall-backs $((fb1 - fb0)))"
check "cold: localsad asked the master once per destination ($((up1 - up0)))" \
    test $((up1 - up0)) -le $((${#DESTS[@]} * 2))

# localsad's queries are answered after SLOW_MS: give the last of them time to land
sleep $(((SLOW_MS * 3 + 999) / 1000))
echo "--- warm round: the same queries, the master still slow"
mc=$(to_master) oc=$(osm_pr) fb1=$(redir 5)
round
m2=$(to_master) o2=$(osm_pr) fb2=$(redir 5)
eq "warm: every query answered" "$TOTAL" "$R_OK"
eq "warm: none lost, timed out or failed" "0 0" "$R_LOST $R_FAILED"
eq "warm: no query fell back to the master" "$fb1" "$fb2"
eq "warm: no PathRecord query left the node" 0 $((m2 - mc))
eq "warm: OpenSM dispatched no PathRecord query" 0 $((o2 - oc))
check "warm: answered locally, mean latency ${R_MEAN_MAX} ms < ${REDIR_MS} ms" \
    test "$R_MEAN_MAX" -lt "$REDIR_MS"
eq "warm: the port stays redirected" redirect "$(redir 3)"

echo "--- the same round without localsa (no redirect, localsad stopped), master as slow"
echo '' >/sys/module/ib_core/parameters/sa_redirect
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null
m2=$(to_master) o2=$(osm_pr)
round
m3=$(to_master) o3=$(osm_pr)
eq "no localsa: every query answered" "$TOTAL" "$R_OK"

echo "--- the same round through a new localsad over netlink (its default), no redirect, cold"
start_localsad
listening() { [[ $(stat_of nl_listening) == True ]]; }
check "localsad listens on the netlink path service" wait_until 30 listening
round
m4=$(to_master) o4=$(osm_pr)
eq "netlink, cold: every query answered" "$TOTAL" "$R_OK"
eq "netlink, cold: none lost, timed out or failed" "0 0" "$R_LOST $R_FAILED"

echo "     PathRecord queries at the master for $TOTAL kernel queries (on the wire / as OpenSM" \
    "counts them): without localsa $((m3 - m2)) / $((o3 - o2)); redirect, cold $((m1 - m0))" \
    "/ $((o1 - o0)); redirect, warm $((m2 - mc)) / $((o2 - oc)); netlink, cold" \
    "$((m4 - m3)) / $((o4 - o3))"
check "cold through the redirect: at most one query more per destination than without localsa" \
    test $((m1 - m0)) -le $((m3 - m2 + ${#DESTS[@]} * 2))
check "cold over netlink: the master asked about once per destination ($((o4 - o3)))" \
    test $((o4 - o3)) -le $((${#DESTS[@]} * 2))

echo 0 >/tmp/sa-delay
if [[ ${LOCALSA_RELAY_LOG:-} == trace ]]; then
    echo "--- PathRecord queries simhca1 sent, by destination LID and method"
    grep -- '-> dlid .* class 0x03 method 0x.. attr 0x0035' "$VM_FABRIC_DIR/relay-1.log" |
        awk '{ c[$6 " method " $12]++ } END { for (k in c) print "     dlid " k ": " c[k] }'
fi
check "localsa_test unloads" rmmod localsa_test
check "no kernel warning, BUG, lockdep or atomic-sleep report" bash -c \
    '! dmesg | grep -E "WARNING:|BUG:|Oops|INFO: possible|circular locking|sleeping function called|KASAN|UBSAN"'
finish
