#!/usr/bin/env bash
# sim tier: answers localsad must not give (docs/localsad.md, Coherence), each compared with
# what the real OpenSM does with the same request:
#   - a request with a wrong SM_Key is dropped by OpenSM: localsad answers none of them itself
#     (ClassPortInfo, a PathRecord that fails OpenSM's checks, an InformInfo Set);
#   - a refresh the master answers NO_RECORDS with --negative-ttl-ms 0 (nothing negative is
#     kept) drops the cached path at once: the old path is not served on --max-staleness-s.
#     Run without subscriptions, so no trap tells localsad first.
# (umad2sim delivers every MAD as 256 bytes, so the length of a GetTable answer built locally
# is checked by the unit tests.)
# Usage: answers.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric answers
TTL_S=2
start_localsad --no-subscribe --negative-ttl-ms 0 --path-ttl-s $TTL_S --max-staleness-s 60 \
    --upstream-timeout-ms 200
check "localsad starts" test -S "$CTL"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
status_of() { q "$@" 2>/dev/null | sed -n 's/^status=//p'; }
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
# Port GUIDs of a generated tree: host Hn has port GUID 0x100001 + 2n (scripts/fabric help).
OWN_GID=fe80::10:3 G5=fe80::10:b

# --- wrong SM_Key: OpenSM drops it, localsad must not answer it itself -----------------------
SM_KEY=8badf00dcafe1234 # not OpenSM's SA key (default 1)
zeros() { printf '%0*d' "$1" 0; }
# mad METHOD ATTR COMP_MASK DATA: a 256-byte SA MAD in hex with SM_Key $SM_KEY.
mad() {
    local hdr="010302$1""0000""0000""00000000000a11ce""$2""0000""00000000"
    local data=$4
    echo "$hdr$(zeros 24)$SM_KEY""0000""0000""$3$data$(zeros $((400 - ${#data})))"
}
CPI=$(mad 01 0001 0000000000000000 "")
# PathRecord Get, SGID + DGID + MTU selector + MTU 7 (invalid: REQ_INVALID from OpenSM's checks)
PR_DATA="0000000000000000""fe800000000000000000000000100007""fe800000000000000000000000100003"
PR_DATA+="$(zeros 28)""87"
PR=$(mad 01 0035 000000000003000c "$PR_DATA")
# InformInfo Set from QP1 (localsad would answer REQ_DENIED), trap 64
# (GID 0, LIDRangeBegin 0xffff, IsGeneric 1, Subscribe 1, Type 0xffff, QPN 1, producer 0xffffff)
II_DATA="$(zeros 32)ffff""0000""0000""01""01""ffff""0040""00000112""00ffffff"
II=$(mad 02 0003 0000000000000000 "$II_DATA")
for what in "ClassPortInfo:$CPI" "PathRecord failing OpenSM's checks:$PR" "InformInfo Set:$II"; do
    name=${what%%:*} hex=${what#*:}
    m=$(status_of raw --hex "$hex" --timeout-ms 800)
    l=$(status_of raw --hex "$hex" --lid "$OWN_LID" --timeout-ms 1500)
    check "wrong SM_Key, $name: the master drops it (answer '${m:-none}')" test -z "$m"
    check "wrong SM_Key, $name: localsad does not answer it either (answer '${l:-none}')" test -z "$l"
done

# --- a refresh answered NO_RECORDS, nothing negative kept: the path goes at once -------------
check "the path to H5 is served" test "$(status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID" --timeout-ms 1500)" = OK
"$FABRIC" cmd --dir "$WORK/fabric" 'Unlink "H5"' >/dev/null
t_unlink=$(now_ms)
gone=
for _ in $(seq 50); do
    [[ $(status_of pr --sgid "$OWN_GID" --dgid "$G5" --timeout-ms 1000) == NO_RECORDS ]] && { gone=1; break; }
    sleep 0.1
done
check "the master answers NO_RECORDS for H5 after Unlink" test -n "$gone"
# Used every 0.3 s, the answer comes due within TTL + 10 %; its refresh gets NO_RECORDS.
last=
while (($(now_ms) - t_unlink < (TTL_S * 2 + 1) * 1000)); do
    last=$(status_of pr --sgid "$OWN_GID" --dgid "$G5" --lid "$OWN_LID" --timeout-ms 1000)
    sleep 0.3
done
check "after the refresh answered NO_RECORDS localsad answers NO_RECORDS, not the old path ('$last')" \
    test "$last" = NO_RECORDS
check "localsad is still running" kill -0 "$DAEMON_PID"
summary
