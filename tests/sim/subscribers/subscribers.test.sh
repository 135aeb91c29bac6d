#!/usr/bin/env bash
# sim tier: event subscribers on localsad's own port. Clients of H1 that subscribe from a UD QP
# other than QP1 (sim-ud-subscriber: an ibsim client attached with that QP number) send their
# InformInfo Set to localsad; localsad keeps its own subscriptions at the master, fans the
# master's Reports out to the matching clients (InformInfo filters: trap number, LIDRange on the
# Notice's IssuerLID), retries a Report a client does not answer (3 tries at 200 ms), holds at the
# master only what its clients add (master_extra_subscriptions), and still refuses InformInfo from
# QP1 clients (inform_denied). A client's unsubscribe must never remove localsad's own
# subscription at the master. A subscriber talking to OpenSM directly is the control.
# Prints the measured Report delays.
# Usage: subscribers.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric subscribers

# --- subscribers: sim-ud-subscriber processes on H1, output in $WORK/sub.NAME -------------------
declare -A SUB_PID=()
# start_sub NAME OPTIONS...: start a subscriber on H1 (OPTIONS: --qp, --trap, ...)
start_sub() {
    local name=$1
    shift
    "$BIN/sim-ud-subscriber" --node H1 --sim-basename "$IBSIM_SOCKNAME" --timeout-ms 1000 "$@" \
        >"$WORK/sub.$name" 2>"$WORK/sub.$name.err" &
    SUB_PID[$name]=$!
}
# stop_sub NAME: SIGTERM, wait up to 5 s for it to unsubscribe and exit (then SIGKILL); sets
# sub_rc to its exit status (empty when it had to be killed)
stop_sub() {
    local pid=${SUB_PID[$1]:-}
    sub_rc=
    [[ -n $pid ]] || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    else
        wait "$pid" 2>/dev/null
        sub_rc=$?
    fi
    unset "SUB_PID[$1]"
}
stop_all_subs() { local n; for n in "${!SUB_PID[@]}"; do stop_sub "$n"; done; }
trap 'stop_all_subs; cleanup' EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# wait_for SECONDS COMMAND...: poll COMMAND every 50 ms until it succeeds or SECONDS (whole)
# pass
wait_for() {
    local end=$(($(now_ms) + $1 * 1000))
    shift
    while :; do
        "$@" && return 0
        (($(now_ms) >= end)) && return 1
        sleep 0.05
    done
}
eq() { check "$1 ($2 = $3)" test "$2" = "$3"; }
after() { if [[ -n $1 ]]; then echo "+$(($1 - $2)) ms"; else echo "none"; fi; } # T_MS T0

# json NAME EVENT KEY [N]: KEY of the Nth (default 1st) EVENT line of subscriber NAME
json() {
    python3 - "$WORK/sub.$1" "$2" "$3" "${4:-1}" <<'PY'
import json, sys
path, event, key, nth = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
seen = 0
for line in open(path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == event:
        seen += 1
        if seen == nth:
            print(e.get(key, ""))
            break
PY
}
has_event() { grep -q "\"event\":\"$2\"" "$WORK/sub.$1" 2>/dev/null; }
# reports NAME TRAP: how many Reports of TRAP subscriber NAME printed
reports() { grep -c "\"event\":\"report\".*\"trap\":$2," "$WORK/sub.$1" 2>/dev/null; }
reports_ge() { (($(reports "$1" "$2") >= $3)); }
# subscribed NAME: wait (up to 5 s: 3 tries of 1 s) for the subscribed line, print its status
subscribed() {
    wait_for 5 has_event "$1" subscribed
    json "$1" subscribed status
}
# stat NAME: one counter of `localsactl stats`, empty when localsad does not have it
stat() { ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin).get('$1', ''))"; }
stat_is() { [[ $(stat "$1") == "$2" ]]; }
stat_ge() { local v; v=$(stat "$1") && [[ $v =~ ^[0-9]+$ ]] && ((v >= $2)); }
fabric_cmd() { "$FABRIC" cmd --dir "$WORK/fabric" "$1" >/dev/null; }

SM_LID=$FABRIC_SM_LID
OWN_LID=$("$FABRIC" lid --dir "$WORK/fabric" H1)
# SUBSCRIBERS_SA_LID=master sends A-E's Sets to OpenSM instead of localsad: a dry run of this
# script's own logic (the localsad counters and D's retries then fail by design).
SA_LID=$OWN_LID
[[ ${SUBSCRIBERS_SA_LID:-} == master ]] && SA_LID=$SM_LID
# Port GUIDs of a generated tree: host Hn has port GUID 0x100001 + 2n (scripts/fabric help)
H3_GID=fe80::10:7

# --- 1. localsad on H1 holds its own six subscriptions at the master
start_localsad --subscription-check-s 1
check "localsad starts" test -S "$CTL"
wait_for 5 stat_is subscriptions 6
eq "localsad subscribed to its six traps at the master" 6 "$(stat subscriptions)"

# --- 2. subscriber A: trap 65 through localsad
start_sub A --qp 0x100 --sa-lid "$SA_LID" --trap 65
eq "A (qp 0x100, trap 65) subscribed through localsad (LID $OWN_LID)" 0 "$(subscribed A)"
wait_for 1 stat_is client_subscriptions 1
eq "localsad holds one client subscription" 1 "$(stat client_subscriptions)"

# --- 3. B: trap 65 with a LIDRange that excludes the master's LID (IssuerLID of traps 64/65;
# OpenSM on H0 has LID 1 in the generated tree, so 1-1 would not do); C: trap 64; D: trap 65 and
# never answers a Report
B_RANGE=$((SM_LID + 1))-$((SM_LID + 1))
start_sub B --qp 0x101 --sa-lid "$SA_LID" --trap 65 --lid-range "$B_RANGE"
start_sub C --qp 0x102 --sa-lid "$SA_LID" --trap 64
start_sub D --qp 0x103 --sa-lid "$SA_LID" --trap 65 --no-ack
eq "B (qp 0x101, trap 65, LIDRange $B_RANGE) subscribed" 0 "$(subscribed B)"
eq "C (qp 0x102, trap 64) subscribed" 0 "$(subscribed C)"
eq "D (qp 0x103, trap 65, no ReportResp) subscribed" 0 "$(subscribed D)"
wait_for 1 stat_is client_subscriptions 4
eq "localsad holds four client subscriptions" 4 "$(stat client_subscriptions)"

# --- 4. InformInfo from a QP1 client (localsactl) is still refused
inform() { # SUBSCRIBE(00|01) TRAP(hex4): InformInfo with localsad's own parameters
    printf '%032d' 0
    printf 'ffff00000000%s%sffff%s0000011200ffffff' 01 "$1" "$2"
}
denied0=$(stat inform_denied)
st=$(q sa --attr 0x3 --method set --data "$(inform 01 0041)" --lid "$OWN_LID" --timeout-ms 1500 \
    2>/dev/null | sed -n 's/^status=//p')
eq "a QP1 client's InformInfo Set (trap 65) to localsad: REQ_DENIED" REQ_DENIED "$st"
eq "... counted as inform_denied" "$((denied0 + 1))" "$(stat inform_denied)"

# --- 5. Unlink H3: trap 65 fanned out to A (once) and D (3 tries, unanswered), not to B or C
received0=$(stat reports_received)
t_unlink=$(now_ms)
fabric_cmd 'Unlink "H3"'
wait_for 5 reports_ge A 65 1
t_a=$(json A report t_ms)
check "A got the trap 65 Report ($(after "$t_a" "$t_unlink") after Unlink)" test -n "$t_a"
[[ -n $t_a ]] && echo "# Unlink -> Report at A through localsad: $((t_a - t_unlink)) ms"
eq "... its subject is H3" "$H3_GID" "$(json A report subject_gid)"
eq "... sent by localsad (LID $SA_LID)" "$SA_LID" "$(json A report from_lid)"
wait_for 5 reports_ge D 65 3
sleep 1 # late duplicates or a 4th try would show within 1 s (tries are 200 ms apart)
eq "A got exactly one Report" 1 "$(reports A 65)"
eq "B (LIDRange $B_RANGE excludes the master's IssuerLID) got none" 0 "$(grep -c '"event":"report"' "$WORK/sub.B")"
eq "C (trap 64) got none" 0 "$(grep -c '"event":"report"' "$WORK/sub.C")"
eq "D (no ReportResp) got the Report 3 times" 3 "$(reports D 65)"
tids=$(for i in 1 2 3; do json D report tid "$i"; done | sort -u)
check "... with the same TID each time ($(tr '\n' ' ' <<<"$tids"))" test "$(wc -l <<<"$tids")" -eq 1 -a -n "$tids"
t_d1=$(json D report t_ms 1) t_d3=$(json D report t_ms 3)
[[ -n $t_d1 && -n $t_d3 ]] && echo "# D's three tries: first at +$((t_d1 - t_unlink)) ms, last $((t_d3 - t_d1)) ms later"
wait_for 2 stat_is reports_undelivered 1
eq "localsad counts the unanswered Report (reports_undelivered)" 1 "$(stat reports_undelivered)"
check "... and the delivered one (reports_fanned_out $(stat reports_fanned_out) >= 1)" stat_ge reports_fanned_out 1
wait_for 2 stat_ge reports_received $((received0 + 1))
check "localsad received the Report itself (reports_received $received0 -> $(stat reports_received))" \
    stat_ge reports_received $((received0 + 1))
check "... and its cache follows: the master's NO_RECORDS for H3" \
    test "$(q pr --sgid fe80::10:3 --dgid "$H3_GID" --lid "$OWN_LID" 2>/dev/null | sed -n 's/^status=//p')" = NO_RECORDS

# --- 6. ReLink H3: trap 64 to C only
t_relink=$(now_ms)
fabric_cmd 'ReLink "H3"'
wait_for 5 reports_ge C 64 1
t_c=$(json C report t_ms)
check "C got the trap 64 Report ($(after "$t_c" "$t_relink") after ReLink)" test -n "$t_c"
[[ -n $t_c ]] && echo "# ReLink -> Report at C through localsad: $((t_c - t_relink)) ms"
eq "... its subject is H3" "$H3_GID" "$(json C report subject_gid)"
sleep 0.5
eq "A (trap 65 only) got no trap 64" 0 "$(reports A 64)"
eq "B got nothing" 0 "$(grep -c '"event":"report"' "$WORK/sub.B")"

# --- 7. A unsubscribes; localsad's own trap 65 subscription at the master stays
clients0=$(stat client_subscriptions)
stop_sub A
eq "A unsubscribed (SIGTERM)" 0 "$(json A unsubscribed status)"
eq "... and exited 0" 0 "$sub_rc"
wait_for 1 stat_is client_subscriptions $((clients0 - 1))
eq "localsad holds one client subscription less" "$((clients0 - 1))" "$(stat client_subscriptions)"
received0=$(stat reports_received)
a_reports=$(grep -c '"event":"report"' "$WORK/sub.A")
d_reports=$(reports D 65)
t_unlink=$(now_ms)
fabric_cmd 'Unlink "H3"'
wait_for 5 stat_ge reports_received $((received0 + 1))
check "after A's unsubscribe, localsad still receives trap 65 (reports_received $received0 -> $(stat reports_received))" \
    stat_ge reports_received $((received0 + 1))
wait_for 3 reports_ge D 65 $((d_reports + 1))
eq "A (gone) got nothing more" "$a_reports" "$(grep -c '"event":"report"' "$WORK/sub.A")"
check "D, still subscribed, got the new Report" reports_ge D 65 $((d_reports + 1))
received0=$(stat reports_received)
fabric_cmd 'ReLink "H3"'
wait_for 5 reports_ge C 64 2
wait_for 3 stat_ge reports_received $((received0 + 1))
check "ReLink: trap 64 at C again" reports_ge C 64 2

# --- 8. E: a trap localsad does not hold itself (128): an extra subscription at the master
start_sub E --qp 0x104 --sa-lid "$SA_LID" --trap 128
eq "E (trap 128) subscribed through localsad" 0 "$(subscribed E)"
wait_for 2 stat_is master_extra_subscriptions 1
eq "localsad holds one extra subscription at the master" 1 "$(stat master_extra_subscriptions)"
stop_sub E
eq "E unsubscribed" 0 "$(json E unsubscribed status)"
wait_for 2 stat_is master_extra_subscriptions 0
eq "... and localsad dropped the extra subscription" 0 "$(stat master_extra_subscriptions)"

# --- 9. control: F subscribes at OpenSM directly (the test tool works without localsad)
start_sub F --qp 0x105 --sa-lid "$SM_LID" --trap 65
eq "F (qp 0x105, trap 65) subscribed at the master (LID $SM_LID) directly" 0 "$(subscribed F)"
t_unlink=$(now_ms)
fabric_cmd 'Unlink "H3"'
wait_for 5 reports_ge F 65 1
t_f=$(json F report t_ms)
check "F got the trap 65 Report from OpenSM ($(after "$t_f" "$t_unlink") after Unlink)" test -n "$t_f"
[[ -n $t_f ]] && echo "# Unlink -> Report at F from OpenSM directly: $((t_f - t_unlink)) ms"
eq "... sent by the master" "$SM_LID" "$(json F report from_lid)"
eq "... from its QP1" 1 "$(json F report from_qp)"
eq "... its subject is H3" "$H3_GID" "$(json F report subject_gid)"
eq "... its IssuerLID is the master's" "$SM_LID" "$(json F report issuer_lid)"
fabric_cmd 'ReLink "H3"'
stop_sub F
eq "F unsubscribed at the master" 0 "$(json F unsubscribed status)"

check "localsad still running" kill -0 "$DAEMON_PID"
stop_all_subs
summary
