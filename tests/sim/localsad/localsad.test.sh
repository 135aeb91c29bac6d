#!/usr/bin/env bash
# sim tier: localsad on a simulated fabric against the real OpenSM.
#   ibsim 16-host fat tree, OpenSM master on H0, localsad on H1, queries from H1 addressed to
#   H1's own LID (the local SA) and to the SM LID (the master), compared byte for byte.
# Usage: localsad.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric sim
SM_LID=$FABRIC_SM_LID
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
start_localsad --negative-ttl-ms 600000
check "localsad starts and opens its control socket" test -S "$CTL"
# umad2sim has no verbs device: said once, and the port is polled every second instead.
polled_without_events() {
    [[ $(grep -c 'port events: .*: the port is polled instead' "$WORK/localsad.log") == 1 ]] &&
        grep -q 'polled every 1000 ms (no port events)' "$WORK/localsad.log"
}
check "no port events under umad2sim: said once, polled every 1000 ms" polled_without_events

# The answer with its TID masked (the two askers use different TIDs) and cut to the first 224
# bytes (umad2sim delivers only those intact: docs/fabric.md).
raw() { q "$@" --raw --timeout-ms 1500 | sed -n 's/^raw=//p' | cut -c1-448 |
    sed -E 's/^(.{16}).{16}/\1XXXXXXXXXXXXXXXX/'; }
sa_count() { "$FABRIC" sa-count --dir "$WORK/fabric" --attr "${1:-PathRecord}"; }

OWN_GID=$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")
check "own GID from localsad's stats ($OWN_GID)" test -n "$OWN_GID"
declare -a DGIDS
for i in 2 3 5 8 13; do
    DGIDS+=("$(q pr --sgid "$OWN_GID" --dlid "${LIDS[$i]}" | sed -n 's/.* dgid=\([^ ]*\).*/\1/p')")
done
check "destination GIDs learned (${DGIDS[*]})" test "${#DGIDS[@]}" -eq 5 -a -n "${DGIDS[4]}"

# Query shapes: [name]=arguments. Every answer from the local SA must equal the master's.
declare -A SHAPES=(
    [sgid-dgid]="pr --sgid $OWN_GID --dgid ${DGIDS[0]}"
    [sgid-dgid-reversible]="pr --sgid $OWN_GID --dgid ${DGIDS[1]} --reversible 1 --numb-path 1"
    [sgid-dlid]="pr --sgid $OWN_GID --dlid ${LIDS[5]}"
    [pkey]="pr --sgid $OWN_GID --dgid ${DGIDS[2]} --pkey 0xffff"
    [sl]="pr --sgid $OWN_GID --dgid ${DGIDS[3]} --sl 0"
    [sl-none]="pr --sgid $OWN_GID --dgid ${DGIDS[3]} --sl 3"
    [service-id]="pr --sgid $OWN_GID --dgid ${DGIDS[4]} --service-id 0x1000000000000001"
    [table-one]="pr --sgid $OWN_GID --dgid ${DGIDS[0]} --table"
    [no-such-gid]="pr --sgid $OWN_GID --dgid fe80::dead:beef"
    [self]="pr --sgid $OWN_GID --dgid $OWN_GID"
)
before=$(sa_count)
for name in "${!SHAPES[@]}"; do
    read -ra args <<<"${SHAPES[$name]}"
    master=$(raw "${args[@]}" --lid "$SM_LID")
    local_sa=$(raw "${args[@]}" --lid "$OWN_LID")
    check "PathRecord $name: local SA answer equals the master's" \
        test -n "$master" -a "$master" = "$local_sa"
done
after_first=$(sa_count)
hits_before=$(stats_of pr_cache_hits)
for round in 1 2; do
    for name in "${!SHAPES[@]}"; do
        read -ra args <<<"${SHAPES[$name]}"
        local_sa=$(raw "${args[@]}" --lid "$OWN_LID")
        [[ -n $local_sa ]] || fail "repeat $round of $name unanswered"
    done
done
after_repeat=$(sa_count)
hits_after=$(stats_of pr_cache_hits)
n=${#SHAPES[@]}
check "first round: master saw its own $n queries + at most $n misses ($((after_first - before)))" \
    test $((after_first - before)) -ge "$n" -a $((after_first - before)) -le $((2 * n))
check "repeated queries do not reach the master (OpenSM count $after_first -> $after_repeat)" \
    test "$after_repeat" -eq "$after_first"
check "repeated queries are cache hits ($hits_before -> $hits_after)" \
    test $((hits_after - hits_before)) -ge $((2 * n - 2))

# Other attributes are proxied: the same answer as the master's.
lid_hex=$(printf '%04x' "${LIDS[3]}")
master=$(raw sa --attr 0x11 --comp-mask 0x1 --data "$lid_hex" --lid "$SM_LID")
local_sa=$(raw sa --attr 0x11 --comp-mask 0x1 --data "$lid_hex" --lid "$OWN_LID")
check "NodeRecord Get through localsad equals the master's" test -n "$master" -a "$master" = "$local_sa"
MGID=ff12401bffff0000000000000000ffff # the IPoIB broadcast group of the default partition
master=$(raw sa --attr 0x38 --comp-mask 0x1 --data "$MGID" --lid "$SM_LID")
local_sa=$(raw sa --attr 0x38 --comp-mask 0x1 --data "$MGID" --lid "$OWN_LID")
check "MCMemberRecord Get through localsad equals the master's" \
    test -n "$master" -a "$master" = "$local_sa"
master=$(raw sa --attr 0x1 --lid "$SM_LID")
local_sa=$(raw sa --attr 0x1 --lid "$OWN_LID")
# RespTimeValue is the low 5 bits of MAD bytes 60-63 (hex digits 120-127).
check "ClassPortInfo answered by localsad differs from the master's only in RespTimeValue" \
    test -n "$master" -a "${master:0:126}" = "${local_sa:0:126}" -a "${master:128}" = "${local_sa:128}"
check "... which covers localsad's upstream budget (3 x 200 ms: 18 = 0x12)" \
    test "$(( 0x${local_sa:126:2} & 0x1f ))" -eq 18
check "proxied requests counted" test "$(stats_of proxied_requests)" -ge 2

# Malformed input: the right status, or a counted drop; the daemon keeps answering.
status_of() { q "$@" --timeout-ms 800 2>/dev/null | sed -n 's/^status=//p'; }
good=$(q pr --sgid "$OWN_GID" --dgid "${DGIDS[0]}" --raw | sed -n 's/^raw=//p')
mad_with() { # OFFSET_HEX_CHARS REPLACEMENT: the good request's bytes with a change
    local req=010302010000000000000000123456780035000000000000000000000000000000000000000000000000000000000000000000000000000c
    req+=$(printf '%0400d' 0)
    echo "${req:0:$1}$2${req:$(($1 + ${#2}))}"
}
base=$(mad_with 0 01)
check "class version 1 -> BAD_VERSION" test "$(status_of raw --hex "$(mad_with 4 01)" --lid "$OWN_LID")" = BAD_VERSION
check "unknown method 0x09 -> UNSUP_METHOD" test "$(status_of raw --hex "$(mad_with 6 09)" --lid "$OWN_LID")" = UNSUP_METHOD
check "Set(PathRecord): the same (non-)answer as the master's" \
    test "$(status_of raw --hex "$(mad_with 6 02)" --lid "$OWN_LID")" = "$(status_of raw --hex "$(mad_with 6 02)" --lid "$SM_LID")"
half_sid=$(mad_with 96 0000000000000001) # comp mask: ServiceID high half only
check "half a ServiceID -> INSUF_COMPS, as the master" \
    test "$(status_of raw --hex "$half_sid" --lid "$OWN_LID")" = INSUF_COMPS
check "... and the master says the same" \
    test "$(status_of raw --hex "$half_sid" --lid "$SM_LID")" = INSUF_COMPS
# OpenSM checks the rate, then the MTU, then the ServiceID (issue 26 item 9).
put() { echo "${1:0:$2}$3${1:$(($2 + ${#3}))}"; } # HEX OFFSET_HEX_CHARS REPLACEMENT
bad_rate=$(put "$(mad_with 96 00000000000c0001)" 222 81) # Rate+selector, ServiceID high; rate 1
check "invalid rate and half a ServiceID -> REQ_INVALID at the master" \
    test "$(status_of raw --hex "$bad_rate" --lid "$SM_LID")" = REQ_INVALID
check "... and the same from localsad" \
    test "$(status_of raw --hex "$bad_rate" --lid "$OWN_LID")" = REQ_INVALID
# What the master ignores reaches it once per request, as when asked directly (item 15).
smir0=$(sa_count SMInfoRecord)
status_of sa --attr 0x18 --method set --lid "$SM_LID" >/dev/null
smir1=$(sa_count SMInfoRecord)
status_of sa --attr 0x18 --method set --lid "$OWN_LID" >/dev/null
smir2=$(sa_count SMInfoRecord)
check "Set(SMInfoRecord) through localsad reaches OpenSM as often as asked directly ($((smir1 - smir0)) / $((smir2 - smir1)))" \
    test $((smir2 - smir1)) -eq $((smir1 - smir0)) -a $((smir1 - smir0)) -ge 1
stray_before=$(stats_of stray_rmpp)
check "RMPP on a Get is dropped (no answer)" \
    test -z "$(status_of raw --hex "$(mad_with 48 0101010000000000)" --lid "$OWN_LID")"
check "... and counted" test "$(stats_of stray_rmpp)" -eq $((stray_before + 1))
check "still answering after bad input" \
    test "$(status_of pr --sgid "$OWN_GID" --dgid "${DGIDS[1]}" --lid "$OWN_LID")" = OK
check "localsad is still running" kill -0 "$DAEMON_PID"

# Control socket: stats has the documented counters; dump lists entries; flush empties.
for c in pr_requests pr_cache_hits pr_cache_misses upstream_requests upstream_timeouts \
    proxied_requests malformed_dropped cache_entries; do
    v=$(stats_of $c 2>/dev/null)
    [[ $v =~ ^[0-9]+$ ]] || fail "stats lacks $c"
done
check "dump lists the cached answers" test "$(ctl dump | grep -c '"comp_mask"')" -eq "$(stats_of cache_entries)"
check "flush empties the cache" bash -c "'$BIN/localsactl' --control '$CTL' flush >/dev/null && test \$('$BIN/localsactl' --control '$CTL' -j stats | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"cache_entries\"])') -eq 0"
check "control socket is private (mode 600)" test "$(stat -c %a "$CTL" 2>/dev/null || command stat -c %a "$CTL")" = 600

summary
