#!/usr/bin/env bash
# sim tier: an idle cache costs the master nothing (docs/localsad.md, Coherence).
# localsad (--path-ttl-s 3) is asked 8 paths once, then left alone. Only answers used since
# their last refresh are asked again: the idle ones leave the cache after the idle window (one
# TTL by default), and from then on OpenSM receives no PathRecord query at all (counted in
# OpenSM's own log, `scripts/fabric sa-count`). A path that keeps being used is refreshed
# (re-routes raise no trap) and served from the cache meanwhile.
# Usage: idle.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric idle
TTL_S=3
# --no-routing-epoch: the TTL rules (with the routing epoch a used path is kept until the epoch
# changes, not refreshed: sim.routing_epoch).
start_localsad --no-routing-epoch --path-ttl-s $TTL_S --upstream-timeout-ms 200
check "localsad starts" test -S "$CTL"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
sa_count() { "$FABRIC" sa-count --dir "$WORK/fabric"; }
status_of() { q "$@" 2>/dev/null | sed -n 's/^status=//p'; }
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
OWN_GID=$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")
ask() { status_of pr --sgid "$OWN_GID" --dlid "$1" --lid "$OWN_LID" --timeout-ms 1500; }

# --- 8 paths asked once ----------------------------------------------------------------------
answered=0
for n in 2 3 4 5 6 7 8 9; do
    [[ $(ask "${LIDS[$n]}") == OK ]] && answered=$((answered + 1))
done
check "8 paths answered through localsad ($answered)" test "$answered" -eq 8
t_asked=$(now_ms)

# --- idle: after the idle window (one TTL, +10 % jitter, + one refresh try), nothing more ----
# The answers come due 2.7-3.3 s after they were stored; an idle one is dropped then instead of
# refreshed. Wait 2 TTL to be clear of it, then watch the master for 2 more TTL.
while (($(now_ms) - t_asked < 2 * TTL_S * 1000)); do sleep 0.2; done
c0=$(sa_count)
sleep $((2 * TTL_S))
c1=$(sa_count)
echo "# PathRecord queries at OpenSM from the idle cache, $((2 * TTL_S)) s after its idle window: $((c1 - c0))"
check "an idle cache sends OpenSM no PathRecord query after its idle window ($((c1 - c0)))" \
    test $((c1 - c0)) -eq 0

# --- a used path is refreshed, and served from the cache meanwhile ----------------------------
c0=$(sa_count)
t0=$(now_ms)
ok=0 total=0
while (($(now_ms) - t0 < 3 * TTL_S * 1000)); do
    [[ $(ask "${LIDS[10]}") == OK ]] && ok=$((ok + 1))
    total=$((total + 1))
    sleep 0.3
done
c1=$(sa_count)
used=$((c1 - c0))
echo "# one path used for $((3 * TTL_S)) s ($total queries): $used PathRecord queries at OpenSM"
check "a used path is served all along ($ok of $total)" test "$ok" -eq "$total"
# One miss, then one refresh per TTL while used: 1 + 2..3.
check "a used path is refreshed while used, and only it ($used: 3-4 expected)" \
    test "$used" -ge 3 -a "$used" -le 4
check "localsad is still running" kill -0 "$DAEMON_PID"
summary
