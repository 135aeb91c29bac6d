#!/usr/bin/env bash
# sim tier: localsad's control socket against bad clients. Bytes that are not UTF-8 or not JSON,
# an overlong line, clients that never finish their line and more clients than sessions: each
# gets a JSON error answer (or is closed after the read timeout), localsad keeps serving MADs
# and the control socket, and its log holds no raw byte of a request.
# Usage: control.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric control
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
LOG_LEVEL=info start_localsad
check "localsad starts" test -S "$CTL"
eq() { check "$1 ($2 = $3)" test "$2" = "$3"; }
OWN_GID=$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")

# send PYTHON_BYTES_EXPRESSION: the answer to one connection that sends those bytes, as text.
send() {
    python3 - "$CTL" "$@" <<'PY'
import socket, sys
path, data = sys.argv[1], eval(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(path)
try:
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
except OSError:
    pass  # an overlong line: the daemon answers and closes before reading it all
answer = b""
while chunk := s.recv(65536):
    answer += chunk
sys.stdout.write(answer.decode("utf-8", "backslashreplace"))
PY
}
error_of() { python3 -c "import json,sys; print(json.load(sys.stdin).get('error', ''))"; }

answer=$(send "b'\\xff\\xfe{\\n'")
eq "\\xff\\xfe{ is answered with a JSON error" "bad request: not UTF-8 (byte 0)" "$(error_of <<<"$answer")"
check "localsad survived \\xff\\xfe{" kill -0 "$DAEMON_PID"
check "... without echoing the bytes" test "${answer//\\xff/}" = "$answer"
answer=$(send "b'{\"cmd\": \"st\\n'")
check "truncated JSON is answered 'not JSON'" grep -q "not JSON (error at byte" <<<"$(error_of <<<"$answer")"
answer=$(send "b'[\"stats\"]\\n'")
eq "a JSON array is not a request" "bad request: not a JSON object" "$(error_of <<<"$answer")"
answer=$(send "b'{\"cmd\": 1}\\n'")
check "a number as cmd is refused" grep -q 'no "cmd" string' <<<"$(error_of <<<"$answer")"
answer=$(send "b'x' * 1048576 + b'\\n'")
eq "a 1 MiB line is refused" "bad request: longer than 4095 bytes" "$(error_of <<<"$answer")"
check "localsad survived all of them" kill -0 "$DAEMON_PID"
check "its log holds no raw byte of a request" bash -c "! LC_ALL=C grep -q $'\\xff' '$WORK/localsad.log'"

# 20 clients that send half a line and wait: 16 sessions are held, the other 4 wait in the
# listen backlog; after the read timeout (5 s) each held one gets its error, the waiting ones
# are taken (and time out 5 s later in turn).
python3 - "$CTL" >"$WORK/idle.out" <<'PY' &
import json, socket, sys, time, threading
path, answers = sys.argv[1], []
def idle():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(b'{"cmd": ')
    t0 = time.monotonic()
    data = b""
    while chunk := s.recv(4096):
        data += chunk
    answers.append((json.loads(data)["error"], time.monotonic() - t0))
threads = [threading.Thread(target=idle) for _ in range(20)]
for t in threads:
    t.start()
    time.sleep(0.02)
for t in threads:
    t.join()
for error, seconds in answers:
    print(f"{seconds:.1f} {error}")
PY
IDLE_PID=$!
sleep 1
q pr --sgid "$OWN_GID" --dlid "${LIDS[3]}" --lid "$OWN_LID" >/dev/null
check "while every session is held, MADs are served" test $? -eq 0
t0=$SECONDS
ctl stats >"$WORK/stats.json"
check "a client waiting behind them is served once one times out" grep -q pr_requests "$WORK/stats.json"
check "... within the read timeout (5 s) and a bit" test $((SECONDS - t0)) -le 7
wait "$IDLE_PID"
eq "every idle client got the timeout error" 20 "$(grep -c 'no complete request line within 5 s' "$WORK/idle.out")"
check "the control socket serves again" bash -c "'$BIN/localsactl' --control '$CTL' stats | grep -q pr_requests"
# localsactl: a dump in slices is whole JSON; the human form has one line per answer; -C/-P name
# the instance's socket as localsad names it
n=$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['cache_entries'])")
eq "dump -j: every cached answer, valid JSON" "$n" \
    "$(ctl dump | python3 -c "import json,sys; print(len(json.load(sys.stdin)['entries']))")"
eq "dump: a header line naming the count" "$n cached answers" \
    "$("$BIN/localsactl" --control "$CTL" dump | head -1)"
out=$("$BIN/localsactl" -C nosuchca -P 2 stats 2>&1); rc=$?
check "-C nosuchca -P 2: exit 1, naming /run/localsa/nosuchca-2.sock ($out)" \
    test "$rc" -eq 1 -a -n "$(grep -F /run/localsa/nosuchca-2.sock <<<"$out")"
check "localsad still running" kill -0 "$DAEMON_PID"
summary
