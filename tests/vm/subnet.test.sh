#!/usr/bin/env bash
# vm test: OpenSM over simhca reaches MASTER through the real umad0/issm0 and assigns every
# LID of the fabric; saquery (no LD_PRELOAD) on two other simhca nodes gets full multi-record
# tables through the kernel's RMPP (every NodeRecord, PathRecord GetTable for one SGID to
# every port); sysfs and ibstat show the port attributes the SM assigned.
# Usage: tests/vm/subnet.test.sh 6.1|6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    exec bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --hca H5 --timeout 500 \
        -- bash tests/vm/subnet.test.sh --guest
fi
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
nodes=(H0 H1 H5)
n=$(net_nodes)
echo "fabric: $n nodes; simhca0..2 on ${nodes[*]}"

# the SM
sm=$(sminfo -C simhca1 2>&1 || true)
check "sminfo from simhca1 reports a MASTER SM ($sm)" grep -q SMINFO_MASTER <<<"$sm"
eq "the master SM is on simhca0's LID" "sm lid $(port_lid 0)" "$(grep -o 'sm lid [0-9]*' <<<"$sm")"

# every node has a LID, seen from the SM node (loopback) and from a remote node (RMPP)
((n >= 3)) || fail "net file too small for a multi-segment answer"
local_nr=$(saquery -C simhca0 -P 1 NodeRecord 2>&1 || true)
remote_nr=$(saquery -C simhca2 -P 1 NodeRecord 2>&1 || true)
eq "NodeRecords on simhca0 (SA on its own LID)" "$n" "$(grep -c 'NodeRecord dump' <<<"$local_nr")"
eq "NodeRecords on simhca2 (remote, RMPP)" "$n" "$(grep -c 'NodeRecord dump' <<<"$remote_nr")"
lids=$(awk '/^[[:space:]]*lid\.+/ {sub(/.*\.+/, ""); print}' <<<"$remote_nr" | sort -u)
eq "distinct non-zero LIDs" "$n" "$(grep -cv '^0x0*$' <<<"$lids" || true)"

# PathRecord GetTable for one SGID: one record per port of the fabric
sgid=$(port_attr 1 gids/0)
pr=$(saquery -C simhca1 -P 1 -p --sgid "$sgid" 2>&1 || true)
eq "PathRecords from $sgid (simhca1, RMPP)" "$n" "$(grep -c 'PathRecord dump' <<<"$pr")"
eq "every PathRecord starts at simhca1's LID" "$n" "$(grep -cE "slid\.+$(port_lid 1)$" <<<"$pr")"

# port attributes: sysfs, ibstat and the SA agree
for i in 0 1 2; do
    node=${nodes[$i]}
    salid=$(saquery -C simhca1 -P 1 -L "$node" 2>/dev/null | awk 'NR == 1 {print $1}' || true)
    eq "simhca$i state" "4: ACTIVE" "$(port_attr "$i" state)"
    eq "simhca$i phys_state" "5: LinkUp" "$(port_attr "$i" phys_state)"
    eq "simhca$i lid = SA's LID of $node" "$salid" "$(port_lid "$i")"
    eq "simhca$i sm_lid" "$(port_lid 0)" "$(port_sm_lid "$i")"
    eq "simhca$i lid_mask_count" "0" "$(port_attr "$i" lid_mask_count)"
    eq "simhca$i pkey 0" "0xffff" "$(port_attr "$i" pkeys/0)"
    check "simhca$i rate is 4X QDR ($(port_attr "$i" rate))" grep -q "4X QDR" "/sys/class/infiniband/simhca$i/ports/1/rate"
    check "simhca$i GID has the default prefix" grep -q '^fe80:0000:0000:0000:' "/sys/class/infiniband/simhca$i/ports/1/gids/0"
    st=$(ibstat "simhca$i" 1 2>&1 || true)
    check "ibstat simhca$i: Active, base lid $(port_lid "$i"), SM lid $(port_lid 0)" \
        bash -c 'grep -q "State: Active" <<<"$1" && grep -q "Base lid: $2\$" <<<"$1" && grep -q "SM lid: $3\$" <<<"$1"' \
        _ "$st" "$(port_lid "$i")" "$(port_lid 0)"
    eq "simhca$i PORT_ACTIVE raised once" "1" "$(event_count "$i" "port active")"
done
check "IsSM is set on simhca0 (OpenSM holds issm0)" \
    bash -c '(( $(cat /sys/class/infiniband/simhca0/ports/1/cap_mask) & 0x2 ))'
finish
