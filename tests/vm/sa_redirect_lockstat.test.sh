#!/usr/bin/env bash
# vm measurement, not a check of behaviour: lock statistics (CONFIG_LOCK_STAT, /proc/lock_stat)
# of the SA client's locks under bursts of kernel path queries on the debug line. 8-host ibsim
# fabric, OpenSM on simhca0, localsad on simhca1 (--netlink off: the queries take the MAD path).
# Phases, each with lock_stat cleared before and read after:
#   sm       no redirect: ROUNDS bursts of N path queries straight to the master
#   self     sa_redirect=simhca1:1=self, localsad warm: the same bursts, answered by localsad
#   stopped  localsad SIGSTOPped: one burst; every query times out at the target and falls back
#            to the SM (ib_sa_redirect_resend(): the queries lock held across the post)
#   slow     localsad running with its cache flushed, every SA answer held LOCALSA_SLOW_MS
#            (400 ms) by the relay: each Get to a cold localsad waits the redirect's timeout and
#            falls back, while localsad answers the probe (the port stays redirected)
# Prints, per phase, the burst results and the lock_stat lines (times in us) of the SA client's
# and the MAD layer's locks; docs/kernel.md ("Locks on the hot path") has the figures.
# Fails only if lock_stat is missing or a burst loses a query. Label "lockstat", not in any
# default run (tests/vm/CMakeLists.txt). LOCALSA_LOCKSTAT_OUT=FILE keeps the console output;
# LOCALSA_LOCKSTAT_COUNT (200) and LOCALSA_LOCKSTAT_ROUNDS (3) size the bursts,
# LOCALSA_LOCKSTAT_R sets sa_redirect_timeout_ms.
# Usage: tests/vm/sa_redirect_lockstat.test.sh 6.12-debug
# vm-lines: 6.12-debug
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.12-debug}
    cd "$(dirname "$0")/../.."
    t0=$SECONDS
    # as the stress test on this line: the callers and OpenSM get ten and five times the time
    export LOCALSA_STRESS_TIMEOUT_MS=${LOCALSA_STRESS_TIMEOUT_MS:-10000}
    export LOCALSA_VM_OPENSM_ARGS=${LOCALSA_VM_OPENSM_ARGS:--t 1000}
    rc=0
    # LOCALSA_LOCKSTAT_R=MS: sa_redirect_timeout_ms (default 200)
    LOCALSA_RELAY_ARGS="--sa-delay-file /tmp/sa-delay" \
        bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --timeout "${LOCALSA_VM_TIMEOUT:-1500}" \
        --modparam 'ib_core:sa_redirect=simhca1:1=self' \
        --modparam "ib_core:sa_redirect_timeout_ms=${LOCALSA_LOCKSTAT_R:-200}" \
        -- bash tests/vm/sa_redirect_lockstat.test.sh --guest |
        tee "${LOCALSA_LOCKSTAT_OUT:-/dev/null}" || rc=${PIPESTATUS[0]}
    echo "sa_redirect_lockstat $LINE: $((SECONDS - t0)) s"
    exit "$rc"
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
# shellcheck source=tests/vm/lib/localsa-test.sh
. "$(dirname "$0")/lib/localsa-test.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
N=${LOCALSA_LOCKSTAT_COUNT:-200}
ROUNDS=${LOCALSA_LOCKSTAT_ROUNDS:-3}
SLOW_MS=${LOCALSA_SLOW_MS:-400}
RS=/sys/module/ib_core/parameters/sa_redirect
# the lock classes reported (lockdep's names): the SA client's, then the MAD layer's
LOCKS='queries\.xa_lock|&sa_dev->port\[i\]\.ah_lock|ib_nl_request_lock|tid_lock|&port->classport_lock'
LOCKS+='|ib_mad_port_list_lock|&port_priv->reg_lock|ib_mad_clients\.xa_lock|&mad_agent_priv->lock'
LOCKS+='|&mad_queue->lock'
# the test HCA's (simhca: its post_send and the fabric it delivers to)
LOCKS+='|&qp->lock|&sdev->qp_lock|simhca_fabric_lock|&sdev->tx_lock'
# lock_stat appends #N to the second class of a name and /N to a subclass
SUFFIX='(#[0-9]+)?(/[0-9]+)?'
cd /tmp
echo 0 >/tmp/sa-delay

start_localsad() {
    "$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --netlink off --spread-ms 1000 \
        >>/tmp/localsad.log 2>&1 &
    DAEMON=$!
}
trap 'kill -CONT $DAEMON 2>/dev/null; kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n 1; }
preloaded() { [[ $(stat_of preload_state) == "done" ]]; }
delayed() { awk '$1 == "delayed_to_kernel" { print $2 }' "$VM_FABRIC_DIR/relay-1.counters"; }

lockstat_begin() {
    echo 0 >/proc/lock_stat
    echo 1 >/proc/sys/kernel/lock_stat
}
# lockstat_end PHASE: the lines of the reported classes, then their contention points (the
# call sites lock_stat lists under a contended class), and the five most contended classes
lockstat_end() {
    echo 0 >/proc/sys/kernel/lock_stat
    echo "=== lockstat $1: class con-bounces contentions wait-min wait-max wait-total wait-avg" \
        "acq-bounces acquisitions hold-min hold-max hold-total hold-avg (us)"
    grep -E "^ *($LOCKS)$SUFFIX:" /proc/lock_stat | sed 's/^ */LS '"$1"' /'
    awk -v re="^ *($LOCKS)$SUFFIX:" '
        $0 ~ re { on = 1; next }
        on && /^[. ]*$/ { on = 0 }
        on && /\[</ { print "LSPOINT '"$1"' " $0 }' /proc/lock_stat
    awk '/^ *[^ .-].*: +[0-9]/ { n = split($0, a, ":"); split(a[n], f, " ")
        sub(/^ */, ""); print f[2] "\t" $0 }' /proc/lock_stat | sort -k1,1nr | head -n 5 |
        cut -f2- | sed 's/^/LSTOP '"$1"' /'
}
# bursts PHASE COUNT ROUNDS DEST: ROUNDS bursts of COUNT, their results, the sum of lost
bursts() {
    local i r lost=0
    for ((i = 0; i < $3; i++)); do
        r=$(op path_burst "$4" "$2")
        echo "BURST $1 $r"
        lost=$((lost + $(val lost "$r")))
    done
    eq "$1: every query called back" 0 "$lost"
}

check "lock_stat is built in (CONFIG_LOCK_STAT)" test -w /proc/sys/kernel/lock_stat
check "localsa_test loads (caller timeout ${LOCALSA_STRESS_TIMEOUT_MS:-1000} ms)" \
    modprobe localsa_test timeout_ms="${LOCALSA_STRESS_TIMEOUT_MS:-1000}"
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
start_localsad
check "localsad serves simhca1 (preload done)" wait_until 60 preloaded
check "the redirect is in force" wait_until 10 state_is redirect
table=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --table)
lid=$(timeout 10 saquery -C simhca1 -L H2 2>/dev/null | awk 'NR == 1 { print $1 }')
DEST=$(sed -n "s/^dlid=$lid .* dgid=\(.*\)\$/\1/p" <<<"$table" | head -n 1)
check "destination H2 ($DEST)" test -n "$DEST"
# warm-up: the first burst of a boot pays for the slab caches and lockdep's first sight of
# every lock chain
op path_burst "$DEST" "$N" >/dev/null

echo "sa_redirect_timeout_ms=$(cat /sys/module/ib_core/parameters/sa_redirect_timeout_ms)"
echo "--- phase sm: no redirect, $ROUNDS bursts of $N (guest time $SECONDS s)"
echo >"$RS"
check "sm: not redirected" wait_until 10 state_is off
rd0=$(redir 4)
lockstat_begin
bursts sm "$N" "$ROUNDS" "$DEST"
lockstat_end sm
eq "sm: nothing redirected" "$rd0" "$(redir 4)"

echo "--- phase self: localsad warm, $ROUNDS bursts of $N (guest time $SECONDS s)"
echo 'simhca1:1=self' >"$RS"
check "self: redirected" wait_until 10 state_is redirect
rd0=$(redir 4) fb0=$(redir 5)
lockstat_begin
bursts self "$N" "$ROUNDS" "$DEST"
lockstat_end self
echo "REDIR self redirected=$(($(redir 4) - rd0)) fallen_back=$(($(redir 5) - fb0))"

echo "--- phase stopped: localsad SIGSTOPped, 1 burst of $N (guest time $SECONDS s)"
kill -STOP "$DAEMON"
rd0=$(redir 4) fb0=$(redir 5)
lockstat_begin
bursts stopped "$N" 1 "$DEST"
lockstat_end stopped
echo "REDIR stopped redirected=$(($(redir 4) - rd0)) fallen_back=$(($(redir 5) - fb0)) state=$(redir 3)"
kill -CONT "$DAEMON"
check "stopped: resumed, the probe finds localsad again" wait_until 20 state_is redirect

echo "--- phase slow: master answers after $SLOW_MS ms, localsad cold, 1 burst of $N" \
    "(guest time $SECONDS s)"
echo "$SLOW_MS" >/tmp/sa-delay
slow_on() { test "$(delayed)" -gt 0; }
timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --dgid "$DEST" >/dev/null
check "slow: the relay holds SA answers $SLOW_MS ms" wait_until 10 slow_on
"$BIN/localsactl" --control "$CTL" flush >/dev/null
rd0=$(redir 4) fb0=$(redir 5) pb0=$(redir 6)
lockstat_begin
bursts slow "$N" 1 "$DEST"
lockstat_end slow
echo "REDIR slow redirected=$(($(redir 4) - rd0)) fallen_back=$(($(redir 5) - fb0))" \
    "probed=$(($(redir 6) - pb0)) state=$(redir 3)"
echo 0 >/tmp/sa-delay

cat "$RDBG"
check "localsa_test unloads" rmmod localsa_test
finish
