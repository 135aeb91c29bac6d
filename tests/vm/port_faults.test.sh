#!/usr/bin/env bash
# vm test: faults of the port under localsad, on a real kernel MAD stack.
#  1. A subnet manager on localsad's port: OpenSM runs as a standby SM on simhca1 (IsSM set in
#     the port's CapabilityMask while it holds issm1). localsad started there must refuse with a
#     message that says why and what to do, exit status 3, and leave the SA methods to the SM.
#  2. The reverse order: localsad runs on simhca1, then OpenSM starts there: OpenSM cannot bind
#     the SA class and stops (before it sets IsSM). An SM's hold of issm1 (IsSM set) is logged
#     by localsad's port poll.
#  3. The umad device goes away under a running localsad (simhca unloaded: ib_umad marks the open
#     file dead, every read fails with EIO): localsad exits non-zero within a bound with a
#     message naming the device, without spinning, so that the service manager restarts it.
#     (OpenSM on simhca0 is stopped first: it spins on its own dead umad file, see
#     docs/reliability.md, and would slow the guest down.)
# Usage: tests/vm/port_faults.test.sh 6.1|6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    exec bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --timeout 500 \
        -- bash tests/vm/port_faults.test.sh --guest
fi
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
set +e

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
W=/tmp/port-faults
mkdir -p "$W"
cd "$W" || exit 1
CAP=/sys/class/infiniband/simhca1/ports/1/cap_mask
is_sm_set() { (($(cat "$CAP") & 0x2)); }
guid1=$(sed 's/^.*:\(....\):\(....\):\(....\):\(....\)$/\1\2\3\4/' /sys/class/infiniband/simhca1/ports/1/gids/0)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null || true' EXIT
alive() { kill -0 "$1" 2>/dev/null; }
# start_standby_sm NAME: a second OpenSM, on simhca1, at the lowest priority; sets SM_PID, its log
# is $W/NAME.log. (Meant as a standby; on this fabric it does not see the master's SMInfo and
# enters MASTER state too: which state it is in does not matter here, only that it holds the port.)
start_standby_sm() {
    mkdir -p "$W/$1"
    OSM_TMP_DIR="$W/$1" OSM_CACHE_DIR="$W/$1" opensm -g "0x$guid1" -p 0 -f "$W/$1.log" \
        >"$W/$1.out" 2>&1 &
    SM_PID=$!
    PIDS+=("$SM_PID")
}
stop_sm() { kill "$SM_PID" 2>/dev/null; wait "$SM_PID" 2>/dev/null; }
start_localsad() { # LOG [OPTIONS]
    local log=$1
    shift
    rm -f "$CTL"
    "$BIN/localsad" --foreground --ca simhca1 --control "$CTL" "$@" >"$log" 2>&1 &
    DAEMON=$!
    PIDS+=("$DAEMON")
}
wait_exit() { # SECONDS PID: wait until PID exits (sets rc) or SECONDS pass; last_ticks: its
    # CPU time (user + system, clock ticks) at the last look before it exited
    local t0=$SECONDS t
    while alive "$2" && ((SECONDS - t0 < $1)); do
        t=$(ticks "$2") && [[ -n $t ]] && last_ticks=$t
        sleep 0.1
    done
    alive "$2" && return 1
    wait "$2"
    rc=$?
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }

# --- 1. an SM on the port, then localsad ------------------------------------------------------
check "IsSM is clear on simhca1 before any SM runs there (cap_mask $(cat "$CAP"))" bash -c "! (( \$(cat $CAP) & 0x2 ))"
start_standby_sm standby1
check "a second OpenSM runs on simhca1" \
    wait_until 90 grep -qsE "Entering (STANDBY|MASTER) state" "$W/standby1.log"
echo "# its state: $(grep -o 'Entering [A-Z]* state' "$W/standby1.log" | tail -n 1)"
check "... and IsSM is set in simhca1's CapabilityMask ($(cat "$CAP"))" wait_until 10 is_sm_set
start_localsad "$W/localsad-1.log"
rc=
wait_exit 20 "$DAEMON"
eq "localsad on the SM's port exits with status 3" 3 "${rc:-running}"
check "... saying why: a subnet manager holds the port" grep -q 'a subnet manager runs on simhca1 port 1' "$W/localsad-1.log"
check "... and what to do" grep -q 'stop the subnet manager on this node' "$W/localsad-1.log"
check "... before it registered anything (no serving line)" bash -c "! grep -q 'serving simhca1' $W/localsad-1.log"
alive "$DAEMON" && kill "$DAEMON"
check "the SM on simhca1 is still running" alive "$SM_PID"
stop_sm
check "IsSM clear again once the SM is gone" wait_until 10 bash -c "! (( \$(cat $CAP) & 0x2 ))"
echo "--- localsad-1.log"; cat "$W/localsad-1.log"

# --- 2. localsad first, then an SM on its port -----------------------------------------------
start_localsad "$W/localsad-2.log" --port-poll-ms 200 --log-level debug
serving() { [[ -S $CTL ]] && grep -q 'serving simhca1' "$W/localsad-2.log"; }
check "localsad starts on simhca1 without an SM there" wait_until 30 serving
start_standby_sm standby2
gone() { ! alive "$1"; }
check "OpenSM started after localsad on its port stops: it cannot bind the SA class" wait_until 60 gone "$SM_PID"
wait "$SM_PID"
echo "# OpenSM on simhca1 exited with status $?; IsSM now $(cat "$CAP")"
check "... its log says why (ERR 5426: Unable to register class 3)" grep -q 'Unable to register class 3' "$W/standby2.log"
grep -E 'ERR|IS_SM|Exiting' "$W/standby2.log" | head -n 8
tail -n 3 "$W/standby2.out"
check "... it set IsSM only after binding the SA: never set (localsad cannot see it)" \
    bash -c "! grep -q 'Setting IS_SM' $W/standby2.log"
check "localsad is still serving" alive "$DAEMON"
# Any SM claims the port by holding its issm device open (IsSM set); localsad's port poll says so.
exec {ISSM_FD}<>/dev/infiniband/issm1
check "an SM's hold of issm1 sets IsSM" wait_until 5 is_sm_set
sm_seen() { grep -q 'a subnet manager started on simhca1 port 1 (IsSM set' "$W/localsad-2.log"; }
check "localsad logs that an SM started on its port" wait_until 10 sm_seen
exec {ISSM_FD}>&-
sm_gone() { grep -q 'the subnet manager on simhca1 port 1 is gone (IsSM clear)' "$W/localsad-2.log"; }
check "... and that it is gone once issm1 is released" wait_until 10 sm_gone
check "localsad is still serving" alive "$DAEMON"
echo "--- localsad-2.log (SM lines)"; grep 'subnet manager' "$W/localsad-2.log"

# --- 3. the umad device goes away under a running localsad -----------------------------------
check "localsad answers before the device goes away" \
    bash -c "'$BIN/localsactl' --control '$CTL' stats >/dev/null"
# OpenSM on simhca0 would lose its device too, and then spins on it (seen: 200-300 % of the
# guest's CPU, SIGTERM ignored), which slows everything in the guest: stop it first.
kill -TERM "$VM_OPENSM_PID"
wait_until 20 bash -c "! kill -0 $VM_OPENSM_PID 2>/dev/null" || kill -KILL "$VM_OPENSM_PID"
# simhca's character devices are held by the relays: stop them (by the holder of each device)
for dev in /dev/simhca*; do
    for fd in /proc/[0-9]*/fd/*; do
        [[ $(readlink "$fd" 2>/dev/null) == "$dev" ]] || continue
        p=${fd#/proc/}; p=${p%%/*}
        kill "$p" 2>/dev/null
    done
done
sleep 0.5
ms() { echo $(($(date +%s%N) / 1000000)); }
t_rm0=$(ms)
start_clock=$(date '+%F %T.%3N')
check "simhca unloads under the running localsad" rmmod simhca
t_rm1=$(ms)
ticks_rm=$(ticks "$DAEMON")
last_ticks=$ticks_rm
echo "# rmmod simhca took $((t_rm1 - t_rm0)) ms, returned at $(date +%T.%3N)"
t_rm=$SECONDS
check "simhca1's umad device is gone" bash -c "! ls /sys/class/infiniband/simhca1 >/dev/null 2>&1"
rc=
wait_exit 10 "$DAEMON"
exited=$?
gone_ms=$(($(ms) - t_rm1))
hz=$(getconf CLK_TCK)
cpu_ms=$(((last_ticks - ticks_rm) * 1000 / hz))
echo "# localsad gone ${gone_ms} ms after rmmod returned (polled every 100 ms); CPU time it used meanwhile: at least ${cpu_ms} ms"
if ((exited != 0)); then
    # still running: how much CPU does it burn?
    a=$(ticks "$DAEMON"); sleep 2; b=$(ticks "$DAEMON")
    echo "# localsad still running 10 s after the device went away: $(((b - a) / 2)) % of a CPU over 2 s"
fi
check "localsad exits within 10 s of the device's removal ($((SECONDS - t_rm)) s)" test "$exited" -eq 0
check "... with a non-zero status (${rc:-running})" test -n "$rc" -a "${rc:-0}" != 0
check "... without spinning: under half a CPU until then (${cpu_ms} ms of CPU in ${gone_ms} ms)" \
    test $((cpu_ms * 2)) -lt "$gone_ms"
line=$(grep -m1 'went away (EIO)' "$W/localsad-2.log" | cut -c1-23)
[[ -n $line ]] && echo "# localsad logged it $((($(date -d "$line" +%s%N) - $(date -d "$start_clock" +%s%N)) / 1000000)) ms after rmmod began"
check "... saying the umad device went away" grep -q 'umad device /dev/infiniband/umad[0-9]* went away (EIO): exiting so that the service manager restarts it' "$W/localsad-2.log"
alive "$DAEMON" && kill -KILL "$DAEMON"
echo "--- localsad-2.log (from the port going down)"
sed -n '/port 1 not active/,$p' "$W/localsad-2.log" | tail -n 40
finish
