#!/usr/bin/env bash
# vm benchmark (label vmbench): an all-to-all job start of N nodes at scale, on the real MAD
# layer, with localsa's preload. The fabric is a fat tree of N hosts (scripts/fabric gen) in
# ibsim; OpenSM runs on simhca0 (H0) and logs every SA request it dispatches
# (LOCALSA_VM_COUNT_SA); localsa-fleet runs on simhca1 (H1) over the real umad1, where the
# kernel does RMPP, so each node's LocalSa can preload its table (one GetTable per node and
# PKey). Phases (LOCALSA_VMBENCH_PHASES, default baseline,cold,warm,preload):
#   baseline  every rank asks the master (no localsa);
#   cold      through empty local SAs (every miss read through);
#   warm      the next job, answered from the caches;
#   preload   caches emptied, every node preloads its table, then the job.
# Per phase the master's SA transactions (OpenSM's log) and OpenSM's CPU seconds (/proc).
# LOCALSA_VMBENCH_SAMPLE=K: baseline and cold send only K ranks' queries (to every peer), for
# an N whose N(N-1) single Gets do not fit the guest's time.
# LOCALSA_VMBENCH_PRELOAD_AT_ONCE=K: at most K nodes preload at once (localsa-fleet
# --preload-at-once; default its --max-in-flight, 0: all at once).
# Prints the fleet's JSON between "fleet-json begin" and "fleet-json end".
# Usage: tests/vm/bench_fleet.bench.sh 6.12 [N]   (N hosts, default 64)
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12 [N]}
    N=${2:-${LOCALSA_VMBENCH_HOSTS:-64}}
    cd "$(dirname "$0")/../.."
    net=$(mktemp "$PWD/.bench-fleet-net.XXXXXX") # the guest sees the host's root, not its /tmp
    trap 'rm -f "$net"' EXIT
    bash scripts/fabric gen --hosts "$N" >"$net"
    mem=1024
    # a LocalSa's cache takes a 2 MiB huge-page chunk: 256 of them do not fit 1 GiB with the rest
    ((N > 64)) && mem=3072
    ((N > 256)) && mem=6144 # and 1,024 of them, a 1,024-host OpenSM and ibsim do not fit 3 GiB
    t0=$SECONDS
    rc=0
    echo "host_load_before $(cut -d' ' -f1-3 /proc/loadavg)"
    # ibsim's queues deep enough for the fleet's traffic; OpenSM's SMPs wait 1 s, not 200 ms,
    # for an answer through the busy simulation (a timed-out PortInfo of its own port sends it
    # back to discovering, and the fabric froze at N = 256 with both at their defaults)
    LOCALSA_VM_COUNT_SA=1 LOCALSA_VM_SUBNET_WAIT_S=$((N > 256 ? 900 : 120)) \
        LOCALSA_VM_DGRAM_QLEN=1024 LOCALSA_VM_OPENSM_ARGS="-t 1000" \
        bash scripts/vm run --kernel "$LINE" --net "$net" --sm H0 --hca H1 --mem "$mem" \
        --timeout "${LOCALSA_VMBENCH_TIMEOUT:-3000}" \
        -- bash tests/vm/bench_fleet.bench.sh --guest || rc=$?
    echo "bench_fleet $LINE N=$N: $((SECONDS - t0)) s"
    echo "host_load_after $(cut -d' ' -f1-3 /proc/loadavg)"
    exit $rc
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
PHASES=${LOCALSA_VMBENCH_PHASES:-baseline,cold,warm,preload}
cd /tmp
OSM_LOG=$VM_FABRIC_DIR/opensm.log

# "NODE LID" of every CA port (NodeRecords of node type 1), as `scripts/fabric lid --all`
ca_nodes 1 >/tmp/nodes.txt
HOSTS=$(wc -l </tmp/nodes.txt)
check "NodeRecords of every host ($HOSTS)" test "$HOSTS" -eq "$(grep -cE '^(Hca|Ca)[[:space:]]' "$VM_FABRIC_DIR/net")"
echo "opensm_cpu_s_before $(awk '{ sub(/^.*\) /, ""); print ($12 + $13) / 100 }' "/proc/$VM_OPENSM_PID/stat")"
echo "guest_mem_kb $(awk '/MemTotal/ { print $2 }' /proc/meminfo)"

# progress every 30 s: OpenSM's PathRecord count, its state changes, the ports' events
(while sleep 30; do
    echo "progress: $(grep -c 'OSM_MSG_MAD_PATH_RECORD$' "$OSM_LOG") PathRecord requests at OpenSM;" \
        "$(dmesg | grep -c 'simhca.: port 1: PORT_ERR') PORT_ERR events"
done) &
MONITOR=$!
rc=0
# bounded: the JSON holds every phase done when a later one never ends
timeout "${LOCALSA_VMBENCH_FLEET_S:-1800}" "$BIN/localsa-fleet" --ca simhca1 --nodes /tmp/nodes.txt --phases "$PHASES" \
    --timeout-ms 20000 --master-pid "$VM_OPENSM_PID" --depth "${LOCALSA_VMBENCH_DEPTH:-64}" \
    --max-in-flight "${LOCALSA_VMBENCH_DEPTH:-64}" \
    --upstream-timeout-ms "${LOCALSA_VMBENCH_UPSTREAM_MS:-5000}" \
    --sample-sources "${LOCALSA_VMBENCH_SAMPLE:-0}" \
    ${LOCALSA_VMBENCH_PRELOAD_AT_ONCE:+--preload-at-once "$LOCALSA_VMBENCH_PRELOAD_AT_ONCE"} \
    --count-cmd "grep -c 'Posting Dispatcher message OSM_MSG_MAD_PATH_RECORD\$' $OSM_LOG" \
    --count-all-cmd "grep -c 'Posting Dispatcher message OSM_MSG_MAD_' $OSM_LOG" \
    --json /tmp/fleet.json 2>/tmp/fleet.err || rc=$?
kill "$MONITOR" 2>/dev/null
echo "fleet-json begin"
cat /tmp/fleet.json 2>/dev/null
echo "fleet-json end"
eq "localsa-fleet: every phase without error" 0 "$rc"
if ((rc != 0)); then
    tail -n 20 /tmp/fleet.err
    dmesg | grep simhca | tail -n 10
    grep -E 'SM port is down|MASTER|DISCOVERING|timeout|Timeout' "$OSM_LOG" | tail -n 10
fi
echo "opensm dropped SA MADs: $(grep -c 'Dropping MAD since the dispatcher' "$OSM_LOG")"
echo "guest memory at the end: $(awk '/MemAvailable/ { print $2 }' /proc/meminfo) kB available"
finish
