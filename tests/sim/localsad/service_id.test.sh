#!/usr/bin/env bash
# sim tier: rdma_cm's PathRecord questions (ServiceID and QoSClass in the component mask, one
# ServiceID per listening port) against the real OpenSM, with and without a QoS policy.
#   Without QoS (OpenSM's ClassPortInfo does not advertise IsQoSSupported): every ServiceID is
#   served from one cached path, one query at the master in all, each answer byte for byte the
#   master's. With QoS on and a policy that maps a ServiceID range to SL 2: each ServiceID is
#   its own question, and the answers (SL 2 in the range, SL 0 outside) still equal the master's.
# Usage: service_id.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"

# rdma_cm's mask (cma_query_ib_route): ServiceID, DGID, SGID, Reversible, NumbPath, PKey, QoSClass.
MASK=0x780f
# The record of such a question: ServiceID, DGID, SGID, DLID 0, SLID 0, flow 0, TClass 0,
# Reversible 1 + NumbPath 1, PKey 0xffff, QoSClass (12 bits) + SL 0.
record() { # SERVICE_ID_HEX16 DGID_HEX32 SGID_HEX32 QOS_CLASS
    printf '%s%s%s00000000000000000081ffff%04x' "$1" "$2" "$3" $(($4 << 4))
}
gid_hex() { python3 -c "import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]).packed.hex())" "$1"; }
# The answer with its TID masked (the two askers use different TIDs) and cut to the first 224
# bytes (umad2sim delivers only those intact: docs/fabric.md).
ask() { # LID SERVICE_ID QOS_CLASS
    q sa --attr 0x35 --comp-mask $MASK --data "$(record "$2" "$DGID_HEX" "$OWN_HEX" "$3")" \
        --lid "$1" --raw --timeout-ms 1500 | sed -n 's/^raw=//p' | cut -c1-448 |
        sed -E 's/^(.{16}).{16}/\1XXXXXXXXXXXXXXXX/'
}
sl_of() { echo $((0x${1:218:2} & 0xf)); } # SL: low 4 bits of PathRecord byte 53 (MAD byte 109)
sa_count() { "$FABRIC" sa-count --dir "$WORK/fabric"; }
learned_cpi() { grep -c 'master SA ClassPortInfo' "$WORK/localsad.log"; }

# Ports 0x4e20.. of RDMA_PS_TCP (0x0106): ServiceIDs as rdma_cm makes them.
SIDS=(0000000001064e20 0000000001064e21 0000000001064e2f 0000000001064e30 0000000001061389
    0000000000000013)

phase() { # NAME [fabric up options]: fabric + localsad, OWN_HEX, DGID_HEX
    start_fabric "$@"
    SM_LID=$FABRIC_SM_LID
    mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
    OWN_LID=${LIDS[1]}
    start_localsad
    check "localsad starts" test -S "$CTL"
    for _ in $(seq 50); do (($(learned_cpi) > 0)) && break; sleep 0.1; done
    OWN_GID=$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")
    local dgid
    dgid=$(q pr --sgid "$OWN_GID" --dlid "${LIDS[6]}" | sed -n 's/.* dgid=\([^ ]*\).*/\1/p')
    OWN_HEX=$(gid_hex "$OWN_GID")
    DGID_HEX=$(gid_hex "$dgid")
    check "destination GID learned ($dgid)" test -n "$dgid"
}

# ---- OpenSM without QoS
phase service-id
check "localsad learned the master's ClassPortInfo" test "$(learned_cpi)" -ge 1
check "... which advertises no QoS support: ServiceID left out of the key" \
    grep -q 'ServiceID and QoSClass left out' "$WORK/localsad.log"
before=$(sa_count)
declare -A LOCAL
for sid in "${SIDS[@]}"; do
    for qc in 0 3; do LOCAL[$sid.$qc]=$(ask "$OWN_LID" "$sid" "$qc"); done
done
after=$(sa_count)
check "${#LOCAL[@]} questions (6 ServiceIDs x 2 QoS classes) cost the master one query ($((after - before)))" \
    test $((after - before)) -eq 1
check "... and were one miss and $((${#LOCAL[@]} - 1)) cache hits" \
    test "$(stats_of pr_cache_misses)" -eq 1 -a "$(stats_of pr_cache_hits)" -eq $((${#LOCAL[@]} - 1))
for sid in "${SIDS[@]}"; do
    for qc in 0 3; do
        master=$(ask "$SM_LID" "$sid" "$qc")
        check "ServiceID $sid QoSClass $qc: the local SA's answer equals the master's" \
            test -n "$master" -a "$master" = "${LOCAL[$sid.$qc]}"
    done
done
cleanup_phase() {
    kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
    DAEMON_PID=
    "$FABRIC" down --dir "$WORK/fabric" >/dev/null 2>&1
    cd / && rm -rf "$WORK"
}
cleanup_phase

# ---- OpenSM with QoS and a policy: RDMA_PS_TCP ports 0x4e20-0x4e2f on SL 2, the rest SL 0
POLICY=$(mktemp /tmp/localsa-qos-policy.XXXXXX)
cat >"$POLICY" <<'QOS'
qos-ulps
    default                                                 : 0
    any, service-id 0x0000000001064e20-0x0000000001064e2f   : 2
end-qos-ulps
QOS
phase service-id-qos --qos-policy "$POLICY"
rm -f "$POLICY"
check "the master advertises QoS support: ServiceID kept in the key" \
    bash -c "! grep -q 'ServiceID and QoSClass left out' '$WORK/localsad.log'"
before=$(sa_count)
unset LOCAL
declare -A LOCAL
for sid in "${SIDS[@]}"; do LOCAL[$sid]=$(ask "$OWN_LID" "$sid" 0); done
after=$(sa_count)
check "each of the ${#SIDS[@]} ServiceIDs is a question of its own at the master ($((after - before)))" \
    test $((after - before)) -eq "${#SIDS[@]}"
for sid in "${SIDS[@]}"; do
    master=$(ask "$SM_LID" "$sid" 0)
    check "ServiceID $sid: the local SA's answer equals the master's (SL $(sl_of "$master"))" \
        test -n "$master" -a "$master" = "${LOCAL[$sid]}"
    again=$(ask "$OWN_LID" "$sid" 0)
    check "... and so does the cached answer" test "$again" = "$master"
done
check "the policy's range is on SL 2" test "$(sl_of "${LOCAL[0000000001064e21]}")" -eq 2
check "... the rest on SL 0" test "$(sl_of "${LOCAL[0000000001064e30]}")" -eq 0
check "the repeats were cache hits" test "$(stats_of pr_cache_hits)" -eq "${#SIDS[@]}"

summary
