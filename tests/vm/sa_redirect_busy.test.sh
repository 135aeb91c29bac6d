#!/usr/bin/env bash
# vm test: a cold burst that the master cannot answer before its requesters give up is
# answered BUSY, and the kernel's consumers take it as an answer (issue 25). 40-host ibsim
# fabric, OpenSM on simhca0, localsad on simhca1 (--netlink off) with sa_redirect=simhca1:1=self
# on the patched ib_core of line $1. localsad runs above its preload threshold (no table at
# start) and believes the master computes few records a second (--master-capacity sized so
# that this port's turn for a burst table comes ~15 s after the burst), so that the burst's
# table comes long after the consumers' wait:
#   - 37 path queries to 37 hosts at once (localsa_test path_burst with a GUID step): each is
#     answered at once, BUSY (ib_sa hands the caller -EINVAL) or from the master through
#     localsad; none times out, none goes to the SM (sa_redirect's fallbacks), and OpenSM sees
#     no PathRecord beyond localsad's own upstream requests;
#   - 37 rdma_cm route resolutions to them at once (route_burst; rdma_cm asks with PKey, so
#     another partition and burst): a BUSY ends one in a route error (ROUTE_ERROR, -EINVAL) at
#     once, not at the master;
#   - once the tables came, the same queries and routes, a path and a route are answered by
#     localsad from the tables, equal to the master's answer, and OpenSM sees none of them.
# Usage: tests/vm/sa_redirect_busy.test.sh 6.12
# vm-lines: 6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.12}
    cd "$(dirname "$0")/../.."
    net=$(mktemp "$PWD/.busy-net.XXXXXX") # the guest sees the host's root, not its /tmp
    trap 'rm -f "$net"' EXIT
    bash scripts/fabric gen --hosts 40 >"$net"
    t0=$SECONDS
    rc=0
    LOCALSA_VM_COUNT_SA=1 bash scripts/vm run --kernel "$LINE" --net "$net" --sm H0 --hca H1 \
        --timeout "${LOCALSA_VM_TIMEOUT:-500}" --modparam 'ib_core:sa_redirect=simhca1:1=self' \
        -- bash tests/vm/sa_redirect_busy.test.sh --guest || rc=$?
    echo "sa_redirect_busy $LINE: $((SECONDS - t0)) s"
    exit "$rc"
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
# shellcheck source=tests/vm/lib/localsa-test.sh
. "$(dirname "$0")/lib/localsa-test.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
STATE=/tmp/localsa-state
HOSTS=37             # H2..H38: port GUID 0x100001 + 2n
FIRST=fe80::10:5     # H2's port GID
TIMEOUT_MS=2000      # the caller's timeout (rdma_cm's is 2 s as well)
cd /tmp

stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n 1; }
osm_pr() { grep -c 'Posting Dispatcher message OSM_MSG_MAD_PATH_RECORD$' "$VM_FABRIC_DIR/opensm.log"; }
fields() { sed -n 's/.*status=0 \(dlid=.* pkey=0x[0-9a-f]*\).*/\1/p' <<<"$1"; }
hits() { echo $(($(stat_of pr_preload_hits) + $(stat_of pr_cache_hits))); }
warm() { [[ $(stat_of preload_state) == warm ]]; }
# both partitions' tables (without PKey: ib_sa's Gets; with it: rdma_cm's), 53 paths each
tables_came() { (($(stat_of preloaded_paths) >= 2 * HOSTS)); }

# The fabric's size as a warm set file from an earlier start tells it (40 hosts, 13 switches):
# above --preload-max-ports 0 a burst of 32 misses (--burst-share 50, at least 32) asks the
# table. This port's turn for it is its LID's share of the burst's records at the master's
# capacity: the capacity is chosen to make it ~15 s.
OWN_LID=$(port_lid 1)
PORTS=53
(((OWN_LID - 1) % PORTS == 0)) && PORTS=54
slot=$(((OWN_LID - 1) % PORTS))
CAP=$((slot * HOSTS / 15))
((CAP < 1)) && CAP=1
mkdir -p "$STATE"
printf 'localsa-warm 1\nports %d\n' "$PORTS" >"$STATE/simhca1-1.warm"
echo "--- own LID $OWN_LID, fabric believed $PORTS ports: --master-capacity $CAP" \
    "(the table ~$((HOSTS * slot / CAP)) s after the burst)"
"$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --netlink off --spread-ms 1000 \
    --preload-max-ports 0 --state-dir "$STATE" --master-capacity "$CAP" \
    >>/tmp/localsad.log 2>&1 &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT

check "localsa_test loads (caller timeout $TIMEOUT_MS ms)" modprobe localsa_test timeout_ms=$TIMEOUT_MS
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
check "localsad serves simhca1 without a table (preload warm)" wait_until 60 warm
check "the redirect is in force" wait_until 10 state_is redirect
eq "no table at start" 0 "$(stat_of preloaded_paths)"
# the master's answer for H2 (localsactl asks the SM LID, not the redirect)
MASTER=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --dgid "$FIRST" \
    --reversible 1 --numb-path 1 | sed -n 's/^\(dlid=.* pkey=0x[0-9a-f]*\) .*/\1/p')
check "the master's answer for H2 ($MASTER)" test -n "$MASTER"

# busy_round WHAT OP: OP (path_burst or route_burst) to the HOSTS hosts at once, all cold:
# every one ends at once, the BUSY ones with -EINVAL, none at the SM or OpenSM
busy_round() {
    local what=$1 op=$2 r ok other fb0 sa0 up0 busy0 sa1 up1
    echo "--- $what: $HOSTS hosts at once (guest time $SECONDS s)"
    fb0=$(redir 5) sa0=$(osm_pr) up0=$(stat_of upstream_requests) busy0=$(stat_of pr_busy)
    r=$(op "$op" "$FIRST" "$HOSTS" 0 2)
    echo "$op $r"
    ok=$(val ok "$r") other=$(val other "$r")
    eq "every one ended, none timed out or lost" "$HOSTS 0 0" \
        "$((ok + other)) $(val etimedout "$r") $(val lost "$r")"
    check "some ended with the BUSY, handed to the caller as -EINVAL ($other, status $(val other_status "$r"))" \
        test "$other" -ge 1 -a "$(val other_status "$r")" = -22
    eq "... as many as localsad answered BUSY" "$other" $(($(stat_of pr_busy) - busy0))
    check "... at once, within the caller's timeout (max_ms $(val max_ms "$r"))" \
        test "$(val max_ms "$r")" -lt "$TIMEOUT_MS"
    eq "none went to the SM (sa_redirect fallbacks)" "$fb0" "$(redir 5)"
    sa1=$(osm_pr) up1=$(stat_of upstream_requests)
    check "OpenSM saw only localsad's own queries (PathRecords +$((sa1 - sa0)), localsad's upstream +$((up1 - up0)))" \
        test $((sa1 - sa0)) -le $((up1 - up0))
}
busy_round "ib_sa path queries" path_burst
# rdma_cm asks with the PKey: the tables of another partition, a burst of its own
busy_round "rdma_cm route resolutions (ROUTE_ERROR)" route_burst

echo "--- once the tables came (guest time $SECONDS s)"
check "both bursts' tables come at this port's turn" wait_until 120 tables_came
echo "info - tables in at guest time $SECONDS s ($(stat_of preloaded_paths) paths)"
fb0=$(redir 5) sa0=$(osm_pr) hits0=$(hits)
r=$(op path_burst "$FIRST" "$HOSTS" 0 2)
echo "BURST $r"
eq "the same $HOSTS path queries: all answered" "$HOSTS 0" "$(val ok "$r") $(val other "$r")"
r=$(op route_burst "$FIRST" "$HOSTS" 0 2)
echo "ROUTES $r"
eq "the same $HOSTS route resolutions: all resolved" "$HOSTS 0" "$(val ok "$r") $(val other "$r")"
r=$(op path "$FIRST")
eq "a path to H2: the master's answer" "$MASTER" "$(fields "$r")"
r=$(op route "$FIRST")
eq "a route to H2: the master's answer" "$MASTER" "$(fields "$r")"
check "localsad answered them from the tables, the repeats from its cache (+$(($(hits) - hits0)))" \
    test $(($(hits) - hits0)) -ge $((2 * HOSTS + 2))
eq "OpenSM saw none of them" "$sa0" "$(osm_pr)"
eq "none went to the SM" "$fb0" "$(redir 5)"
check "no kernel warning or oops" bash -c "! dmesg | grep -E 'BUG:|WARNING:|Oops|INFO: task|UBSAN|KASAN'"
check "localsa_test unloads" rmmod localsa_test
((VM_FAILS)) && { echo "--- localsad.log"; tail -30 /tmp/localsad.log; }
finish
