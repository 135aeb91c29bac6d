#!/usr/bin/env bash
# vm test: localsad on a real kernel MAD stack (simhca1, /dev/infiniband/umad1, real RMPP)
# against OpenSM on simhca0. Preload fills the table of every path from the port; Gets are then
# answered from it without the master and equal the master's answers; multi-record GetTables
# go through localsad with RMPP in both directions and equal the master's; a LID change of the
# port makes localsad resync.
# Usage: tests/vm/localsad.test.sh 6.1|6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    exec bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --hca H5 --timeout 500 \
        -- bash tests/vm/localsad.test.sh --guest
fi
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
REPORT_AGENT="python3 $PWD/tests/vm/lib/umad_report_agent.py"
cd /tmp
# Without localsad, a client can take this port's SA Reports on QP1 (the control for below).
eq "before localsad: an agent for SA Reports on simhca1's QP1 registers" registered \
    "$($REPORT_AGENT simhca1 1 || true)"
# Port poll every 100 ms: OpenSM's next sweep gives the port its old LID back after a
# Baselid, sometimes within a second, and the LID change must be seen before that.
"$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --port-poll-ms 100 --spread-ms 1000 \
    >/tmp/localsad.log 2>&1 &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
stat_of() { "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
preloaded() { [[ $(stat_of preload_state 2>/dev/null) == done ]]; }
check "localsad preloads this port's paths" wait_until 20 preloaded
# exit 3: answered with an SA error status, printed like any answer
q() { "$BIN/localsactl" --ca simhca1 query "$@" || [[ $? -eq 3 ]]; }
OWN_LID=$(port_lid 1)

# A subscriber on this port's QP1 cannot get Reports while localsad runs: the MAD layer gives
# the port's SA Reports to the one agent registered for them, localsad; a second is refused.
# So localsad denies InformInfo Sets from this port's QP1 rather than answer OK and deliver
# nothing (the master would accept the Set and send its Reports to localsad).
eq "with localsad: a client's agent for SA Reports on QP1 is refused by the MAD layer" \
    "refused: EINVAL" "$($REPORT_AGENT simhca1 1 || true)"
# InformInfo: GID 0, LIDRange all, generic, subscribe, type all, trap 65, QPN 0, producer all
inform65() { printf '%032dffff000000000101ffff00410000011200ffffff' 0; }
eq "... and localsad denies its InformInfo Set from QP1" REQ_DENIED \
    "$(q sa --attr 0x3 --method set --data "$(inform65)" --lid "$OWN_LID" | sed -n 's/^status=//p')"
OWN_GID=$("$BIN/localsactl" --control "$CTL" -j stats |
    python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")

# The master's table of every path from this port (several MADs: real RMPP).
q pr --sgid "$OWN_GID" --table | grep '^dlid=' | sort >/tmp/master-table
n=$(wc -l </tmp/master-table)
check "the master's table has more records than one MAD holds ($n)" test "$n" -gt 3
pkeys=$(cat /sys/class/infiniband/simhca1/ports/1/pkeys/* | grep -cv '^0x0000$')
PKEY=$(cat /sys/class/infiniband/simhca1/ports/1/pkeys/0)
eq "cold start: one preload transaction per PKey" "$pkeys" "$(stat_of preload_transactions)"
eq "preloaded: one table per PKey" "$((n * pkeys))" "$(stat_of preloaded_paths)"

# Every destination by GID: answered from the preload, equal to the master's Get.
# Queries of localsad's own to the master other than for these Gets: the subscription check
# (every 60 s) may fall into this loop on a slow host.
# One snapshot: a check between two reads would be counted in one and not the other.
upstream_but_checks() { "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    python3 -c "import json,sys; s=json.load(sys.stdin); print(s['upstream_requests'] - s['subscription_checks'])"; }
up0=$(upstream_but_checks)
same=0
total=0
while read -r line; do
    dgid=${line##*dgid=}
    total=$((total + 1))
    m=$(q pr --sgid "$OWN_GID" --dgid "$dgid" --pkey "$PKEY" --reversible 1 --numb-path 1 |
        grep '^dlid=' || true)
    l=$(q pr --sgid "$OWN_GID" --dgid "$dgid" --pkey "$PKEY" --reversible 1 --numb-path 1 --lid "$OWN_LID" |
        grep '^dlid=' || true)
    [[ -n $m && $m == "$l" ]] && same=$((same + 1))
done </tmp/master-table
eq "Gets through localsad equal the master's" "$total" "$same"
eq "... all answered from the preload" "$total" "$(stat_of pr_preload_hits)"
eq "... without a query to the master (subscription checks aside)" "$up0" "$(upstream_but_checks)"

# Multi-record tables through localsad: RMPP from the master to localsad and back to us.
q pr --sgid "$OWN_GID" --table --lid "$OWN_LID" | grep '^dlid=' | sort >/tmp/local-table
check "PathRecord GetTable through localsad equals the master's" cmp -s /tmp/master-table /tmp/local-table
nodes_master=$(q sa --attr 0x11 --method gettable --raw | sed -n 's/^raw=//p' | cut -c33-)
nodes_local=$(q sa --attr 0x11 --method gettable --raw --lid "$OWN_LID" | sed -n 's/^raw=//p' | cut -c33-)
check "NodeRecord GetTable relayed whole ($(( ${#nodes_master} / 2 + 16 )) bytes)" \
    test -n "$nodes_master" -a "$nodes_master" = "$nodes_local" -a "${#nodes_master}" -gt 1000
# A LID change of the port (ibsim Baselid): localsad resyncs, re-subscribes and preloads again.
# (Queries addressed to the new LID need the master's next sweep to route it: not checked.)
resyncs=$(stat_of resyncs)
new_lid=$((OWN_LID + 100))
lid_changes=$(event_count 1 "LID change")
echo "Baselid \"H1\"[1] $new_lid" >"$VM_FABRIC_DIR/ibsim.in"
# The new LID in sysfs, or the driver's LID change event: OpenSM's next sweep may give the port
# its old LID back within a few hundred ms, between two looks at sysfs.
lid_is() { [[ $(port_lid 1) == "$1" ]] || (($(event_count 1 "LID change") > lid_changes)); }
check "simhca1's LID follows Baselid ($OWN_LID -> $new_lid)" wait_until 15 lid_is "$new_lid"
resynced() { (($(stat_of resyncs) > resyncs)); }
check "localsad resyncs on the LID change" wait_until 10 resynced
resubscribed() { [[ $(stat_of subscriptions) == 6 && $(stat_of preload_state) == done ]]; }
check "... re-subscribes and preloads again" wait_until 15 resubscribed
own_lid_now=$("$BIN/localsactl" --control "$CTL" -j stats |
    python3 -c "import json,sys; print(json.load(sys.stdin)['port']['lid'])")
# (OpenSM may give the port its old LID back at its next sweep: another resync.)
eq "localsad follows the port's LID as sysfs shows it" "$(port_lid 1)" "$own_lid_now"

# SM fail-over: OpenSM on simhca0 goes away, a fresh one on simhca2 (H5) becomes master. The
# port poll sees the SM LID move: localsad resyncs and subscribes at the new master.
resyncs=$(stat_of resyncs)
kill "$VM_OPENSM_PID"
guid2=$(sed 's/^.*:\(....\):\(....\):\(....\):\(....\)$/\1\2\3\4/' /sys/class/infiniband/simhca2/ports/1/gids/0)
mkdir -p /tmp/osm2
# OpenSM flushes its log on errors only: without force_log_flush, "SUBNET UP" can sit in its
# buffer as long as nothing at the master errs.
echo "force_log_flush TRUE" >/tmp/osm2/opensm.conf
OSM_TMP_DIR=/tmp/osm2 OSM_CACHE_DIR=/tmp/osm2 opensm -F /tmp/osm2/opensm.conf -g "0x$guid2" \
    -f /tmp/opensm2.log >/dev/null 2>&1 &
OSM2=$!
trap 'kill $DAEMON $OSM2 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
check "OpenSM on simhca2 becomes MASTER" wait_until 90 grep -qs "SUBNET UP" /tmp/opensm2.log
lid2=$(port_lid 2)
sm_is_new() { [[ $("$BIN/localsactl" --control "$CTL" -j stats |
    python3 -c "import json,sys; print(json.load(sys.stdin)['port']['sm_lid'])") == "$lid2" ]]; }
check "localsad sees the new master (SM LID $lid2)" wait_until 60 sm_is_new
check "... resyncs" wait_until 10 resynced
check "... subscribes at the new master and preloads from it" wait_until 30 resubscribed
# Get(InformInfoRecord, SubscriberGID = simhca1) at the master: TOO_MANY_RECORDS = two or more.
gid_hex=$(python3 -c "import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]).packed.hex())" "$OWN_GID")
held=$(q sa --attr 0xf3 --method get --comp-mask 1 --data "$gid_hex" | sed -n 's/^status=//p')
eq "the new master holds localsad's subscriptions" TOO_MANY_RECORDS "$held"
eq "nothing stale served" 0 "$(stat_of stale_served)"
check "localsad still running" kill -0 "$DAEMON"
((VM_FAILS)) && {
    echo "--- localsad.log"
    tail -40 /tmp/localsad.log
    echo "--- opensm2.log"
    grep -v '^$' /tmp/opensm2.log | tail -40
}
finish
