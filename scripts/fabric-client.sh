# shellcheck shell=bash
# Start a client of a simulated fabric, and start it again when umad2sim crashes it on the way up.
# Sourced by scripts/fabric (`run`) and by the sim-tier tests, which need the client as a child
# of their own shell (its real pid, `wait` for its exit status); works with and without
# `set -e`. See docs/fabric.md, "Clients that crash while they start".
#
# umad2sim's receive thread runs from the client's first libibumad call (umad_get_port) on. A MAD
# that arrives before the client has registered an agent for its class is looked up in a queue
# that does not exist yet, and the thread dereferences NULL: SIGSEGV, exit status 139, before the
# client ever came up. That is a fault of the simulator, not of the client, so the harness starts
# the client again; every other failure (an exit status of its own, a crash once it was up, a
# deliberate SIGTERM/SIGKILL) is the client's and is passed on unchanged.

FABRIC_CLIENT_PID=       # the client's pid (of the last start)
# shellcheck disable=SC2034 # for the caller
FABRIC_CLIENT_STATUS=    # its exit status once it has exited, empty while it runs
FABRIC_CLIENT_SIGNALLED=0 # set by the traps of fabric_client_forward_signals

# fabric_client_forward_signals: pass SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGUSR2 to the client
fabric_client_forward_signals() {
    local sig
    for sig in TERM INT HUP USR1 USR2; do
        # shellcheck disable=SC2064 # the signal name now, the pid when the signal comes
        trap "FABRIC_CLIENT_SIGNALLED=1; [[ -n \$FABRIC_CLIENT_PID ]] && kill -$sig \$FABRIC_CLIENT_PID 2>/dev/null || true" "$sig"
    done
}

# fabric_client_wait: wait for the client to exit, also through signals passed on to it
# (a trapped signal interrupts `wait`); returns its exit status
fabric_client_wait() {
    local rc last=
    while :; do
        FABRIC_CLIENT_SIGNALLED=0
        rc=0
        wait "$FABRIC_CLIENT_PID" || rc=$?
        # 127: already collected by the wait a signal interrupted just as the client exited
        if ((rc == 127)) && [[ -n $last ]]; then rc=$last; break; fi
        ((FABRIC_CLIENT_SIGNALLED)) || break
        last=$rc
    done
    return "$rc"
}

# fabric_client_crash_signal STATUS: the signal name when STATUS is a crash (SIGSEGV, SIGBUS,
# SIGABRT) of the kind umad2sim causes; fails for anything else
fabric_client_crash_signal() {
    case "$1" in
    139) echo SIGSEGV ;;
    135) echo SIGBUS ;;
    134) echo SIGABRT ;;
    *) return 1 ;;
    esac
}

# fabric_client_retries DIR: how many client starts in the fabric DIR were retried
fabric_client_retries() {
    local f=$1/client-retries
    if [[ -f $f ]]; then wc -l <"$f"; else echo 0; fi
}

# _fabric_client_gone PID: the process has exited (gone or a zombie)
_fabric_client_gone() {
    local stat
    read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
    stat=${stat##*) }
    [[ ${stat:0:1} == Z || ${stat:0:1} == X ]]
}

FABRIC_CLIENT_FABRIC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fabric

# _fabric_client_release DIR PID: drop the ibsim client slot a crashed client still holds. A
# client that dies without disconnecting keeps its slot, and with it the node's SM role when it
# had one (SIM_SET_ISSM or issm opened): the next SM client of that node is refused ("connect
# failed") until the slot goes.
_fabric_client_release() {
    local n
    n=$("$FABRIC_CLIENT_FABRIC" cmd --dir "$1" Attached 2>/dev/null |
        sed -n "s/^Client \([0-9]*\): pid $2 .*/\1/p" | head -n 1) || true
    [[ -z $n ]] || "$FABRIC_CLIENT_FABRIC" cmd --dir "$1" "X $n" >/dev/null 2>&1 || true
}

# _fabric_client_ready KIND ARG REGEX: the readiness condition holds
_fabric_client_ready() {
    case "$1" in
    file) [[ -e $2 ]] ;;
    log) grep -qE -- "$3" "$2" 2>/dev/null ;;
    *) return 1 ;;
    esac
}

# fabric_client_start --dir DIR [--name NAME] [--tries N] [--timeout SEC] [--output FILE]
#                     (--ready-file PATH | --ready-log FILE REGEX | --one-shot) -- COMMAND...
# Runs COMMAND in the background (stdout and stderr to FILE when given) and waits until it is up:
#   --ready-file PATH      PATH exists (e.g. localsad's control socket)
#   --ready-log FILE REGEX a line of FILE matches the extended REGEX
#   --one-shot             a client that runs to its end (a query): up when it has exited
# A client that dies of SIGSEGV, SIGBUS or SIGABRT before it is up is started again, at most
# N starts in all (default 3); each retry is logged to stderr and appended to DIR/client-retries
# (the output of the crashed start is kept as FILE.crash-K). Sets FABRIC_CLIENT_PID and, once the
# client has exited, FABRIC_CLIENT_STATUS. Returns 0 when the client is up (one-shot: its exit
# status), the client's exit status when it failed before it was up, 124 when it was not up
# within SEC seconds (default 60; it is then stopped).
fabric_client_start() {
    local dir="" name="" tries=3 timeout=60 output="" ready="" ready_arg="" ready_re=""
    while [[ $# -gt 0 ]]; do
        case "$1" in
        --dir) dir=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --tries) tries=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --output) output=$2; shift 2 ;;
        --ready-file) ready="file"; ready_arg=$2; shift 2 ;;
        --ready-log) ready="log"; ready_arg=$2; ready_re=$3; shift 3 ;;
        --one-shot) ready="exit"; shift ;;
        --) shift; break ;;
        *) echo "fabric_client_start: unknown option '$1'" >&2; return 2 ;;
        esac
    done
    [[ -n $dir && -n $ready && $# -gt 0 ]] ||
        { echo "fabric_client_start: needs --dir, a readiness condition and a command" >&2; return 2; }
    [[ $tries =~ ^[1-9][0-9]*$ ]] || { echo "fabric_client_start: --tries needs a positive number" >&2; return 2; }
    if [[ -z $name ]]; then # the program: after `--` in a `scripts/fabric run ... -- PROGRAM`
        local a prev=$1
        for a in "$@"; do [[ $prev == -- ]] && { name=$(basename "$a"); break; }; prev=$a; done
        [[ -n $name ]] || name=$(basename "$1")
    fi
    local start=0 status sig deadline
    while :; do
        start=$((start + 1))
        FABRIC_CLIENT_STATUS=
        if [[ -n $output ]]; then
            "$@" >"$output" 2>&1 &
        else
            "$@" &
        fi
        FABRIC_CLIENT_PID=$!
        deadline=$((SECONDS + timeout))
        status=
        if [[ $ready == exit ]]; then
            status=0
            fabric_client_wait || status=$?
        else
            while :; do
                if _fabric_client_ready "$ready" "$ready_arg" "$ready_re"; then
                    return 0
                fi
                if _fabric_client_gone "$FABRIC_CLIENT_PID"; then
                    status=0
                    wait "$FABRIC_CLIENT_PID" || status=$?
                    break
                fi
                if ((SECONDS >= deadline)); then
                    echo "fabric: $name was not up within ${timeout}s: stopping it" >&2
                    kill -TERM "$FABRIC_CLIENT_PID" 2>/dev/null || true
                    sleep 0.5
                    kill -KILL "$FABRIC_CLIENT_PID" 2>/dev/null || true
                    wait "$FABRIC_CLIENT_PID" 2>/dev/null || true
                    FABRIC_CLIENT_STATUS=124
                    return 124
                fi
                sleep 0.05
            done
        fi
        # shellcheck disable=SC2034 # for the caller
        FABRIC_CLIENT_STATUS=$status
        if ! sig=$(fabric_client_crash_signal "$status"); then
            return "$status"
        fi
        if ((start >= tries)); then
            echo "fabric: $name died of $sig (exit $status) before it was up, in each of $tries starts: giving up" >&2
            return "$status"
        fi
        echo "fabric: $name died of $sig (exit $status) before it was up (start $start of $tries): starting it again" >&2
        echo "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ) $name $sig start $start" >>"$dir/client-retries"
        if [[ -n $output && -f $output ]]; then mv "$output" "$output.crash-$start"; fi
        _fabric_client_release "$dir" "$FABRIC_CLIENT_PID"
    done
}
