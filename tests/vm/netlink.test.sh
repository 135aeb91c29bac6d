#!/usr/bin/env bash
# vm test: the stock kernel's netlink local path service (RDMA_NL_LS) answered by localsad, no
# patched ib_core. Boots kernel line $1 with Debian's own ib_core and OpenSM counting its SA
# requests (its own log). Checks:
#   localsa_test's path (ib_sa_path_rec_get) and route (rdma_cm, AF_IB) to three hosts equal the
#     master's answers and are answered by localsad over netlink (nl_answered); repeats never
#     reach OpenSM (its PathRecord count does not move);
#   a query for a port localsad does not serve (simhca0) gets the error reply at once and is
#     answered by the SA without waiting for the kernel's timeout;
#   another listener on RDMA_NL_GROUP_LS (as ibacm would be) is noticed and said;
#   localsad stopped (SIGSTOP): the kernel asks the SA after the timeout localsad set
#     (SET_TIMEOUT 800 ms, not the kernel's default 2000 ms);
#   localsad killed: the next route goes to the SA at once; restarted (without preload): served
#     over netlink again, read through to the master;
#   --netlink off: nothing reaches localsad.
# Prints route resolution times: stock kernel without localsa, with localsa cold and cached.
# Usage: tests/vm/netlink.test.sh 6.1|6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    LOCALSA_VM_COUNT_SA=1 exec bash scripts/vm run --kernel "$LINE" --stock --sm H0 --hca H1 \
        --timeout 400 -- bash tests/vm/netlink.test.sh --guest
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
DBG=/sys/kernel/debug/localsa_test
KERNEL_TIMEOUT_MS=800 # what localsad sets: 3 tries x 200 ms + 200 ms
cd /tmp

section() { echo "--- $* (guest time ${SECONDS} s)"; }
start_localsad() {
    "$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --spread-ms 1000 "$@" \
        >>/tmp/localsad.log 2>&1 &
    DAEMON=$!
}
DAEMON=
trap '[[ -n $DAEMON ]] && kill -9 $DAEMON 2>/dev/null; wait 2>/dev/null || true' EXIT
stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n 1; }
listening() { [[ $(stat_of nl_listening) == true ]]; }
osm_pr() { grep -c 'Posting Dispatcher message OSM_MSG_MAD_PATH_RECORD$' "$VM_FABRIC_DIR/opensm.log"; }
master_pr() {
    timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --dgid "$1" --reversible 1 \
        --numb-path 1 | sed -n 's/^\(dlid=.* pkey=0x[0-9a-f]*\) .*/\1/p'
}
# op OPERATION GID [DEVICE]: a localsa_test operation from DEVICE port 1 (default simhca1)
op() {
    echo "${3:-simhca1} 1 $2" >"$DBG/$1" || { echo "status=write-failed"; return 0; }
    cat "$DBG/$1"
}
fields() { sed -n 's/^status=0 \(dlid=.* pkey=0x[0-9a-f]*\).*/\1/p' <<<"$1"; }
elapsed_of() { sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p' <<<"$1"; }

check "stock ib_core: no sa_redirect parameter" test ! -e /sys/module/ib_core/parameters/sa_redirect
check "localsa_test loads" modprobe localsa_test
check "OpenSM counts its SA requests" grep -q 'Posting Dispatcher message' "$VM_FABRIC_DIR/opensm.log"
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
TIMEOUT_MS=$(cat /sys/module/localsa_test/parameters/timeout_ms)
table=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --table)
DESTS=()
for h in H2 H3 H4; do
    lid=$(timeout 10 saquery -C simhca1 -L "$h" 2>/dev/null | awk 'NR == 1 { print $1 }')
    g=$(sed -n "s/^dlid=$lid .* dgid=\(.*\)\$/\1/p" <<<"$table" | head -n 1)
    [[ -n $lid && -n $g ]] && DESTS+=("$g")
done
check "destinations: the hosts H2, H3, H4 (${DESTS[*]})" test "${#DESTS[@]}" -eq 3

# --- without localsa: the stock kernel asks the SA
section "without localsa"
r=$(op route "${DESTS[0]}")
check "route without localsa ($r)" test -n "$(fields "$r")"
echo "     route, stock kernel without localsa: elapsed_ms=$(elapsed_of "$r")"

section "localsad over netlink"
start_localsad
check "localsad listens on RDMA_NL_GROUP_LS" wait_until 30 listening
check "... and set the kernel's timeout (SET_TIMEOUT $KERNEL_TIMEOUT_MS ms)" \
    grep -q "the kernel waits $KERNEL_TIMEOUT_MS ms" /tmp/localsad.log
eq "... no other listener" 0 "$(stat_of nl_other_listeners)"
n0=$(stat_of nl_answered)
first=1
for d in "${DESTS[@]}"; do
    m=$(master_pr "$d")
    r=$(op path "$d")
    check "path to $d equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
    r=$(op route "${d}")
    check "route to $d equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
    ((first)) && echo "     route, localsa over netlink, first query: elapsed_ms=$(elapsed_of "$r")"
    first=0
done
n=$((2 * ${#DESTS[@]}))
eq "localsad answered the $n queries over netlink (nl_answered)" $((n0 + n)) "$(stat_of nl_answered)"
eq "... no error replies" 0 "$(stat_of nl_errors)"
sa0=$(osm_pr)
n1=$(stat_of nl_answered)
for d in "${DESTS[@]}"; do
    op path "$d" >/dev/null
    r=$(op route "$d")
done
eq "repeats answered over netlink" $((n1 + n)) "$(stat_of nl_answered)"
eq "repeats did not reach OpenSM (its PathRecord count)" "$sa0" "$(osm_pr)"
echo "     route, localsa over netlink, cached: elapsed_ms=$(elapsed_of "$r")"

section "a port localsad does not serve"
e0=$(stat_of nl_errors)
sa0=$(osm_pr)
r=$(op route "${DESTS[0]}" simhca0)
e=$(elapsed_of "$r")
check "route from simhca0 resolves ($r)" test -n "$(fields "$r")"
eq "... localsad sent the error reply" $((e0 + 1)) "$(stat_of nl_errors)"
check "... the SA answered it ($sa0 -> $(osm_pr))" test "$(osm_pr)" -gt "$sa0"
check "... at once, not after the kernel's timeout (elapsed_ms $e < $KERNEL_TIMEOUT_MS)" \
    test -n "$e" -a "${e:-9999}" -lt "$KERNEL_TIMEOUT_MS"

section "another listener (as ibacm)"
# The listener stays until killed; localsad looks every 10 s, timed from when it is there.
rm -f /tmp/other-listener.ready
python3 -c '
import socket, time
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20)  # NETLINK_RDMA
s.bind((0, 0))
s.setsockopt(270, 1, 3)  # SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, RDMA_NL_GROUP_LS
open("/tmp/other-listener.ready", "w").close()
time.sleep(600)
' &
other=$!
check "another listener joins RDMA_NL_GROUP_LS" wait_until 60 test -e /tmp/other-listener.ready
other_seen() { (($(stat_of nl_other_listeners) >= 1)); }
if wait_until 30 other_seen; then pass "localsad notices the other listener"; else
    fail "localsad notices the other listener"
    echo "     /proc/net/netlink, NETLINK_RDMA (localsad pid $DAEMON, listener pid $other):"
    awk 'NR == 1 || $2 == 20' /proc/net/netlink | sed 's/^/       /'
fi
echo "     nl_other_listeners: $(stat_of nl_other_listeners)"
check "... and says so" grep -q "other listener(s) on RDMA_NL_GROUP_LS" /tmp/localsad.log
kill "$other" 2>/dev/null
wait "$other" 2>/dev/null

section "localsad stopped"
kill -STOP "$DAEMON"
m=$(master_pr "${DESTS[1]}")
r=$(op route "${DESTS[1]}")
e=$(elapsed_of "$r")
check "route still resolves, equal to the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
check "... through the SA after localsad's timeout ($KERNEL_TIMEOUT_MS <= $e < 2000 ms, the default)" \
    test -n "$e" -a "${e:-0}" -ge "$KERNEL_TIMEOUT_MS" -a "${e:-9999}" -lt 2000
kill -CONT "$DAEMON"

section "localsad killed"
kill -9 "$DAEMON"
wait "$DAEMON" 2>/dev/null
DAEMON=
sa0=$(osm_pr)
r=$(op route "${DESTS[2]}")
e=$(elapsed_of "$r")
check "route still resolves ($r)" test -n "$(fields "$r")"
check "... through the SA ($sa0 -> $(osm_pr))" test "$(osm_pr)" -gt "$sa0"
check "... at once: no listener, no wait (elapsed_ms $e < $KERNEL_TIMEOUT_MS)" \
    test -n "$e" -a "${e:-9999}" -lt "$KERNEL_TIMEOUT_MS"

section "localsad restarted"
echo "=== restart" >>/tmp/localsad.log
# --no-preload: its first answer is a read-through to the master (the cold time below)
start_localsad --no-preload
check "listens again" wait_until 30 listening
check "... and set the kernel's timeout again" \
    bash -c "sed '1,/^=== restart/d' /tmp/localsad.log | grep -q 'the kernel waits $KERNEL_TIMEOUT_MS ms'"
m=$(master_pr "${DESTS[2]}")
r=$(op route "${DESTS[2]}")
check "route equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
eq "... answered over netlink again" 1 "$(stat_of nl_answered)"
eq "... read through to the master (pr_cache_misses)" 1 "$(stat_of pr_cache_misses)"
echo "     route, localsa over netlink, cold (no preload, read-through): elapsed_ms=$(elapsed_of "$r")"

section "netlink off"
kill "$DAEMON"
wait "$DAEMON" 2>/dev/null
start_localsad --netlink off
answers() { [[ -n $(stat_of pr_requests) ]]; }
check "localsad --netlink off runs" wait_until 30 answers
eq "... does not listen" false "$(stat_of nl_listening)"
r=$(op route "${DESTS[0]}")
check "route resolves through the SA ($r)" test -n "$(fields "$r")"
eq "... localsad saw nothing" 0 "$(stat_of nl_resolves)"

check "no kernel warning" bash -c '! dmesg | grep -E "WARNING:|BUG:|Oops"'
((VM_FAILS)) && { echo "--- localsad.log"; grep -v ' debug ' /tmp/localsad.log | tail -40; }
finish
