#!/usr/bin/env bash
# sim tier: preload costs the master O(1) per node per event (docs/localsad.md, Coherence).
#   Partitions keep every table within one MAD (ibsim has no RMPP): H1, H2 and H5 share PKey
#   0x8001, every host is a limited member of the default partition 0x7fff, the SM a full one
#   (OpenSM sends H1 Reports only about ports it shares a PKey with).
#   localsad runs with --sim-preload (preload under ibsim, for such fabrics only).
#   - preload runs once at start, keyed by the PKey the kernel asks with (full-member bit set):
#     a Get with PKey 0xffff to the SM's port is answered without asking the master;
#   - a remote port going away and coming back (trap 65, then trap 64 for H5, three times)
#     costs OpenSM no PathRecord query at all: trap 64 only drops negative answers;
#   - a Get naming the DGID but neither SGID nor SLID is answered as OpenSM answers it (it is
#     not answered from the preload: the source is the master's to pick).
# Counts are OpenSM's own (`scripts/fabric sa-count`).
# Usage: preload.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"

# Port GUIDs of a generated tree: host Hn has port GUID 0x100001 + 2n (scripts/fabric help).
PARTS=$(mktemp /tmp/localsa-partitions.XXXXXX)
cat >"$PARTS" <<'PARTITIONS'
Default=0x7fff : ALL=limited, SELF=full ;
PartA=0x8001 : 0x0000000000100003=full, 0x0000000000100005=full, 0x000000000010000b=full ;
PARTITIONS
start_fabric preload --partitions "$PARTS"
rm -f "$PARTS"
sa_count() { "$FABRIC" sa-count --dir "$WORK/fabric"; }
c_start=$(sa_count)
# --no-routing-epoch: Unlink/ReLink of H5 changes OpenSM's routing, hence the routing epoch, which
# renews the tables in use (sim.routing_epoch); here the traps alone are under test.
start_localsad --no-routing-epoch --sim-preload --spread-ms 500 --path-ttl-s 60 --negative-ttl-ms 0
check "localsad starts" test -S "$CTL"

status_of() { q "$@" 2>/dev/null | sed -n 's/^status=//p'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
OWN_GID=fe80::10:3 G0=fe80::10:1 G2=fe80::10:5

for _ in $(seq 50); do [[ $(stats_of preload_state) == done ]] && break; sleep 0.1; done
check "the preload is done ($(stats_of preload_state))" test "$(stats_of preload_state)" = done
c_preload=$(sa_count)
echo "# PathRecord queries at OpenSM for the preload: $((c_preload - c_start))"
check "one GetTable per PKey of the port ($((c_preload - c_start)))" test $((c_preload - c_start)) -eq 2

# --- preload keyed by the PKey the kernel asks with -------------------------------------------
c0=$(sa_count)
a=$(status_of pr --sgid "$OWN_GID" --dgid "$G0" --pkey 0xffff --reversible 1 --numb-path 1 \
    --lid "$OWN_LID" --timeout-ms 1500)
b=$(status_of pr --sgid "$OWN_GID" --dgid "$G2" --pkey 0x8001 --reversible 1 --numb-path 1 \
    --lid "$OWN_LID" --timeout-ms 1500)
c1=$(sa_count)
check "Gets with the full-member PKeys answered ($a, $b)" test "$a" = OK -a "$b" = OK
check "... from the preload, without asking the master ($((c1 - c0)) queries)" test $((c1 - c0)) -eq 0

# --- a remote trap 64 costs the master nothing ---------------------------------------------
reports() { grep -c "Report: trap $1" "$WORK/localsad.log"; }
c0=$(sa_count)
for i in 1 2 3; do
    "$FABRIC" cmd --dir "$WORK/fabric" 'Unlink "H5"' >/dev/null
    for _ in $(seq 50); do (($(reports 65) >= i)) && break; sleep 0.1; done
    "$FABRIC" cmd --dir "$WORK/fabric" 'ReLink "H5"' >/dev/null
    for _ in $(seq 50); do (($(reports 64) >= i)) && break; sleep 0.1; done
done
check "three traps 65 and 64 for H5 reached localsad ($(reports 65), $(reports 64))" \
    test "$(reports 65)" -ge 3 -a "$(reports 64)" -ge 3
sleep 1.5 # longer than the spread window
c1=$(sa_count)
echo "# PathRecord queries at OpenSM after 3 remote traps 64: $((c1 - c0))"
check "remote traps 64 cost OpenSM no PathRecord query ($((c1 - c0)))" test $((c1 - c0)) -eq 0

# --- DGID only: the master picks the sources ------------------------------------------------
m=$(q pr --dgid "$G2" --pkey 0x8001 --timeout-ms 1500 2>/dev/null | grep -v '^tid' | sort)
l=$(q pr --dgid "$G2" --pkey 0x8001 --lid "$OWN_LID" --timeout-ms 1500 2>/dev/null | grep -v '^tid' | sort)
echo "# Get(DGID=H2, PKey 0x8001): master '$(head -1 <<<"$m")', localsad '$(head -1 <<<"$l")'"
check "a Get naming only the DGID gets the master's answer" test -n "$m" -a "$m" = "$l"
check "localsad is still running" kill -0 "$DAEMON_PID"
summary
