#!/usr/bin/env bash
# vm test: the netlink local path service and ib_core.sa_redirect together (patched ib_core,
# sa_redirect=simhca1:1=self, localsad with --netlink on). The kernel asks netlink first, the
# redirected MAD second; each query is answered once:
#   a route answered over netlink sends no MAD (the port's `redirected` count stays);
#   a path with no record: localsad asks the master once, replies with the error, the kernel
#     then sends the MAD, redirected to localsad, which answers it from the same cache entry
#     (the rebuilt query is the kernel's own): OpenSM sees one PathRecord query, not two;
#   localsad stopped: netlink timeout (800 ms), then the redirected MAD's (200 ms), then the SM;
#   localsad killed while a query waits on netlink: the MAD keeps the redirect decided before
#     netlink, the port without agent refuses it, the SM answers: the netlink timeout plus one
#     round trip, no sa_redirect_timeout_ms;
#   localsad killed: no listener, no agent: straight to the SM.
# Usage: tests/vm/netlink_redirect.test.sh 6.1|6.12
# vm-lines: 6.12
# (how the two paths combine is the same code in both lines' sa_query.c: one line in the suite)
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    LOCALSA_VM_COUNT_SA=1 exec bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 \
        --timeout 400 --modparam 'ib_core:sa_redirect=simhca1:1=self' \
        -- bash tests/vm/netlink_redirect.test.sh --guest
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
DBG=/sys/kernel/debug/localsa_test
RDBG=/sys/kernel/debug/ib_sa/simhca1/redirect
KERNEL_TIMEOUT_MS=800
cd /tmp

section() { echo "--- $* (guest time ${SECONDS} s)"; }
"$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --spread-ms 1000 >/tmp/localsad.log 2>&1 &
DAEMON=$!
trap 'kill -CONT $DAEMON 2>/dev/null; kill -9 $DAEMON 2>/dev/null; wait 2>/dev/null || true' EXIT
stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n 1; }
listening() { [[ $(stat_of nl_listening) == true ]]; }
osm_pr() { grep -c 'Posting Dispatcher message OSM_MSG_MAD_PATH_RECORD$' "$VM_FABRIC_DIR/opensm.log"; }
redir() { awk -v n="$1" '$1 == "1" { print $n }' "$RDBG"; }
state_is() { [[ $(redir 3) == "$1" ]]; }
master_pr() {
    timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --dgid "$1" --reversible 1 \
        --numb-path 1 | sed -n 's/^\(dlid=.* pkey=0x[0-9a-f]*\) .*/\1/p'
}
op() {
    echo "simhca1 1 $2" >"$DBG/$1" || { echo "status=write-failed"; return 0; }
    cat "$DBG/$1"
}
fields() { sed -n 's/^status=0 \(dlid=.* pkey=0x[0-9a-f]*\).*/\1/p' <<<"$1"; }
elapsed_of() { sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p' <<<"$1"; }

eq "sa_redirect in force" "simhca1:1=self" "$(cat /sys/module/ib_core/parameters/sa_redirect)"
REDIR_MS=$(cat /sys/module/ib_core/parameters/sa_redirect_timeout_ms)
check "localsa_test loads" modprobe localsa_test
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
check "localsad listens on RDMA_NL_GROUP_LS" wait_until 30 listening
check "the redirect is in force" wait_until 10 state_is redirect
lid=$(timeout 10 saquery -C simhca1 -L H2 2>/dev/null | awk 'NR == 1 { print $1 }')
DEST=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --table |
    sed -n "s/^dlid=$lid .* dgid=\(.*\)\$/\1/p" | head -n 1)
check "destination H2 ($DEST)" test -n "$DEST"

section "answered over netlink: no MAD"
m=$(master_pr "$DEST")
rd0=$(redir 4)
n0=$(stat_of nl_answered)
pr0=$(stat_of pr_requests)
r=$(op route "$DEST")
check "route equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
eq "... answered over netlink" $((n0 + 1)) "$(stat_of nl_answered)"
eq "... localsad's PathRecord service asked once" $((pr0 + 1)) "$(stat_of pr_requests)"
eq "... no MAD redirected" "$rd0" "$(redir 4)"

section "error reply, then the redirected MAD: one master query"
NOWHERE=fe80::77:7777
sa0=$(osm_pr)
e0=$(stat_of nl_errors)
rd0=$(redir 4)
fb0=$(redir 5)
pr0=$(stat_of pr_requests)
r=$(op path "$NOWHERE")
check "path to $NOWHERE fails as the master says ($r)" grep -q '^status=-' <<<"$r"
eq "... localsad replied with the error over netlink" $((e0 + 1)) "$(stat_of nl_errors)"
eq "... the kernel then sent the MAD, redirected to localsad" $((rd0 + 1)) "$(redir 4)"
eq "... which answered it (no fallback)" "$fb0" "$(redir 5)"
eq "... localsad's PathRecord service saw both (netlink, MAD)" $((pr0 + 2)) "$(stat_of pr_requests)"
eq "... OpenSM saw one query, not two (the same cache key)" $((sa0 + 1)) "$(osm_pr)"

section "localsad stopped"
kill -STOP "$DAEMON"
m=$(master_pr "$DEST")
fb0=$(redir 5)
r=$(op route "$DEST")
e=$(elapsed_of "$r")
check "route still resolves, equal to the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
check "... after both timeouts ($KERNEL_TIMEOUT_MS + $REDIR_MS <= $e ms)" \
    test -n "$e" -a "${e:-0}" -ge $((KERNEL_TIMEOUT_MS + REDIR_MS))
eq "... the redirected MAD fell back to the SM" $((fb0 + 1)) "$(redir 5)"
kill -CONT "$DAEMON"
# The probe found localsad hung: the port sends to the SM until a probe (every
# sa_redirect_probe_ms) is answered again.
PROBE_S=$((($(cat /sys/module/ib_core/parameters/sa_redirect_probe_ms) + 999) / 1000))
check "the port is redirected again once a probe finds localsad" \
    wait_until $((PROBE_S + 5)) state_is redirect

section "localsad killed while a query is parked on netlink"
# The redirect is decided when the query is built, before netlink; the MAD that the netlink
# timeout releases keeps that decision. A target that died meanwhile costs one refusal
# (the MAD layer answers 0x000c for a port with no agent), not sa_redirect_timeout_ms.
kill -STOP "$DAEMON"
rd0=$(redir 4)
fb0=$(redir 5)
op route "$DEST" >/tmp/parked.out &
OP=$!
sleep 0.3
kill -9 "$DAEMON"
kill -CONT "$DAEMON" 2>/dev/null
wait "$DAEMON" 2>/dev/null
wait "$OP"
r=$(cat /tmp/parked.out)
e=$(elapsed_of "$r")
check "route resolves ($r)" test -n "$(fields "$r")"
check "... it waited on netlink ($KERNEL_TIMEOUT_MS <= $e ms)" \
    test -n "$e" -a "${e:-0}" -ge "$KERNEL_TIMEOUT_MS"
check "... then one refusal, not a redirect timeout ($e < $KERNEL_TIMEOUT_MS + $REDIR_MS ms)" \
    test -n "$e" -a "${e:-99999}" -lt $((KERNEL_TIMEOUT_MS + REDIR_MS))
eq "... its MAD went to the target decided before netlink" $((rd0 + 1)) "$(redir 4)"
eq "... which refused it: sent again to the SM" $((fb0 + 1)) "$(redir 5)"

section "localsad killed"
check "state no-agent" wait_until 5 state_is no-agent
r=$(op route "$DEST")
e=$(elapsed_of "$r")
check "route resolves ($r)" test -n "$(fields "$r")"
check "... straight to the SM (elapsed_ms $e < $REDIR_MS)" test -n "$e" -a "${e:-9999}" -lt "$REDIR_MS"
check "no kernel warning" bash -c '! dmesg | grep -E "WARNING:|BUG:|Oops"'
((VM_FAILS)) && { echo "--- localsad.log"; tail -30 /tmp/localsad.log; echo "--- $RDBG"; cat "$RDBG"; }
finish
