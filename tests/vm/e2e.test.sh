#!/usr/bin/env bash
# vm test, end to end: unchanged kernel consumers (localsa_test.ko: ib_sa_path_rec_get,
# rdma_cm AF_IB route resolution, ib_sa_join_multicast) get their answers through localsad
# on simhca1 with ib_core.sa_redirect=simhca1:1=self, and still work when localsad dies.
# Two boots of kernel line $1:
#   patched ib_core: paths and routes equal the master's and are served by localsad (repeats
#     never reach the master); joins and leaves go through localsad's proxy and show at the
#     master; localsad stopped -> a Get goes to the SM after sa_redirect_timeout_ms, a probe
#     finds it hung and the port uses the SM until SIGCONT; kill -9 localsad -> queries go
#     straight to the SM (no agent on the port); localsad restarted -> redirected again as
#     soon as it registers;
#     LID change of simhca1 (ibsim Baselid) -> the redirect follows the new LID;
#   stock ib_core (control): the same consumers talk to the master, localsad sees nothing.
# A multi-record GetTable through localsad (RMPP both ways) is checked by localsad.test.sh.
# On the debug line (6.12-debug) only the patched boot: it has no stock ib_core.
# Usage: tests/vm/e2e.test.sh 6.1|6.12|6.12-debug
# vm-lines: 6.1 6.12 6.12-debug
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12|6.12-debug}
    cd "$(dirname "$0")/../.."
    t0=$SECONDS
    rc=0
    echo "=== e2e $LINE: patched ib_core, sa_redirect=simhca1:1=self"
    bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --timeout "${LOCALSA_VM_TIMEOUT:-400}" \
        --modparam 'ib_core:sa_redirect=simhca1:1=self' \
        -- bash tests/vm/e2e.test.sh --guest patched || rc=1
    t1=$SECONDS
    if [[ $LINE == *-debug ]]; then
        echo "e2e $LINE: patched boot $((t1 - t0)) s (no stock control on the debug line)"
        exit $rc
    fi
    echo "=== e2e $LINE: stock ib_core (control)"
    bash scripts/vm run --kernel "$LINE" --stock --sm H0 --hca H1 --timeout 300 \
        -- bash tests/vm/e2e.test.sh --guest stock || rc=1
    echo "e2e $LINE: patched boot $((t1 - t0)) s, stock boot $((SECONDS - t1)) s, total $((SECONDS - t0)) s"
    exit $rc
fi
KIND=${2:?patched or stock}
# every step is a check: a failing command must not end the run before the report
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
DBG=/sys/kernel/debug/localsa_test
RDBG=/sys/kernel/debug/ib_sa/simhca1/redirect
MGID=ff12:1e2e::1
MGID2=ff12:1e2e::2
cd /tmp

section() { echo "--- $* (guest time ${SECONDS} s)"; }
# --netlink off: this test is about the MAD path (sa_redirect, and the stock control run where
# localsad sees nothing); the netlink service, asked before any MAD, is tests/vm/netlink.test.sh's
start_localsad() {
    "$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --spread-ms 1000 --netlink off \
        >>/tmp/localsad.log 2>&1 &
    DAEMON=$!
}
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
# stat_of KEY: one of localsad's counters (stats prints one "key": value per line; no
# python here, its start-up costs a second under TCG)
stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n 1; }
preloaded() { [[ $(stat_of preload_state) == "done" ]]; }
# the master's answer (localsactl straight to the SM LID from simhca1): the record's fields
master_pr() {
    timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --dgid "$1" --reversible 1 \
        --numb-path 1 | sed -n 's/^\(dlid=.* pkey=0x[0-9a-f]*\) .*/\1/p'
}
# run a localsa_test operation: op DEV_PORT_GID; prints the result line
op() {
    echo "simhca1 1 $2" >"$DBG/$1" || { echo "status=write-failed"; return 0; }
    cat "$DBG/$1"
}
fields() { sed -n 's/^status=0 \(dlid=.* pkey=0x[0-9a-f]*\).*/\1/p' <<<"$1"; }
elapsed_of() { sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p' <<<"$1"; }
# column N of port 1 in /sys/kernel/debug/ib_sa/simhca1/redirect
# (port target state redirected fallen_back probed)
redir() { awk -v n="$1" '$1 == "1" { print $n }' "$RDBG"; }
state_is() { [[ $(redir 3) == "$1" ]]; }
# member port GIDs of MGID at the master (saquery from simhca1 goes to the SM LID; OpenSM
# shows the members' PortGIDs only to a trusted requester: its default SA key, 1)
members_at_master() {
    timeout 10 saquery --smkey 1 -C simhca1 MCMR --mgid "$1" 2>/dev/null |
        sed -n 's/^[[:space:]]*PortGid[.]*\(.*\)$/\1/p'
}
member_is() { [[ $(members_at_master "$1") == "$2" ]]; }
# the group is gone: the master's table of groups (one record per group for an untrusted
# requester) answers, with OpenSM's own IPoIB broadcast group, and does not list MGID
no_member() {
    local all
    all=$(timeout 10 saquery -C simhca1 MCMR 2>/dev/null)
    grep -q 'MGID[.]*ff12:401b:ffff::ffff:ffff$' <<<"$all" && ! grep -q "MGID[.]*$1\$" <<<"$all"
}

check "localsa_test loads (modprobe)" modprobe localsa_test
check "localsa_test's debugfs files" test -w "$DBG/path" -a -w "$DBG/route" -a -w "$DBG/join" -a -w "$DBG/leave"
OWN_LID=$(port_lid 1)
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
TIMEOUT_MS=$(cat /sys/module/localsa_test/parameters/timeout_ms)

start_localsad
check "localsad serves simhca1 (preload done)" wait_until 90 preloaded

# destinations: the hosts H2, H3, H4 (their LIDs from the master, their GIDs from the master's
# table of paths from simhca1)
table=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --table)
DESTS=()
for h in H2 H3 H4; do
    lid=$(timeout 10 saquery -C simhca1 -L "$h" 2>/dev/null | awk 'NR == 1 { print $1 }')
    g=$(sed -n "s/^dlid=$lid .* dgid=\(.*\)\$/\1/p" <<<"$table" | head -n 1)
    [[ -n $lid && -n $g ]] && DESTS+=("$g")
done
check "destinations: the hosts H2, H3, H4 (${DESTS[*]})" test "${#DESTS[@]}" -eq 3

if [[ $KIND == stock ]]; then
    # ---------------------------------------------------------------- control: stock ib_core
    section "control: stock ib_core"
    check "stock ib_core: no sa_redirect parameter" test ! -e /sys/module/ib_core/parameters/sa_redirect
    pr0=$(stat_of pr_requests)
    px0=$(stat_of proxied_requests)
    for d in "${DESTS[@]}"; do
        m=$(master_pr "$d")
        r=$(op path "$d")
        check "path to $d equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
        r=$(op route "$d")
        check "route to $d equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
    done
    r=$(op join "$MGID")
    check "join $MGID ($r)" grep -q '^status=0 mlid=[1-9]' <<<"$r"
    check "... the master has simhca1 as member" wait_until 10 member_is "$MGID" "$OWN_GID"
    r=$(op leave "$MGID")
    check "leave $MGID ($r)" grep -q '^status=0 mlid=[1-9]' <<<"$r"
    check "... the master no longer has the group" wait_until 10 no_member "$MGID"
    eq "localsad saw no kernel PathRecord query" "$pr0" "$(stat_of pr_requests)"
    eq "localsad proxied no kernel query" "$px0" "$(stat_of proxied_requests)"
    # unloading leaves the groups still joined
    r=$(op join "$MGID2")
    check "join $MGID2 ($r)" wait_until 10 member_is "$MGID2" "$OWN_GID"
    check "localsa_test unloads with a group joined" rmmod localsa_test
    check "... and the master no longer has the group" wait_until 10 no_member "$MGID2"
    check "no kernel warning" bash -c '! dmesg | grep -E "WARNING:|BUG:|Oops"'
    check "localsad still running" kill -0 "$DAEMON"
    ((VM_FAILS)) && { echo "--- localsad.log"; tail -20 /tmp/localsad.log; }
    finish
    exit 0
fi

# -------------------------------------------------------------------- patched ib_core
eq "sa_redirect in force" "simhca1:1=self" "$(cat /sys/module/ib_core/parameters/sa_redirect)"
REDIR_MS=$(cat /sys/module/ib_core/parameters/sa_redirect_timeout_ms)
eq "simhca1's SA target is its own LID" "$(printf '0x%x' "$OWN_LID")" "$(redir 2)"
# ib_sa's ClassPortInfo query at port activation went to the SM (no agent on the port yet);
# the redirect is used as soon as localsad has registered
check "the redirect is in force once localsad runs" wait_until 5 state_is redirect
eq "simhca0 is not redirected" off "$(awk '$1 == "1" { print $3 }' /sys/kernel/debug/ib_sa/simhca0/redirect)"

# --- paths and routes through localsad equal the master's
section "paths and routes through localsad"
pr0=$(stat_of pr_requests)
rd0=$(redir 4)
fb0=$(redir 5)
for d in "${DESTS[@]}"; do
    m=$(master_pr "$d")
    r=$(op path "$d")
    check "path to $d through localsad equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
    r=$(op route "$d")
    check "route to $d through localsad equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
done
n=$((2 * ${#DESTS[@]}))
check "localsad served the kernel's $n PathRecord queries ($pr0 -> $(stat_of pr_requests))" \
    test "$(stat_of pr_requests)" -ge $((pr0 + n))
check "ib_sa redirected them ($rd0 -> $(redir 4))" test "$(redir 4)" -ge $((rd0 + n))
eq "none fell back to the SM" "$fb0" "$(redir 5)"
# the same counters in localsad's metrics (it runs as root here: debugfs is readable)
prom=$(timeout 10 "$BIN/localsactl" --control "$CTL" stats --format prometheus)
k_rd=$(sed -n 's/^localsa_kernel_redirected_total{ca="simhca1",port="1"} //p' <<<"$prom")
check "metrics: the kernel's redirected count ($k_rd)" \
    test -n "$k_rd" -a "${k_rd:-0}" -ge $((rd0 + n)) -a "${k_rd:-0}" -le "$(redir 4)"
eq "metrics: ... its fallbacks" "$(redir 5)" \
    "$(sed -n 's/^localsa_kernel_fallen_back_total{ca="simhca1",port="1"} //p' <<<"$prom")"
eq "metrics: ... its state" 1 \
    "$(sed -n 's/^localsa_kernel_redirect_state{ca="simhca1",port="1",state="redirect"} //p' <<<"$prom")"
up0=$(stat_of upstream_requests)
pr1=$(stat_of pr_requests)
for d in "${DESTS[@]}"; do
    op path "$d" >/dev/null
    r=$(op route "$d")
done
check "repeats served by localsad ($pr1 -> $(stat_of pr_requests))" \
    test "$(stat_of pr_requests)" -ge $((pr1 + n))
eq "repeats did not reach the master (upstream_requests)" "$up0" "$(stat_of upstream_requests)"
echo "     route through localsad, cached: elapsed_ms=$(elapsed_of "$r")"

# --- joins through localsad's proxy
section "joins through localsad"
px0=$(stat_of proxied_requests)
r=$(op join "$MGID")
check "join $MGID through localsad ($r)" grep -q '^status=0 mlid=[1-9]' <<<"$r"
check "... proxied by localsad ($px0 -> $(stat_of proxied_requests))" \
    test "$(stat_of proxied_requests)" -gt "$px0"
check "... the master has simhca1 ($OWN_GID) as member" wait_until 10 member_is "$MGID" "$OWN_GID"
px1=$(stat_of proxied_requests)
r=$(op leave "$MGID")
check "leave $MGID ($r)" grep -q '^status=0 mlid=[1-9]' <<<"$r"
check "... the master no longer has the group" wait_until 10 no_member "$MGID"
check "... the leave was proxied by localsad" test "$(stat_of proxied_requests)" -gt "$px1"
eq "no fallback to the SM so far" "$fb0" "$(redir 5)"

# --- localsad stopped (SIGSTOP): it is registered but does not answer; a Get goes to the SM
#     after sa_redirect_timeout_ms and the port probes "self": unanswered, the port uses the
#     SM until a probe is answered
section "localsad stopped"
kill -STOP "$DAEMON"
fb1=$(redir 5)
m=$(master_pr "${DESTS[0]}")
r=$(op route "${DESTS[0]}")
e=$(elapsed_of "$r")
check "localsad stopped: a route still resolves, equal to the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
check "... after the target's timeout, within the caller's ($REDIR_MS <= $e <= $TIMEOUT_MS + $REDIR_MS ms)" \
    test -n "$e" -a "$e" -ge "$REDIR_MS" -a "$e" -le $((TIMEOUT_MS + REDIR_MS))
eq "... it fell back to the SM" $((fb1 + 1)) "$(redir 5)"
check "... the stopped localsad is probed and found hung: fallback" wait_until 10 state_is fallback
m=$(master_pr "${DESTS[1]}")
r=$(op route "${DESTS[1]}")
e=$(elapsed_of "$r")
check "the next route goes to the SM at once, equal to the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
check "... at master speed (elapsed_ms $e < $REDIR_MS)" test -n "$e" -a "$e" -lt "$REDIR_MS"
eq "... without a try at localsad" $((fb1 + 1)) "$(redir 5)"
kill -CONT "$DAEMON"
check "SIGCONT: a probe finds localsad answering again" wait_until 10 state_is redirect
rd1=$(redir 4)
r=$(op route "${DESTS[0]}")
check "... the next route is served by localsad again ($r)" test -n "$(fields "$r")"
check "... redirected, no fallback" test "$(redir 4)" -gt "$rd1" -a "$(redir 5)" = $((fb1 + 1))

# --- kill -9 localsad: nobody serves the SA class on the port; the MAD layer knows, and the
#     queries go straight to the SM: no try at the port, no refusal, no delay
section "localsad killed"
kill -9 "$DAEMON"
wait "$DAEMON" 2>/dev/null
check "state no-agent" wait_until 5 state_is no-agent
fb1=$(redir 5)
rd1=$(redir 4)
m=$(master_pr "${DESTS[1]}")
r=$(op route "${DESTS[1]}")
e=$(elapsed_of "$r")
check "localsad killed: route still resolves, equal to the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
check "... at master speed (elapsed_ms $e < $REDIR_MS)" test -n "$e" -a "$e" -lt "$REDIR_MS"
m=$(master_pr "${DESTS[2]}")
r=$(op path "${DESTS[2]}")
check "path still resolves, equal to the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
r=$(op join "$MGID2")
check "join still works ($r)" grep -q '^status=0 mlid=[1-9]' <<<"$r"
check "... the master has simhca1 as member" wait_until 10 member_is "$MGID2" "$OWN_GID"
r=$(op leave "$MGID2")
check "... and leave ($r)" grep -q '^status=0 mlid=[1-9]' <<<"$r"
check "... the master no longer has the group" wait_until 10 no_member "$MGID2"
eq "... nothing redirected, nothing fell back" "$rd1 $fb1" "$(redir 4) $(redir 5)"

# --- localsad restarted: redirected again as soon as it registers its agents
section "localsad restarted"
t0=$(date +%s%N)
start_localsad
check "redirected again once localsad registers" wait_until 30 state_is redirect
echo "     the redirect was back $((($(date +%s%N) - t0) / 1000000)) ms after localsad was started"
answers() { [[ -n $(stat_of pr_requests) ]]; }
check "localsad restarted" wait_until 30 answers
check "... preloads again" wait_until 30 preloaded
pr2=$(stat_of pr_requests)
rd2=$(redir 4)
m=$(master_pr "${DESTS[2]}")
r=$(op route "${DESTS[2]}")
check "route after the restart equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
check "... served by localsad again ($pr2 -> $(stat_of pr_requests))" \
    test "$(stat_of pr_requests)" -gt "$pr2"
check "... redirected ($rd2 -> $(redir 4))" test "$(redir 4)" -gt "$rd2"

# --- LID change of simhca1 (ibsim Baselid): the redirect follows the port's LID at once.
# The running OpenSM has no route to the new LID (answers to it are lost) and gives the
# port its old LID back at its next sweep, so a fresh OpenSM takes over the fabric as it
# is: it keeps the LIDs it finds, routes the new one, and the queries can follow it.
section "LID change"
new_lid=$((OWN_LID + 100))
echo "Baselid \"H1\"[1] $new_lid" >"$VM_FABRIC_DIR/ibsim.in"
lid_is() { [[ $(port_lid 1) == "$1" ]]; }
check "simhca1's LID follows Baselid ($OWN_LID -> $new_lid)" wait_until 15 lid_is "$new_lid"
target_is() { [[ $(redir 2) == "$1" ]]; }
check "the SA target follows the port's LID ($(printf '0x%x' "$new_lid"))" \
    wait_until 5 target_is "$(printf '0x%x' "$new_lid")"
kill "$VM_OPENSM_PID"
osm_gone() { ! kill -0 "$VM_OPENSM_PID" 2>/dev/null; }
check "the first OpenSM exits" wait_until 20 osm_gone
mkdir -p /tmp/osm2
OSM_TMP_DIR=/tmp/osm2 OSM_CACHE_DIR=/tmp/osm2 opensm -g 0x"$(sed 's/^.*:\(....\):\(....\):\(....\):\(....\)$/\1\2\3\4/' \
    /sys/class/infiniband/simhca0/ports/1/gids/0)" -f /tmp/opensm2.log >/dev/null 2>&1 &
osm2=$!
sa_ready() { saquery -C simhca0 -c >/dev/null 2>&1; }
osm2_master() { grep -q "Entering MASTER state" /tmp/opensm2.log 2>/dev/null && sa_ready; }
check "a fresh OpenSM is master" wait_until 60 osm2_master
check "... and keeps simhca1's new LID" lid_is "$new_lid"
localsad_lid() { [[ $(stat_of lid) == "$1" ]]; }
check "localsad follows the new LID" wait_until 30 localsad_lid "$new_lid"
# While localsad re-learns the new master it relays ib_sa's ClassPortInfo query (and the
# probe) to it; one that went unanswered in the SM switch puts the port in fallback until
# the next probe, sa_redirect_probe_ms later.
PROBE_S=$((($(cat /sys/module/ib_core/parameters/sa_redirect_probe_ms) + 999) / 1000))
check "the redirect is in force at the new LID" wait_until $((PROBE_S + 5)) state_is redirect
pr3=$(stat_of pr_requests)
rd3=$(redir 4)
fb3=$(redir 5)
m=$(master_pr "${DESTS[0]}")
r=$(op path "${DESTS[0]}")
check "path from the new LID equals the master's ($r)" test -n "$m" -a "$m" = "$(fields "$r")"
check "... its SLID is the new LID" grep -q " slid=$new_lid " <<<"$r"
check "... served by localsad ($pr3 -> $(stat_of pr_requests))" \
    test "$(stat_of pr_requests)" -gt "$pr3"
check "... redirected, no fallback" test "$(redir 4)" -gt "$rd3" -a "$(redir 5)" = "$fb3"
kill "$osm2" 2>/dev/null
section "unload"
check "localsad still running" kill -0 "$DAEMON"
check "localsa_test unloads" rmmod localsa_test
check "no kernel warning" bash -c '! dmesg | grep -E "WARNING:|BUG:|Oops"'

((VM_FAILS)) && { echo "--- localsad.log"; tail -20 /tmp/localsad.log; echo "--- $RDBG"; cat "$RDBG"; }
finish
