#!/usr/bin/env bash
# sim tier: the security rules of localsad (docs/localsad.md).
#   Partitions: H1 and H2 share PKey 0x8001, H3 and H4 share 0x8002, every host is only a
#   limited member of the default partition 0x7fff: H1/H2 and H3/H4 share no PKey.
#   - a requester sharing no PKey with a destination never gets its path from the cache: the
#     local SA answers what the master answers (NO_RECORDS);
#   - foreign requesters (another port sending to localsad's LID) are refused: neither served
#     from the cache nor relayed (the master would answer them as if localsad's port asked);
#   - a non-zero SM_Key is relayed to the master and appears in no log line (trace level);
#   - capabilities are gone once the daemon runs; the control socket is private and refuses
#     other users also when its mode is widened; localsactl refuses bad input with exit 2.
# Usage: security.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"

# Port GUIDs of a generated tree: host Hn has port GUID 0x100001 + 2n (scripts/fabric help).
PARTS=$(mktemp /tmp/localsa-partitions.XXXXXX)
cat >"$PARTS" <<'PARTITIONS'
Default=0x7fff : ALL=limited, SELF=full ;
PartA=0x8001 : 0x0000000000100003=full, 0x0000000000100005=full ;
PartB=0x8002 : 0x0000000000100007=full, 0x0000000000100009=full ;
PARTITIONS
start_fabric security --partitions "$PARTS"
rm -f "$PARTS"
SM_LID=$FABRIC_SM_LID
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
SM_KEY=8badf00dcafe1234 # an SM_Key OpenSM does not hold: it drops the query
LOG_LEVEL=trace start_localsad --negative-ttl-ms 600000
check "localsad starts" test -S "$CTL"

eq() { check "$1 ($2 = $3)" test "$2" = "$3"; }
H1=fe80::10:3 H2=fe80::10:5 H3=fe80::10:7 H4=fe80::10:9
check "localsad serves H1 (GID $H1)" test "$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")" = "$H1"
# qn NODE ARGS: localsactl query from NODE; status and records, TID-free.
qn() { local node=$1; shift
    "$FABRIC" run --dir "$WORK/fabric" --node "$node" -- "$BIN/localsactl" query "$@" --timeout-ms 1500 2>/dev/null; }
answer() { qn "$@" | grep -E '^(status|dlid)=' | tr '\n' ' '; }

# --- PKey rule
m13=$(answer H1 pr --sgid "$H1" --dgid "$H3" --lid "$SM_LID")
m12=$(answer H1 pr --sgid "$H1" --dgid "$H2" --lid "$SM_LID")
check "master: H1 -> H2 (shared PKey) has a path ($m12)" grep -q 'status=OK dlid=' <<<"$m12"
check "master: H1 -> H3 (no shared PKey) is NO_RECORDS ($m13)" grep -q 'status=NO_RECORDS' <<<"$m13"
for round in 1 2 3; do
    l13=$(answer H1 pr --sgid "$H1" --dgid "$H3" --lid "$OWN_LID")
    check "local SA H1 -> H3, round $round: the master's answer ($l13)" test "$l13" = "$m13"
    l12=$(answer H1 pr --sgid "$H1" --dgid "$H2" --lid "$OWN_LID")
    check "local SA H1 -> H2, round $round: the master's answer" test "$l12" = "$m12"
done
for dgid in "$H3" "$H4"; do
    m=$(answer H1 pr --sgid "$H1" --dgid "$dgid" --reversible 1 --numb-path 1 --lid "$SM_LID")
    l=$(answer H1 pr --sgid "$H1" --dgid "$dgid" --reversible 1 --numb-path 1 --lid "$OWN_LID")
    check "local SA H1 -> $dgid reversible: equals the master's ($l)" test -n "$m" -a "$m" = "$l"
    m=$(answer H1 pr --sgid "$H1" --dgid "$dgid" --pkey 0x7fff --lid "$SM_LID")
    l=$(answer H1 pr --sgid "$H1" --dgid "$dgid" --pkey 0x7fff --lid "$OWN_LID")
    check "local SA H1 -> $dgid PKey 0x7fff (both limited): equals the master's ($l)" test -n "$m" -a "$m" = "$l"
done
dump_has_path_to() { ctl dump | python3 -c "
import json,sys
e=json.load(sys.stdin)['entries']
sys.exit(0 if any(r['dgid']=='$1' for x in e for r in x['records']) else 1)"; }
no_path_to_h3_h4() { ! dump_has_path_to "$H3" && ! dump_has_path_to "$H4"; }
check "the cache holds no path to H3 or H4" no_path_to_h3_h4
check "... but holds the path to H2" dump_has_path_to "$H2"

# --- foreign requesters: another port sending to localsad's LID. Relayed, the master would take
# localsad's port (H1) for the requester and answer for H1's PKeys: H3 would learn H1's path to
# H2, H4 would be told there is no path to H3. So localsad refuses them (no answer; a kernel's
# sa_redirect then falls back to the master).
hits0=$(stats_of pr_cache_hits) fwd0=$(stats_of pr_forwarded) foreign0=$(stats_of foreign_requests)
prox0=$(stats_of proxied_requests)
sa0=$("$FABRIC" sa-count --dir "$WORK/fabric")
m=$(answer H3 pr --sgid "$H1" --dgid "$H2" --lid "$SM_LID")
check "master to H3: H1 -> H2 is NO_RECORDS for H3 ($m)" grep -q 'status=NO_RECORDS' <<<"$m"
l=$(answer H3 pr --sgid "$H1" --dgid "$H2" --lid "$OWN_LID")
eq "H3 asks localsad for H1 -> H2 (cached OK for H1): no answer, not the cached path" "" "$l"
m=$(answer H4 pr --sgid "$H4" --dgid "$H3" --lid "$SM_LID")
check "master to H4: H4 -> H3 (their own partition) has a path ($m)" grep -q 'status=OK' <<<"$m"
l=$(answer H4 pr --sgid "$H4" --dgid "$H3" --lid "$OWN_LID")
eq "H4 asks localsad for H4 -> H3: no answer (relayed it would be H1's NO_RECORDS)" "" "$l"
l=$(answer H2 pr --sgid "$H2" --dgid "$H1" --lid "$OWN_LID")
eq "H2 (shares 0x8001 with H1) asks localsad: no answer either" "" "$l"
lid_hex=$(printf '%04x' "${LIDS[4]}")
l=$(qn H3 sa --attr 0x11 --comp-mask 0x1 --data "$lid_hex" --lid "$OWN_LID" | sed -n 's/^status=//p')
eq "H3 asks localsad for a NodeRecord: no answer" "" "$l"
eq "the four foreign requests were refused and counted" "$((foreign0 + 4))" "$(stats_of foreign_requests)"
eq "... none served from the cache" "$hits0" "$(stats_of pr_cache_hits)"
eq "... none relayed" "$fwd0 $prox0" "$(stats_of pr_forwarded) $(stats_of proxied_requests)"
eq "... the master saw only the two direct queries" "$((sa0 + 2))" "$("$FABRIC" sa-count --dir "$WORK/fabric")"
check "... logged at debug level" grep -q 'Get PathRecord from LID [0-9]* refused: the requester is another port' "$WORK/localsad.log"

# --- SM_Key: relayed unchanged, never logged
key_req=010302010000000000000000123456780035000000000000000000000000000000000000${SM_KEY}00000000000000000000000c
key_req+=$(printf '%0400d' 0)
keyed() { grep -c "Non-Zero MAD SM_Key: 0x$SM_KEY" "$FABRIC_OSM_LOG"; }
keyed0=$(keyed)
fwd0=$(stats_of pr_forwarded)
k_master=$(qn H1 raw --hex "$key_req" --lid "$SM_LID" | sed -n 's/^status=//p')
sleep 0.3
keyed1=$(keyed)
k_local=$(qn H1 raw --hex "$key_req" --lid "$OWN_LID" | sed -n 's/^status=//p')
sleep 0.3
check "PathRecord with an SM_Key: the same (non-)answer as the master's ('$k_master')" \
    test "$k_master" = "$k_local"
eq "... forwarded, not answered from the cache" "$((fwd0 + 1))" "$(stats_of pr_forwarded)"
check "the master logs the key it drops ($keyed0 -> $keyed1 log lines)" test "$keyed1" -gt "$keyed0"
# OpenSM drops it unanswered; a relayed request gets one try (its requester retries itself),
# with the requester's key.
eq "... relayed through localsad, the same key reached the master once, in its one try" \
    "$((keyed1 + (keyed1 - keyed0)))" "$(keyed)"
node_req=${key_req:0:32}0011${key_req:36}
qn H1 raw --hex "$node_req" --lid "$OWN_LID" >/dev/null
dec=$(printf '%d' "0x$SM_KEY" 2>/dev/null || python3 -c "print(int('$SM_KEY',16))")
sleep 0.5
check "trace log is on (it has PathRecord lines)" grep -q 'PathRecord' "$WORK/localsad.log"
check "the SM_Key appears nowhere in the trace-level log (hex, decimal, spaced)" \
    bash -c "! grep -qiE '$SM_KEY|$dec|8b ?ad ?f0 ?0d ?ca ?fe|cafe1234' '$WORK/localsad.log'"

# --- privileges
pid=$DAEMON_PID # localsad itself (start_localsad: `scripts/fabric run --no-retry` execs it)
status_line() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$pid/status"; }
eq "no effective capabilities" 0000000000000000 "$(status_line CapEff)"
eq "no permitted capabilities" 0000000000000000 "$(status_line CapPrm)"
eq "empty bounding set" 0000000000000000 "$(status_line CapBnd)"
eq "no_new_privs set" 1 "$(status_line NoNewPrivs)"
check "the log says so" grep -q 'privileges dropped: no capabilities' "$WORK/localsad.log"
check "still answering after the drop" grep -q 'status=OK' <<<"$(answer H1 pr --sgid "$H1" --dgid "$H2" --lid "$OWN_LID")"

# --- control socket
chmod 755 "$WORK" # the directory does not stand in the way: the socket's mode and the daemon do
eq "control socket mode" 600 "$(stat -c %a "$CTL")"
eq "control socket owner" root "$(stat -c %U "$CTL")"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
out=$(as_nobody "$BIN/localsactl" --control "$CTL" stats 2>&1); rc=$?
check "nobody cannot connect (exit $rc: $out)" test "$rc" -eq 1 -a -n "$(grep -i 'permission denied' <<<"$out")"
chmod 666 "$CTL" # as if the mode were widened: the daemon's peer check must still refuse
out=$(as_nobody "$BIN/localsactl" --control "$CTL" flush 2>&1); rc=$?
chmod 600 "$CTL"
check "with the socket mode widened, the daemon still refuses nobody (exit $rc: $out)" \
    test "$rc" -eq 1 -a -n "$(grep 'neither root nor the daemon' <<<"$out")"
check "... and logs it" grep -q 'control: refused a client with uid 65534' "$WORK/localsad.log"
check "... and the cache was not flushed" test "$(stats_of cache_entries)" -gt 0

# --- localsactl input validation: exit 2 and a message naming the problem
bad() { local what=$1 pattern=$2; shift 2
    out=$("$BIN/localsactl" "$@" 2>&1); rc=$?
    check "localsactl $what: exit 2, says '$pattern'" test "$rc" -eq 2 -a -n "$(grep -F -- "$pattern" <<<"$out")"; }
bad "bad SGID" "bad SGID 'fe80::zz'" query pr --sgid fe80::zz
bad "LID 0" "bad LID '0' (allowed: 1 to 49151)" query pr --lid 0
bad "multicast LID" "bad LID '0xc000'" query pr --lid 0xc000
bad "LID not a number" "bad LID '12x' (not a number)" query pr --lid 12x
bad "negative DLID" "bad DLID '-1'" query pr --dlid -1
bad "SL 16" "bad SL '16'" query pr --sl 16
bad "odd hex" "even number of digits" query sa --attr 0x11 --data abc
bad "data > 200 bytes" "longer than 200 bytes" query sa --attr 0x11 --data "$(printf '%0402d' 0)"
bad "raw MAD > 256 bytes" "at most 256 bytes" query raw --hex "$(printf '%0514d' 0)"
bad "raw MAD < 24 bytes" "at least 24 bytes" query raw --hex 0103
bad "unknown method" "unknown method 'put'" query sa --attr 0x11 --method put
bad "unknown query kind" "unknown query kind 'xx'" query xx
bad "timeout 0" "--timeout-ms must be between" query pr --timeout-ms 0
bad "port 0" "--port must be between" --port 0 query pr
bad "unknown command" "unknown command 'frobnicate'" --control "$CTL" frobnicate
bad "stats with arguments" "stats takes no arguments" --control "$CTL" stats now
bad "unknown option" "unrecognised option" query pr --frob 1
# --- InformInfo from a client of this port: denied, never relayed. Relayed, a client's
# unsubscribe with localsad's parameters removed localsad's own trap 65 subscription at the master
# (no Report for the next Unlink), and the Reports of a client's subscription go to localsad.
inform() { # SUBSCRIBE(00|01) TRAP(hex4): InformInfo with localsad's own parameters
    printf '%032d' 0; printf 'ffff00000000%s%sffff%s0000011200ffffff' 01 "$1" "$2"; }
st=$(qn H1 sa --attr 0x3 --method set --data "$(inform 00 0041)" --lid "$OWN_LID" | sed -n 's/^status=//p')
eq "a client's InformInfo unsubscribe (trap 65) through localsad: REQ_DENIED" REQ_DENIED "$st"
st=$(qn H1 sa --attr 0x3 --method set --data "$(inform 01 0040)" --lid "$OWN_LID" | sed -n 's/^status=//p')
eq "... and a subscribe (trap 64)" REQ_DENIED "$st"
eq "... counted" 2 "$(stats_of inform_denied)"
reports0=$(stats_of reports_received)
"$FABRIC" cmd --dir "$WORK/fabric" 'Unlink "H2"' >/dev/null
got_trap65() { grep -q 'Report: trap 65 from LID' "$WORK/localsad.log"; }
for _ in $(seq 50); do got_trap65 && break; sleep 0.1; done
check "localsad's own trap 65 subscription is intact: H2 out of service reported" got_trap65
check "... the cache no longer serves H1 -> H2" \
    bash -c "! grep -q 'status=OK' <<<\"$(answer H1 pr --sgid "$H1" --dgid "$H2" --lid "$OWN_LID")\""
"$FABRIC" cmd --dir "$WORK/fabric" 'ReLink "H2"' >/dev/null
check "Reports counted ($reports0 -> $(stats_of reports_received))" test "$(stats_of reports_received)" -gt "$reports0"
check "localsad still running" kill -0 "$DAEMON_PID"
summary
