#!/usr/bin/env bash
# Shows umad2sim's start-up crash: starts localsad on one host of a fresh fabric N times, each
# start waited for until its control socket is there (up) or it exits, then stopped again, and
# counts the outcomes. With --retry every start goes through the harness's retry
# (fabric_client_start), and the count is of starts that still failed.
# With --load, sa_flood on another host keeps PathRecord Gets addressed to NODE's LID in flight
# the whole time (as in sim.restart, where load runs through localsad's restarts).
#   tests/sim/fabric/client-start-loop.sh [--starts N] [--hosts H] [--node NODE] [--retry]
#                                         [--load] [--kill] [--issm] [BIN]
# --issm starts localsad with `run --issm` (SIM_SET_ISSM: IsSM from the client's first moment).
# --kill stops each localsad with SIGKILL instead of SIGTERM (its last MADs still on the way).
# Prints "starts N up U crashed C other O stop_failed S retries R" (crashed: SIGSEGV/SIGBUS/SIGABRT
# before up; stop_failed: up, but a non-zero status at the SIGTERM that stopped it).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
N=30 HOSTS=32 NODE=H1 RETRY=0 LOAD=0 STOP=TERM ISSM=() BIN=$ROOT/build/bin
while [[ $# -gt 0 ]]; do
    case "$1" in
    --starts) N=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --node) NODE=$2; shift 2 ;;
    --retry) RETRY=1; shift ;;
    --load) LOAD=1; shift ;;
    --kill) STOP=KILL; shift ;;
    --issm) ISSM=(--issm); shift ;;
    *) BIN=$1; shift ;;
    esac
done
BIN=$(cd "$BIN" && pwd)
FABRIC=$ROOT/scripts/fabric
# shellcheck source=scripts/fabric-client.sh
. "$ROOT/scripts/fabric-client.sh"
WORK=$(mktemp -d /tmp/localsa-start-loop.XXXXXX)
trap 'touch "$WORK/stop"; wait; "$FABRIC" down --dir "$WORK/fabric" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM HUP
cd "$WORK" || exit 1
"$FABRIC" up --dir "$WORK/fabric" --hosts "$HOSTS" >/dev/null || exit 1
CTL=$WORK/l.sock
if ((LOAD)); then
    mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
    own=$("$FABRIC" lid --dir "$WORK/fabric" "$NODE")
    loader=H$((HOSTS - 1))
    (while [[ ! -e $WORK/stop ]]; do
        "$FABRIC" run --dir "$WORK/fabric" --node "$loader" --no-retry -- "${FLOOD:-$BIN/sa_flood}" \
            --slid "$own" --dlid "${LIDS[2]}" --lid "$own" --count 200 --depth 4 --timeout 200 \
            >/dev/null 2>&1
    done) &
fi
up=0 crashed=0 other=0 stop_failed=0
for ((i = 1; i <= N; i++)); do
    rm -f "$CTL"
    cmd=("$FABRIC" run --dir "$WORK/fabric" --node "$NODE" --no-retry "${ISSM[@]}" -- "$BIN/localsad" --foreground
        --control "$CTL" --state-dir "$WORK/state" --log-level warn)
    if ((RETRY)); then
        fabric_client_start --dir "$WORK/fabric" --ready-file "$CTL" --timeout 20 \
            --output "$WORK/l.log" -- "${cmd[@]}" 2>>"${RETRY_LOG:-$WORK/retry.log}"
        rc=$?
        pid=$FABRIC_CLIENT_PID
    else
        "${cmd[@]}" >"$WORK/l.log" 2>&1 &
        pid=$!
        for _ in $(seq 200); do
            [[ -S $CTL ]] && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        rc=0
        [[ -S $CTL ]] || { wait "$pid"; rc=$?; }
    fi
    if [[ $rc -eq 0 && -S $CTL ]]; then
        up=$((up + 1))
        kill "-$STOP" "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        st=$?
        if [[ $STOP == TERM && $st -ne 0 ]]; then
            stop_failed=$((stop_failed + 1))
            echo "start $i: up, but exit $st when stopped with SIGTERM" >&2
        fi
    elif fabric_client_crash_signal "$rc" >/dev/null; then
        crashed=$((crashed + 1))
        echo "start $i: exit $rc before up" >&2
        _fabric_client_release "$WORK/fabric" "$pid" # its ibsim slot, for the next start
    else
        other=$((other + 1))
        echo "start $i: exit $rc (not up): $(tail -1 "$WORK/l.log")" >&2
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
done
echo "starts $N up $up crashed $crashed other $other stop_failed $stop_failed retries $(fabric_client_retries "$WORK/fabric")"
