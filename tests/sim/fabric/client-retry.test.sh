#!/usr/bin/env bash
# sim tier: the harness starts a client again when it crashes before it is up (umad2sim's
# start-up crash), and only then. A stand-in client (crashing-client.sh) dies of SIGSEGV in its
# first N starts; it runs through `scripts/fabric run` on a small fabric (so the real option
# parsing, environment and signal passing are used) and through fabric_client_start, as the
# sim tests start localsad. Checks: retried and counted (stderr, DIR/client-retries); given up
# after --tries; not retried when it exits with a status of its own before it is up, crashes
# after it is up, or is killed on purpose; a daemon not up in time is stopped.
# Usage: client-retry.test.sh [path/to/scripts/fabric]
set -uo pipefail

FABRIC=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/scripts/fabric}
FAKE=$(cd "$(dirname "$0")" && pwd)/crashing-client.sh
# shellcheck source=scripts/fabric-client.sh
. "$(dirname "$FABRIC")/fabric-client.sh"
passed=0
failed=0
pass() { echo "ok   - $*"; passed=$((passed + 1)); }
fail() { echo "FAIL - $*"; failed=$((failed + 1)); }
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
eq() { check "$1 ($2 = $3)" test "$2" = "$3"; }

WORK=$(mktemp -d /tmp/localsa-client-retry.XXXXXX)
D=$WORK/fabric
cleanup() { "$FABRIC" down --dir "$D" >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
cd "$WORK" || exit 1
"$FABRIC" up --dir "$D" --hosts 2 --timeout 60 >/dev/null || { echo "FAIL - fabric up"; exit 1; }
retries() { fabric_client_retries "$D"; }
n=0
fresh() { n=$((n + 1)); S=$WORK/state.$n; R=$WORK/ready.$n; E=$WORK/err.$n; O=$WORK/out.$n; }

# 1. one-shot (a query): two crashes, then it runs to its end
fresh
"$FABRIC" run --dir "$D" --node H1 -- "$FAKE" --state "$S" --crashes 2 >"$O" 2>"$E"
eq "one-shot client crashing twice on its way up: exit 0 in the end" 0 $?
eq "... started three times" 3 "$(cat "$S")"
eq "... two retries counted in DIR/client-retries" 2 "$(retries)"
check "... each logged on stderr, naming the signal and the start" \
    test "$(grep -c 'crashing-client.sh on H1 died of SIGSEGV (exit 139) before it was up (start [12] of 3): starting it again' "$E")" = 2
# shellcheck disable=SC2016 # expanded by the client's shell
check "... the client ran with the node's environment (umad2sim preloaded)" \
    "$FABRIC" run --dir "$D" --node H1 -- bash -c '[[ $SIM_HOST == H1 && $LD_PRELOAD == *umad2sim* && -z ${SIM_SET_ISSM:-} ]]'
# shellcheck disable=SC2016 # expanded by the client's shell
check "... and --issm sets SIM_SET_ISSM" \
    "$FABRIC" run --dir "$D" --node H1 --issm -- bash -c '[[ ${SIM_SET_ISSM:-} == 1 ]]'

# 2. crashes in every start: given up after --tries, the crash status passed on
fresh
"$FABRIC" run --dir "$D" --node H1 --tries 2 -- "$FAKE" --state "$S" --crashes 9 >"$O" 2>"$E"
eq "crashing in every start: the crash status is passed on" 139 $?
eq "... after --tries 2 starts" 2 "$(cat "$S")"
check "... and says it gave up" grep -q 'died of SIGSEGV (exit 139) before it was up, in each of 2 starts: giving up' "$E"

# 3. a failure of its own before it is up: not retried
fresh
r0=$(retries)
"$FABRIC" run --dir "$D" --node H1 -- "$FAKE" --state "$S" --exit 3 >"$O" 2>"$E"
eq "exit status 3 before it is up: passed on" 3 $?
eq "... not started again" 1 "$(cat "$S")"
eq "... nothing counted" "$r0" "$(retries)"

# 4. a daemon (--ready-file) crashing once on its way up, then up; its exit status is run's
fresh
"$FABRIC" run --dir "$D" --node H1 --ready-file "$R" --pid-file "$WORK/pid.$n" -- \
    "$FAKE" --state "$S" --crashes 1 --ready-file "$R" --run-s 1 >"$O" 2>"$E"
eq "daemon crashing once before its ready file: exit 0 after its run" 0 $?
eq "... started twice" 2 "$(cat "$S")"
eq "... one more retry counted" $((r0 + 1)) "$(retries)"
check "... --pid-file named the running client" test -s "$WORK/pid.$n"

# 5. a daemon crashing after it was up: a real failure, not retried
fresh
r0=$(retries)
"$FABRIC" run --dir "$D" --node H1 --ready-file "$R" -- \
    "$FAKE" --state "$S" --ready-file "$R" --crash-after-ready >"$O" 2>"$E"
eq "daemon crashing after it was up: the crash status is passed on" 139 $?
eq "... not started again" 1 "$(cat "$S")"
eq "... nothing counted" "$r0" "$(retries)"

# 6. --ready-log: up when its log says so
fresh
# shellcheck disable=SC2094 # run reads the log its client writes
"$FABRIC" run --dir "$D" --node H1 --ready-log "$O" '^start 2$' -- \
    "$FAKE" --state "$S" --crashes 1 --run-s 0.5 >"$O" 2>"$E"
eq "--ready-log: up at the log line of the second start, exit 0" 0 $?

# 7. a daemon that never gets up is stopped after --ready-timeout
fresh
t0=$SECONDS
"$FABRIC" run --dir "$D" --node H1 --ready-file "$R" --ready-timeout 2 -- \
    "$FAKE" --state "$S" --run-s 30 >"$O" 2>"$E"
eq "not up within --ready-timeout 2: exit 124" 124 $?
check "... within 5 s ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -lt 5
check "... said so" grep -q 'was not up within 2s: stopping it' "$E"

# 8. signals to run reach the client: SIGTERM ends a running daemon, not retried
fresh
"$FABRIC" run --dir "$D" --node H1 --ready-file "$R" --pid-file "$WORK/pid.$n" -- \
    "$FAKE" --state "$S" --ready-file "$R" --run-s 30 >"$O" 2>"$E" &
runner=$!
for _ in $(seq 100); do [[ -s $WORK/pid.$n ]] && break; sleep 0.05; done
client=$(cat "$WORK/pid.$n" 2>/dev/null)
kill -TERM "$runner"
wait "$runner"
rc=$?
check "SIGTERM to run ends the client (run exit $rc)" test "$rc" -ne 0 -a -n "$client"
sleep 0.2
check "... the client is gone" bash -c "! kill -0 $client 2>/dev/null"

# 9. fabric_client_start, as the sim tests start localsad: the client a child of this shell
fresh
r0=$(retries)
fabric_client_start --dir "$D" --ready-file "$R" --output "$O" -- \
    "$FABRIC" run --dir "$D" --node H1 --no-retry -- "$FAKE" --state "$S" --crashes 2 --ready-file "$R" --run-s 30 2>"$E"
eq "fabric_client_start: up after two crashes" 0 $?
eq "... three starts" 3 "$(cat "$S")"
eq "... two more retries counted" $((r0 + 2)) "$(retries)"
check "... the output of each crashed start kept aside" test -s "$O.crash-1" -a -s "$O.crash-2"
check "... the pid is the client's own (--no-retry execs), a child of this shell" \
    grep -q crashing-client "/proc/$FABRIC_CLIENT_PID/cmdline"
kill -TERM "$FABRIC_CLIENT_PID"
wait "$FABRIC_CLIENT_PID"
eq "... its exit status reaches this shell's wait (SIGTERM)" 143 $?
fresh
r0=$(retries)
fabric_client_start --dir "$D" --ready-file "$R" --output "$O" -- \
    "$FABRIC" run --dir "$D" --node H1 --no-retry -- "$FAKE" --state "$S" --exit 1 2>"$E"
eq "fabric_client_start: a failure of its own before it is up is returned" 1 $?
eq "... not retried" "$r0" "$(retries)"
fresh
fabric_client_start --dir "$D" --ready-file "$R" --output "$O" -- \
    "$FABRIC" run --dir "$D" --node H1 --no-retry -- bash -c 'kill -KILL $$' 2>"$E"
eq "fabric_client_start: SIGKILL before it is up is no umad2sim crash: returned" 137 $?
eq "... not retried" "$r0" "$(retries)"

echo "$passed passed, $failed failed"
((failed == 0))
