#!/usr/bin/env bash
# vm test: port attribute changes in the fabric reach the kernel with the right events.
# ibsim's Baselid changes simhca1's LID (LID_CHANGE, sysfs follows); OpenSM moving from
# simhca0 to simhca1 changes sm_lid on both ports (SM_CHANGE) and the new master's first
# sweep asks for client re-registration (CLIENT_REREGISTER, raised by the relay on a new
# master since ibsim does not keep PortInfo:ClientReregister); IsSM follows OpenSM's issm0.
# Usage: tests/vm/events.test.sh 6.1|6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    exec bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --timeout 500 \
        -- bash tests/vm/events.test.sh --guest
fi
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

lid_is() { [[ $(port_lid "$1") == "$2" ]]; }
sm_lid_is() { [[ $(port_sm_lid "$1") == "$2" ]]; }
events_above() { (($(event_count "$1" "$2") > $3)); }
issm() { (($(cat "/sys/class/infiniband/simhca$1/ports/1/cap_mask") & 0x2)); }

eq "simhca1 starts ACTIVE" "4: ACTIVE" "$(port_attr 1 state)"
sm0=$(port_lid 0)
old=$(port_lid 1)
new=$((old + 100))
lc=$(event_count 1 "LID change")

# LID change from the fabric
echo "Baselid \"H1\"[1] $new" >"$VM_FABRIC_DIR/ibsim.in"
check "simhca1's LID follows Baselid $old -> $new" wait_until 10 lid_is 1 "$new"
check "LID_CHANGE raised on simhca1" wait_until 5 events_above 1 "LID change" "$lc"
check "ibstat shows the new LID" bash -c "ibstat simhca1 1 | grep -q 'Base lid: $new\$'"
eq "simhca0's LID unchanged" "$sm0" "$(port_lid 0)"

# the SM moves to simhca1
check "IsSM set on simhca0 while OpenSM runs there" issm 0
sc0=$(event_count 0 "SM change")
sc1=$(event_count 1 "SM change")
rr1=$(event_count 1 "client reregister")
kill "$VM_OPENSM_PID"
check "IsSM cleared on simhca0 when OpenSM exits" wait_until 10 bash -c '! (( $(cat /sys/class/infiniband/simhca0/ports/1/cap_mask) & 0x2 ))'
guid1=$(sed 's/^.*:\(....\):\(....\):\(....\):\(....\)$/\1\2\3\4/' /sys/class/infiniband/simhca1/ports/1/gids/0)
OSM_TMP_DIR=/tmp/osm1 OSM_CACHE_DIR=/tmp/osm1 opensm -g "0x$guid1" -f /tmp/opensm1.log >/dev/null 2>&1 &
osm1=$!
mkdir -p /tmp/osm1
check "OpenSM on simhca1 becomes MASTER" wait_until 60 grep -q "Entering MASTER state" /tmp/opensm1.log
lid1=$(port_lid 1)
check "simhca1's sm_lid moves to its own LID ($lid1)" wait_until 60 sm_lid_is 1 "$lid1"
check "simhca0's sm_lid moves to simhca1 ($lid1)" wait_until 30 sm_lid_is 0 "$lid1"
check "SM_CHANGE raised on simhca0" wait_until 5 events_above 0 "SM change" "$sc0"
check "SM_CHANGE raised on simhca1" wait_until 5 events_above 1 "SM change" "$sc1"
check "CLIENT_REREGISTER raised on simhca1" wait_until 15 events_above 1 "client reregister" "$rr1"
check "IsSM set on simhca1" issm 1
sm=$(sminfo -C simhca0 2>&1 || true)
check "sminfo from simhca0 finds the master on LID $lid1 ($sm)" grep -q "sm lid $lid1 .*SMINFO_MASTER" <<<"$sm"
eq "simhca0 still ACTIVE" "4: ACTIVE" "$(port_attr 0 state)"
eq "no port error on simhca0" "0" "$(event_count 0 "port error")"
kill "$osm1" 2>/dev/null || true
wait "$osm1" 2>/dev/null || true
finish
