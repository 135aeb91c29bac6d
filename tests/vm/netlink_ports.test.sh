#!/usr/bin/env bash
# vm test: two ports on one stock kernel (simhca1, simhca2), each with its localsad on its
# default control socket (/run/localsa/simhcaN-1.sock), answering the kernel's netlink path
# queries. Checks (issue 26, items 1 and 6):
#   both alive: simhca2's query is left by simhca1's localsad to simhca2's (a connect probe);
#   simhca2's localsad killed (SIGKILL: its socket file stays): simhca1's localsad no longer
#     takes the file for a live sibling; simhca2's kernel path query gets the error reply at
#     once and is answered by the SA within 300 ms (not after the kernel's 800 ms timeout);
#   300 concurrent kernel path queries (localsa_test path_burst) to one cold destination on
#     simhca1 are all answered with at most 2 PathRecord requests at OpenSM (its own count);
#     the same burst from simhca2 (no localsad: every query goes to the SA) is the baseline.
# Usage: tests/vm/netlink_ports.test.sh 6.12
# vm-lines: 6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.12}
    cd "$(dirname "$0")/../.."
    LOCALSA_VM_COUNT_SA=1 exec bash scripts/vm run --kernel "$LINE" --stock --sm H0 --hca H1 \
        --hca H5 --timeout 500 -- bash tests/vm/netlink_ports.test.sh --guest
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
DBG=/sys/kernel/debug/localsa_test
BURST=300
cd /tmp

section() { echo "--- $* (guest time ${SECONDS} s)"; }
sock() { echo "/run/localsa/simhca$1-1.sock"; }
D1='' D2=''
trap 'kill -9 $D1 $D2 2>/dev/null; wait 2>/dev/null || true' EXIT
# --no-preload: the burst's destination is cold (a read-through to the master)
"$BIN/localsad" --foreground --ca simhca1 --no-preload >/tmp/localsad1.log 2>&1 &
D1=$!
"$BIN/localsad" --foreground --ca simhca2 --no-preload >/tmp/localsad2.log 2>&1 &
D2=$!
stat_of() { timeout 10 "$BIN/localsactl" --control "$(sock "$1")" -j stats 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])" 2>/dev/null; }
listening() { [[ $(stat_of "$1" nl_listening) == True ]]; }
osm_pr() { grep -c 'Posting Dispatcher message OSM_MSG_MAD_PATH_RECORD$' "$VM_FABRIC_DIR/opensm.log"; }
op() {
    echo "$1 1 ${*:3}" >"$DBG/$2" || { echo "status=write-failed"; return 0; }
    cat "$DBG/$2"
}
val() { sed -n "s/.*[^_]$1=\([0-9]*\).*/\1/p;s/^$1=\([0-9]*\).*/\1/p" <<<"$2" | head -n 1; }

check "localsa_test loads" modprobe localsa_test
check "simhca1's localsad listens on RDMA_NL_GROUP_LS" wait_until 30 listening 1
check "simhca2's localsad listens on RDMA_NL_GROUP_LS" wait_until 30 listening 2
rcvbuf=$(sed -n 's/.*receive buffer \([0-9]*\) KiB.*/\1/p' /tmp/localsad1.log | head -n 1)
check "... with a receive buffer for a burst (${rcvbuf:-?} KiB >= 4096)" test "${rcvbuf:-0}" -ge 4096
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
table=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --table)
DESTS=()
for h in H2 H3; do
    lid=$(timeout 10 saquery -C simhca1 -L "$h" 2>/dev/null | awk 'NR == 1 { print $1 }')
    g=$(sed -n "s/^dlid=$lid .* dgid=\(.*\)\$/\1/p" <<<"$table" | head -n 1)
    [[ -n $lid && -n $g ]] && DESTS+=("$g")
done
check "destinations: the hosts H2, H3 (${DESTS[*]})" test "${#DESTS[@]}" -eq 2

section "both alive"
r=$(op simhca2 route "${DESTS[0]}")
check "simhca2's route resolves ($r)" grep -q '^status=0 ' <<<"$r"
eq "... answered by simhca2's localsad (nl_answered)" 1 "$(stat_of 2 nl_answered)"
eq "... left to it by simhca1's (nl_other_port)" 1 "$(stat_of 1 nl_other_port)"
eq "... which sent no error reply" 0 "$(stat_of 1 nl_errors)"

section "simhca2's localsad killed"
kill -9 "$D2"
wait "$D2" 2>/dev/null
D2=
check "its control socket file stays" test -S "$(sock 2)"
e0=$(stat_of 1 nl_errors)
# elapsed_ms: the kernel's own, from ib_sa_path_rec_get to the callback (the shell and the
# debugfs write around it are the host's load, not the query's wait)
r=$(op simhca2 path "${DESTS[0]}")
e=$(val elapsed_ms "$r")
check "simhca2's path query resolves ($r)" grep -q '^status=0 ' <<<"$r"
check "... within 300 ms (elapsed_ms $e)" test -n "$e" -a "${e:-9999}" -lt 300
eq "... simhca1's localsad sent the error reply" $((e0 + 1)) "$(stat_of 1 nl_errors)"
r=$(op simhca2 route "${DESTS[0]}")
e=$(val elapsed_ms "$r")
check "simhca2's route resolves within 300 ms ($r)" test -n "$e" -a "${e:-9999}" -lt 300

section "$BURST concurrent path queries to one cold destination"
sa0=$(osm_pr)
r=$(op simhca1 path_burst "${DESTS[1]} $BURST")
sleep 1; sa1=$(osm_pr)
echo "     simhca1 (localsad): $r"
eq "all $BURST answered" "$BURST" "$(val ok "$r")"
with=$((sa1 - sa0))
check "... with at most 2 PathRecord requests at OpenSM ($with)" test "$with" -le 2
echo "     nl_resolves=$(stat_of 1 nl_resolves) nl_answered=$(stat_of 1 nl_answered)" \
    "nl_errors=$(stat_of 1 nl_errors) nl_timeouts=$(stat_of 1 nl_timeouts)" \
    "pr_cache_misses=$(stat_of 1 pr_cache_misses) pr_coalesced=$(stat_of 1 pr_coalesced)" \
    "pr_waiters_overflow=$(stat_of 1 pr_waiters_overflow)"
sa0=$(osm_pr)
r=$(op simhca2 path_burst "${DESTS[1]} $BURST")
sleep 1; sa1=$(osm_pr)
without=$((sa1 - sa0))
echo "     simhca2 (no localsad): $r"
echo "     PathRecord requests at OpenSM for $BURST queries: with localsa $with, without $without"

check "no kernel warning" bash -c '! dmesg | grep -E "WARNING:|BUG:|Oops"'
((VM_FAILS)) && { echo "--- localsad1.log"; grep -v ' debug ' /tmp/localsad1.log | tail -40; }
finish
