#!/usr/bin/env bash
# vm test, stress of ib_core.sa_redirect on kernel line $1 (the normal Debian kernel; the same
# operations are meant for a KASAN/lockdep build): 8-host ibsim fabric, OpenSM on simhca0,
# localsad on simhca1 with sa_redirect=simhca1:1=self, localsa_test's stress operations:
#   - bursts of hundreds of path queries in flight (localsa_test path_burst);
#   - the same with every query cancelled mid-flight, also while localsad is stopped so that
#     the cancels race the end of the try at the target and the fallback to the SM;
#   - rdma_cm ids destroyed mid-resolve (route_burst with DESTROY_MS);
#   - a multicast leave to a dead target (localsad killed: straight to the SM) and to a
#     silent fixed LID (not sent twice: it times out);
#   - localsad killed and restarted while a burst is in flight.
# Pass: every query calls back once (lost=0) with 0, or -EINTR when cancelled; never
# -ETIMEDOUT or -EIO; no kernel warning, BUG, lockdep or sleeping-in-atomic report.
# Usage: tests/vm/sa_redirect_stress.test.sh 6.1|6.12|6.12-debug
# vm-lines: 6.1 6.12 6.12-debug
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12|6.12-debug}
    cd "$(dirname "$0")/../.."
    t0=$SECONDS
    if [[ $LINE == *-debug ]]; then
        # KASAN, lockdep and kmemleak under TCG: a burst of 200 queries takes the guest ~3 s
        # (Debian's kernel: a fraction of one), and it starves OpenSM's SMPs to its own port of
        # their 200 ms ("SM port is down" until its next sweep). What is tested is that every
        # query calls back once with the right status, not how fast: the callers and OpenSM
        # get ten and five times the time.
        export LOCALSA_STRESS_TIMEOUT_MS=${LOCALSA_STRESS_TIMEOUT_MS:-10000}
        export LOCALSA_VM_OPENSM_ARGS=${LOCALSA_VM_OPENSM_ARGS:--t 1000}
    fi
    bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --timeout "${LOCALSA_VM_TIMEOUT:-540}" \
        --modparam 'ib_core:sa_redirect=simhca1:1=self' \
        -- bash tests/vm/sa_redirect_stress.test.sh --guest
    rc=$?
    echo "sa_redirect_stress $LINE: $((SECONDS - t0)) s"
    exit $rc
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
# shellcheck source=tests/vm/lib/localsa-test.sh
. "$(dirname "$0")/lib/localsa-test.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
# at most ~256 MADs in flight through one ibsim (testbed.md): the bursts that fall back to
# the SM stay below that
N=${LOCALSA_STRESS_COUNT:-200}
MGID=ff12:1e2e::7
cd /tmp

section() { echo "--- $* (guest time ${SECONDS} s)"; }
# --netlink off: the stress is on the redirected MAD path (the netlink service would answer first)
start_localsad() {
    "$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --netlink off --spread-ms 1000 >>/tmp/localsad.log 2>&1 &
    DAEMON=$!
}
trap 'kill -CONT $DAEMON 2>/dev/null; kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n 1; }
preloaded() { [[ $(stat_of preload_state) == "done" ]]; }
# burst_ok DESCRIPTION RESULT [CANCELLED]: every query called back, with 0 (or -EINTR when
# cancelled), none timed out or failed otherwise
burst_ok() {
    local r=$2 want_eintr=${3:-}
    echo "     $r"
    eq "$1: every query called back" 0 "$(val lost "$r")"
    eq "$1: none timed out or failed" "0 0" "$(val etimedout "$r") $(val other "$r")"
    if [[ -z $want_eintr ]]; then
        eq "$1: all answered" "$(val count "$r")" "$(val ok "$r")"
    else
        eq "$1: answered + cancelled" "$(val count "$r")" $(($(val ok "$r") + $(val eintr "$r")))
    fi
}
members_at_master() {
    timeout 10 saquery --smkey 1 -C simhca1 MCMR --mgid "$1" 2>/dev/null |
        sed -n 's/^[[:space:]]*PortGid[.]*\(.*\)$/\1/p'
}
member_is() { [[ $(members_at_master "$1") == "$2" ]]; }
no_member() { [[ -z $(members_at_master "$1") ]]; }

check "localsa_test loads (caller timeout ${LOCALSA_STRESS_TIMEOUT_MS:-1000} ms)" \
    modprobe localsa_test timeout_ms="${LOCALSA_STRESS_TIMEOUT_MS:-1000}"
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
REDIR_MS=$(cat /sys/module/ib_core/parameters/sa_redirect_timeout_ms)
start_localsad
check "localsad serves simhca1 (preload done)" wait_until 30 preloaded
check "the redirect is in force" wait_until 10 state_is redirect
table=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --table)
lid=$(timeout 10 saquery -C simhca1 -L H2 2>/dev/null | awk 'NR == 1 { print $1 }')
DEST=$(sed -n "s/^dlid=$lid .* dgid=\(.*\)\$/\1/p" <<<"$table" | head -n 1)
check "destination H2 ($DEST)" test -n "$DEST"

section "burst of $N path queries through localsad"
pr0=$(stat_of pr_requests)
rd0=$(redir 4)
r=$(op path_burst "$DEST" "$N")
burst_ok "burst" "$r"
check "localsad served them ($pr0 -> $(stat_of pr_requests))" test "$(stat_of pr_requests)" -ge $((pr0 + N))
check "ib_sa redirected them ($rd0 -> $(redir 4))" test "$(redir 4)" -ge $((rd0 + N))
r=$(op path_burst "$DEST" "$N")
burst_ok "again (cached)" "$r"

section "burst of $N path queries, all cancelled after 1 ms"
r=$(op path_burst "$DEST" "$N" 1)
burst_ok "cancelled burst" "$r" cancelled

section "localsad stopped: $N path queries, cancelled as their try at localsad ends"
kill -STOP "$DAEMON"
fb0=$(redir 5)
# Gets waiting R at a silent target make the port probe it; unanswered after R more, the
# port falls back and the Gets' tries at localsad end: the cancels race that, at 2R
r=$(op path_burst "$DEST" "$N" $((2 * REDIR_MS)))
burst_ok "cancels racing the fallback" "$r" cancelled
echo "     fallen back $fb0 -> $(redir 5), state $(redir 3)"
check "... the stopped localsad is probed and found hung: fallback" wait_until 10 state_is fallback
r=$(op path_burst "$DEST" 100)
burst_ok "stopped localsad: 100 queries go to the SM" "$r"

section "rdma_cm ids destroyed mid-resolve"
r=$(op route_burst "$DEST" 100 100)
burst_ok "stopped localsad: 100 ids destroyed 100 ms into resolution" "$r" cancelled
kill -CONT "$DAEMON"
check "localsad resumed: the probe finds it answering again" wait_until 10 state_is redirect
r=$(op route_burst "$DEST" 100 5)
burst_ok "100 ids destroyed 5 ms into resolution" "$r" cancelled
r=$(op route_burst "$DEST" 100)
burst_ok "100 routes resolved" "$r"

section "multicast leave to a dead target"
r=$(op join "$MGID")
check "join through localsad ($r)" grep -q '^status=0 mlid=[1-9]' <<<"$r"
check "... the master has simhca1 as member" wait_until 10 member_is "$MGID" "$OWN_GID"
kill -9 "$DAEMON"
wait "$DAEMON" 2>/dev/null
check "localsad killed: state no-agent" wait_until 5 state_is no-agent
fb0=$(redir 5)
r=$(op leave "$MGID")
check "leave ($r)" grep -q '^status=0' <<<"$r"
check "... reaches the master directly: no member left" wait_until 5 no_member "$MGID"
eq "... without a fallback" "$fb0" "$(redir 5)"
# a silent fixed LID: a Delete that timed out there is parked until a probe tells whether
# the target hangs; only when the probe gets no answer either does it go to the master, once
echo '' >/sys/module/ib_core/parameters/sa_redirect
r=$(op join "$MGID")
check "join straight to the master ($r)" grep -q '^status=0 mlid=[1-9]' <<<"$r"
echo 'simhca1:1=0x3ff' >/sys/module/ib_core/parameters/sa_redirect
fb0=$(redir 5)
r=$(op leave "$MGID")
check "leave to the silent LID 0x3ff returns ($r)" grep -q '^status=0' <<<"$r"
# until the probe finds 0x3ff gone, nothing may reach the master (on a slow guest the probe
# ends within 2 s of the timeout)
# (membership first, then the state: a member that left while the port still shows the
# target was removed by a Delete sent to the master before the probe ended)
still_member_while_redirected() {
    while member_is "$MGID" "$OWN_GID"; do
        state_is redirect || return 0
        sleep 0.2
    done
    ! state_is redirect
}
check "... the Delete is not sent to the master after the target's 200 ms" \
    still_member_while_redirected
check "... the silent target is found gone (probe)" wait_until 15 state_is fallback
check "... the parked Delete then reaches the master" wait_until 20 no_member "$MGID"
eq "... sent there once by the redirect" "$(redir 5)" "$((fb0 + 1))"
echo 'simhca1:1=self' >/sys/module/ib_core/parameters/sa_redirect

section "localsad killed and restarted under load"
start_localsad
check "localsad restarted" wait_until 30 preloaded
check "redirect in force" wait_until 10 state_is redirect
op path_burst "$DEST" "$N" >/tmp/burst.out &
burst=$!
sleep 0.3
kill -9 "$DAEMON"
wait "$DAEMON" 2>/dev/null
start_localsad
wait $burst
burst_ok "burst across kill -9 and restart" "$(cat /tmp/burst.out)"
check "localsad back" wait_until 30 preloaded
# queries that timed out at the killed one made the port probe "self"; if the probe went
# unanswered, the port uses the SM until a probe is answered (every second)
check "... and the redirect in force again" wait_until 10 state_is redirect
pr0=$(stat_of pr_requests)
r=$(op path_burst "$DEST" "$N")
burst_ok "burst after the restart" "$r"
check "served by localsad again ($pr0 -> $(stat_of pr_requests))" \
    test "$(stat_of pr_requests)" -ge $((pr0 + N))

section "unload"
cat "$RDBG"
check "localsa_test unloads" rmmod localsa_test
check "no kernel warning, BUG, lockdep or atomic-sleep report" bash -c \
    '! dmesg | grep -E "WARNING:|BUG:|Oops|INFO: possible|circular locking|sleeping function called|KASAN|UBSAN|suspected memory leak"'
finish
