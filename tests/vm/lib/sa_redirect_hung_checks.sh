#!/usr/bin/env bash
# Runs inside the guest (scripts/vm run --no-fabric, patched ib_core loaded with
# sa_redirect=*:*=self sa_redirect_timeout_ms=200 sa_redirect_probe_ms=1000): one simhca
# port (LID 5, SM LID 1) whose fabric is tests/vm/lib/sa_stub.py relay, and a local SA
# stand-in on umad0 registered for Get, Set and Delete as localsad is.
# 1. the local SA is SIGSTOPped: a join completes with status 0 within 10 s, the next one
#    within 2 s, a leave reaches the SM (which answers it with status 0) within 2 s; after
#    SIGCONT the port is redirected again.
# 2. a local SA relays a join to the SM and dies before answering: the join reaches the SM
#    once (the MAD layer's retry is refused by the port, which is no proof that the first
#    try was not processed).
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
nok() { fail=$((fail + 1)); echo "FAIL - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
eq() { if [[ "$2" == "$3" ]]; then ok "$1"; else nok "$1: got '$2', want '$3'"; fi; }
: "${LOCALSA_STUB:?}"

T=/sys/kernel/debug/localsa_test
W=/tmp/hung
mkdir -p $W
SMLOG=$W/sm.log LOCLOG=$W/local.log
: >$SMLOG
: >$LOCLOG
DEV=simhca0
dbg=/sys/kernel/debug/ib_sa/$DEV/redirect
field() { awk -v n="$1" '$1 == "1" { print $n }' $dbg 2>/dev/null; }
wait_for() { # wait_for SECONDS COMMAND...
    local end=$((SECONDS + $1)); shift
    until "$@"; do ((SECONDS < end)) || return 1; sleep 0.2; done
}
state_is() { [[ "$(field 3)" == "$1" ]]; }
sm() { grep -c "^SM .*$1" $SMLOG; }   # requests the SM got
now_ms() { echo $(($(date +%s%N) / 1000000)); }

check "simhca loads" modprobe simhca
python3 "$LOCALSA_STUB" relay /dev/simhca0 $SMLOG &
relay=$!
check "localsa_test loads" modprobe localsa_test
check "the port's target is its own LID 0x5" wait_for 90 bash -c "[[ \$(awk '\$1 == 1 {print \$2}' $dbg 2>/dev/null) == 0x5 ]]"

# 1. a hung local SA
python3 "$LOCALSA_STUB" localsa-sets /dev/infiniband/umad0 $LOCLOG &
localsa=$!
check "a local SA registers for Get, Set and Delete" wait_for 30 grep -q REGISTERED $LOCLOG
check "state redirect" wait_for 5 state_is redirect
echo "$DEV 1 ff12:401b::10" >$T/join
j=$(cat $T/join)
check "a join through the healthy local SA ($j)" grep -q '^status=0 ' <<<"$j"
check "... answered by it" grep -q 'LOCAL attr=0x0038 method=0x02' $LOCLOG
kill -STOP $localsa
s0=$(sm 'method=0x02')
t0=$(now_ms)
echo "$DEV 1 ff12:401b::1" >$T/join
j=$(cat $T/join)
ms=$(($(now_ms) - t0))
echo "hung: first join $j in $ms ms"
check "hung local SA: a join completes with status 0 ($j)" grep -q '^status=0 ' <<<"$j"
check "... within 10 s ($ms ms)" test "$ms" -lt 10000
eq "... its Set reached the SM once" "$(sm 'method=0x02')" $((s0 + 1))
check "the port falls back to the SM" state_is fallback
check "... and logs it" bash -c "dmesg | grep -q 'SA redirect target LID 0x5 does not answer'"
t0=$(now_ms)
echo "$DEV 1 ff12:401b::2" >$T/join
j=$(cat $T/join)
ms=$(($(now_ms) - t0))
echo "hung: second join $j in $ms ms"
check "the next join completes with status 0 ($j)" grep -q '^status=0 ' <<<"$j"
check "... within 2 s ($ms ms)" test "$ms" -lt 2000
d0=$(sm 'method=0x15')
t0=$(now_ms)
echo "$DEV 1 ff12:401b::1" >$T/leave
check "a leave reaches the SM (status 0 from it) within 2 s" \
    wait_for 2 bash -c "[[ \$(grep -c '^SM .*method=0x15' $SMLOG) -gt $d0 ]]"
echo "hung: leave at the SM after $(($(now_ms) - t0)) ms"
kill -CONT $localsa
check "the local SA answers probes again: redirect resumed" wait_for 10 state_is redirect
echo "$DEV 1 ff12:401b::2" >$T/leave
echo "$DEV 1 ff12:401b::10" >$T/leave
kill $localsa
wait $localsa 2>/dev/null
check "state no-agent once it is gone" wait_for 10 state_is no-agent

# 2. a local SA that relays a join and dies before it answers
: >$LOCLOG
python3 "$LOCALSA_STUB" localsa-relaydie /dev/infiniband/umad0 $LOCLOG &
localsa=$!
check "a relaying local SA registers" wait_for 30 grep -q REGISTERED $LOCLOG
check "state redirect" wait_for 5 state_is redirect
s0=$(sm 'method=0x02')
echo "$DEV 1 ff12:401b::3" >$T/join
j=$(cat $T/join)
echo "dying relay: join $j"
check "the local SA relayed the join and died" grep -q RELAYED $LOCLOG
wait $localsa 2>/dev/null
sleep 1
eq "the join reached the SM once" "$(sm 'method=0x02')" $((s0 + 1))
check "and was not reported as done ($j)" bash -c "! grep -q '^status=0 ' <<<'$j'"

check "localsa_test unloads" rmmod localsa_test
kill $relay
wait $relay 2>/dev/null
check "simhca unloads" rmmod simhca
check "no kernel warning or oops" bash -c "! dmesg | grep -E 'BUG:|WARNING:|Oops|INFO: task|UBSAN|KASAN'"
echo "sa_redirect_hung: $pass passed, $fail failed"
((fail == 0))
