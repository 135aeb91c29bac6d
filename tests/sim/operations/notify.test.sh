#!/usr/bin/env bash
# sim tier: localsad speaks systemd's notify protocol (sd_notify(3)) as the unit's Type=notify
# expects: READY=1 once the port is registered and the master SA answered ClassPortInfo, with a
# STATUS line naming the master and the hit rate; RELOADING=1 and READY=1 around a SIGHUP;
# STOPPING=1 on SIGTERM. The messages are read from $NOTIFY_SOCKET as systemd would.
# Usage: notify.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric notify
MESSAGES=$WORK/notify.log
export NOTIFY_SOCKET=$WORK/notify.sock
# systemd's end of the socket: one line per datagram, newlines shown as " | ". It stops by itself.
timeout 120 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as out:
    while True:
        out.write(s.recv(4096).decode().replace("\n", " | ") + "\n")
        out.flush()
' "$NOTIFY_SOCKET" "$MESSAGES" &
LISTENER=$!
for _ in $(seq 50); do [[ -S $NOTIFY_SOCKET ]] && break; sleep 0.1; done

got() { grep -q -- "$1" "$MESSAGES" 2>/dev/null; }
wait_for() { for _ in $(seq 100); do got "$1" && return 0; sleep 0.1; done; return 1; }

CONF=$WORK/localsad.conf
printf 'negative-ttl-ms = 1000\n' >"$CONF"
start_localsad --config "$CONF"
check "localsad starts" test -S "$CTL"
check "READY=1 once the master answered" wait_for 'READY=1'
check "... with a STATUS naming the master SA's LID" \
    got "READY=1 | STATUS=master SA at LID $FABRIC_SM_LID answered"
check "... and the cache" got 'no PathRecord query yet; 0 answers cached'

printf 'negative-ttl-ms = 2000\n' >"$CONF"
kill -HUP "$DAEMON_PID"
check "SIGHUP: RELOADING=1" wait_for 'RELOADING=1'
check "... then READY=1 again" test "$(grep -c 'READY=1' "$MESSAGES")" -ge 2
check "... after RELOADING=1" test "$(grep -n 'RELOADING=1' "$MESSAGES" | head -1 | cut -d: -f1)" \
    -lt "$(grep -n 'READY=1' "$MESSAGES" | tail -1 | cut -d: -f1)"

kill -TERM "$DAEMON_PID"
check "SIGTERM: STOPPING=1" wait_for 'STOPPING=1'
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
kill "$LISTENER" 2>/dev/null
echo "# messages:"; sed 's/^/#   /' "$MESSAGES"
summary
