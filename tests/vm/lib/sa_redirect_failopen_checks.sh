#!/usr/bin/env bash
# Runs inside the guest: the sa_redirect redirect and fail-open on a live IB port. One
# simhca port (LID 5, SM LID 1) whose "fabric" is tests/vm/lib/sa_stub.py relay (it
# answers SA Gets sent to the SM); ib_sa's own ClassPortInfo query on port activation and
# re-registration is the SA traffic. Needs LOCALSA_KO_DIR (patched .ko), LOCALSA_MOD_DIR
# (Debian's modules), LOCALSA_SIMHCA_KO (simhca.ko for this kernel), LOCALSA_STUB.
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
nok() { fail=$((fail + 1)); echo "FAIL - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
eq() { if [[ "$2" == "$3" ]]; then ok "$1"; else nok "$1: got '$2', want '$3'"; fi; }
: "${LOCALSA_KO_DIR:?}" "${LOCALSA_MOD_DIR:?}" "${LOCALSA_SIMHCA_KO:?}" "${LOCALSA_STUB:?}"

DBG=/sys/kernel/debug/ib_sa_redirect
W=/tmp/failopen
mkdir -p $W
SMLOG=$W/sm.log LOCLOG=$W/local.log
: >$SMLOG
: >$LOCLOG
debian() {
    local f
    f=$(find "$LOCALSA_MOD_DIR/kernel" -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" | head -n1)
    [[ -n "$f" ]] && insmod "$f"
}
field() { # field N: column N of simhca0's line in debugfs
    awk -v n="$1" '$1 == "simhca0" { print $n }' $DBG
}
wait_for() { # wait_for SECONDS COMMAND...
    local end=$((SECONDS + $1)); shift
    until "$@"; do ((SECONDS < end)) || return 1; sleep 0.2; done
}
state_is() { [[ "$(field 4)" == "$1" ]]; }
target_is() { [[ "$(field 3)" == "$1" ]]; }
count() { grep -c "$1" "$2"; }
cpi_done() { # the number of ClassPortInfo queries answered by the SM and by the local SA
    echo "$(count 'SM attr=0x0001' $SMLOG) $(count 'LOCAL attr=0x0001' $LOCLOG)"
}

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
check "patched ib_core loads with *:*=self" insmod "$LOCALSA_KO_DIR/ib_core.ko" \
    'sa_redirect=*:*=self' sa_redirect_timeout_ms=200 sa_redirect_probe_ms=1000
check "ib_umad loads" debian ib_umad
check "simhca loads" insmod "$LOCALSA_SIMHCA_KO"
python3 "$LOCALSA_STUB" relay /dev/simhca0 $SMLOG &
relay=$!

# 1. the port comes up: redirected to its own LID; nobody serves the SA there, so ib_sa's
#    ClassPortInfo query is refused and goes to the SM, and the port falls back
check "the port's SA queries go to its own LID 0x5" wait_for 90 target_is 0x5
check "no local SA: the port falls back to the SM" wait_for 60 state_is fallback
check "the SM answered the ClassPortInfo query" wait_for 30 grep -q 'SM attr=0x0001' $SMLOG
eq "one query fell back" "$(field 6)" 1
check "at least one query was redirected" test "$(field 5)" -ge 1
check "the fallback is logged" bash -c "dmesg | grep -q 'SA redirect target LID 0x5 does not answer, querying the SM'"

# 2. probes every sa_redirect_probe_ms, to the target only, while it is dead
p0=$(field 7)
sleep 3
check "the dead target is probed (every second)" test "$(field 7)" -ge $((p0 + 2))
eq "still on the SM" "$(field 4)" fallback
eq "probes do not go to the SM" "$(count 'SM attr=' $SMLOG)" 1

# 3. a local SA appears: the next probe finds it and the redirect resumes
python3 "$LOCALSA_STUB" localsa /dev/infiniband/umad0 $LOCLOG &
localsa=$!
check "a local SA registers on the port" wait_for 30 grep -q REGISTERED $LOCLOG
check "the redirect resumes by itself" wait_for 30 state_is redirect
check "the resume is logged" bash -c "dmesg | grep -q 'SA redirect target LID 0x5 answers, redirect resumed'"

# 4. queries now go to the local SA, not the SM (client re-register makes ib_sa ask
#    ClassPortInfo again)
before=$(cpi_done)
kill -USR1 $relay
check "after re-register the local SA answers ClassPortInfo" \
    wait_for 60 bash -c "[[ \$(grep -c 'LOCAL attr=0x0001' $LOCLOG) -ge 1 ]]"
sleep 1
eq "and the SM got no query" "$(count 'SM attr=' $SMLOG)" "${before%% *}"
eq "still redirected, no new fallback" "$(field 4) $(field 6)" "redirect 1"

# 5. self follows the port's LID
kill -USR2 $relay
check "a LID change moves the target to LID 0x7" wait_for 60 target_is 0x7

# 6. the local SA dies: the next query falls back once, then the port stays on the SM
kill $localsa
wait $localsa 2>/dev/null
sm_before=$(count 'SM attr=' $SMLOG)
kill -USR1 $relay
check "the query goes to the SM after the local SA died" \
    wait_for 60 bash -c "[[ \$(grep -c 'SM attr=' $SMLOG) -gt $sm_before ]]"
check "back on the SM" wait_for 30 state_is fallback
eq "two fallbacks in all" "$(field 6)" 2

# 7. a write of the parameter resumes the redirect at once
echo '*:*=self' >/sys/module/ib_core/parameters/sa_redirect
eq "a write resumes the redirect" "$(field 4)" redirect

# 8. a silent target (no answer at all): the query goes to the SM after
#    sa_redirect_timeout_ms (200), well within the caller's 3000 ms
check "redirect to LID 0x9, which never answers" bash -c "echo '*:*=0x9' >/sys/module/ib_core/parameters/sa_redirect"
eq "target 0x9, redirect" "$(field 3) $(field 4)" "0x9 redirect"
sm_before=$(count 'SM attr=' $SMLOG)
kill -USR1 $relay
check "the query to the silent target falls back to the SM" \
    wait_for 60 bash -c "[[ \$(grep -c 'SM attr=' $SMLOG) -gt $sm_before ]]"
t_drop=$(grep 'DROP dlid=0x9' $SMLOG | head -n1 | sed 's/.*t=//')
t_sm=$(grep 'SM attr=' $SMLOG | tail -n1 | sed 's/.*t=//')
echo "silent target: sent at $t_drop, at the SM $t_sm"
check "it waited for the redirect timeout, not the caller's (0.15 s .. 2.5 s)" \
    python3 -c "import sys; d = $t_sm - ${t_drop:-0}; sys.exit(not 0.15 <= d <= 2.5)"
check "back on the SM" wait_for 30 state_is fallback
eq "three fallbacks in all" "$(field 6)" 3

cat $DBG
kill $relay
wait $relay 2>/dev/null
# the device goes away while the port is on the SM and probing
check "simhca unloads while probes are pending" rmmod simhca
check "ib_core unloads" rmmod ib_umad ib_core
check "no kernel warning or oops" bash -c "! dmesg | grep -E 'BUG:|WARNING:|Oops|INFO: task'"
echo "sa_redirect_failopen: $pass passed, $fail failed"
((fail == 0))
