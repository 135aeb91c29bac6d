# shellcheck shell=bash
# Shared by the sim-tier localsad tests: check helpers, a fresh 16-host fabric with localsad on
# H1, and cleanup. Source after setting BIN (the build's bin/), then call `start_fabric NAME` and
# `start_localsad [localsad options]`.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
BIN=$(cd "$BIN" && pwd) # absolute: the tests run from a work directory
FABRIC=$ROOT/scripts/fabric
# shellcheck source=scripts/fabric-client.sh
. "$ROOT/scripts/fabric-client.sh"
passed=0
failed=0
pass() { echo "ok   - $*"; passed=$((passed + 1)); }
fail() { echo "FAIL - $*"; failed=$((failed + 1)); }
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
summary() { echo "$passed passed, $failed failed"; ((failed == 0)); }

DAEMON_PID=
cleanup() {
    [[ -n ${FABRIC_OPENSM_PID:-} ]] && kill -CONT "$FABRIC_OPENSM_PID" 2>/dev/null
    [[ -n $DAEMON_PID ]] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
    local retried
    retried=$(fabric_client_retries "$WORK/fabric")
    ((retried == 0)) || echo "# client starts retried after a crash on their way up: $retried"
    "$FABRIC" down --dir "$WORK/fabric" >/dev/null 2>&1
    if ((failed)) || [[ -n ${KEEP_LOGS:-} ]]; then
        echo "--- localsad log"; tail -40 "$WORK/localsad.log" 2>/dev/null
    fi
    rm -rf "$WORK"
}

# start_fabric NAME [UP OPTIONS]: a work directory, a fresh ibsim + OpenSM (with the SA request
# count); UP OPTIONS go to `scripts/fabric up` (e.g. --partitions FILE).
start_fabric() {
    WORK=$(mktemp -d "/tmp/localsa-$1.XXXXXX")
    trap cleanup EXIT
    trap 'exit 1' INT TERM HUP
    cd "$WORK" || exit 1 # umad2sim leaves its fake sysfs (sys-PID/) in the working directory
    "$FABRIC" up --dir "$WORK/fabric" --hosts 16 --count-sa "${@:2}" >/dev/null ||
        { echo "FAIL - fabric up"; exit 1; }
    # shellcheck disable=SC1091
    source "$WORK/fabric/env"
    CTL=$WORK/localsad.sock
}

# start_localsad [OPTIONS]: localsad on H1 (log level $LOG_LEVEL, default debug); returns once its
# control socket is there (its agents are registered by then). Started again when umad2sim
# crashes it on its way up (scripts/fabric-client.sh); DAEMON_PID is localsad's own pid.
start_localsad() {
    rm -f "$CTL"
    fabric_client_start --dir "$WORK/fabric" --name "localsad on H1" --ready-file "$CTL" \
        --timeout 10 --output "$WORK/localsad.log" -- \
        "$FABRIC" run --dir "$WORK/fabric" --node H1 --no-retry -- "$BIN/localsad" --foreground \
        --control "$CTL" --state-dir "$WORK/state" --log-level "${LOG_LEVEL:-debug}" "$@"
    local rc=$?
    DAEMON_PID=$FABRIC_CLIENT_PID
    return $rc
}

ctl() { "$BIN/localsactl" --control "$CTL" --json "$@"; }
stats_of() { ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
q() { "$FABRIC" run --dir "$WORK/fabric" --node H1 -- "$BIN/localsactl" query "$@"; }
