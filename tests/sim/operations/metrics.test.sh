#!/usr/bin/env bash
# sim tier: what an operator's monitoring reads from a running localsad. `localsactl stats
# --format prometheus` passes promtool's exposition check and carries the same counts as the
# JSON; `localsactl health` says OK (exit 0) while localsad serves with its master answering,
# WARNING (1) with an empty kernel redirect table is covered by the unit tests, and CRITICAL (2)
# once localsad is gone. --metrics-listen serves the same text over HTTP (GET /metrics, 404 and
# 405 otherwise), also while another client holds a connection without sending anything.
# Usage: metrics.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
PROMTOOL=$(command -v promtool || echo "${LOCALSA_CACHE:-/var/cache/localsa}/promtool/promtool")
[[ -x $PROMTOOL ]] || { echo "FAIL - no promtool (scripts/setup fetches it)"; exit 1; }
start_fabric metrics
METRICS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_localsad --metrics-listen "$METRICS_PORT"
check "localsad starts" test -S "$CTL"
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
OWN_GID=$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")
for i in 2 3 5 2 3; do q pr --sgid "$OWN_GID" --dlid "${LIDS[$i]}" --lid "$OWN_LID" >/dev/null; done

ctl stats --format prometheus >"$WORK/localsa.prom"
check "stats --format prometheus passes promtool check metrics" \
    sh -c "'$PROMTOOL' check metrics <'$WORK/localsa.prom' >'$WORK/promtool.log' 2>&1"
sed 's/^/# promtool: /' "$WORK/promtool.log"
sample() { sed -n "s/^$1{ca=\"[^\"]*\",port=\"1\"} //p" "$WORK/localsa.prom"; }
check "five PathRecord requests counted (localsa_pr_requests_total)" \
    test "$(sample localsa_pr_requests_total)" = 5
check "... two of them hits, as in the JSON" \
    test "$(sample localsa_pr_cache_hits_total)" = "$(stats_of pr_cache_hits)"
check "... the cache size is a gauge" grep -q '^# TYPE localsa_cache_entries gauge$' "$WORK/localsa.prom"
check "... the port's info series names its LID" \
    grep -q "^localsa_port_info{.*lid=\"$OWN_LID\",sm_lid=\"$FABRIC_SM_LID\",state=\"4\"" "$WORK/localsa.prom"
check "stats --format json is the plain JSON" sh -c "'$BIN/localsactl' --control '$CTL' stats --format json | python3 -c 'import json,sys; json.load(sys.stdin)[\"pr_requests\"]'"
check "stats --format xml is refused (exit 2)" \
    sh -c "'$BIN/localsactl' --control '$CTL' stats --format xml 2>/dev/null; test \$? = 2"

http() { # METHOD PATH: prints "STATUS CONTENT-TYPE" and writes the body to $WORK/http.body
    python3 - "$1" "$METRICS_PORT" "$2" "$WORK/http.body" <<'PY'
import http.client, sys
method, port, path, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
c.request(method, path)
r = c.getresponse()
open(out, "wb").write(r.read())
print(r.status, r.getheader("Content-Type"))
PY
}
# A client that connects and never sends a request must not hold the endpoint.
exec 7<>"/dev/tcp/127.0.0.1/$METRICS_PORT"
check "GET /metrics: 200, the exposition's content type" \
    test "$(http GET /metrics)" = "200 text/plain; version=0.0.4; charset=utf-8"
check "... promtool accepts it" sh -c "'$PROMTOOL' check metrics <'$WORK/http.body' >/dev/null 2>&1"
check "... the same requests counted as over the control socket" \
    grep -q '^localsa_pr_requests_total{ca="[^"]*",port="1"} 5$' "$WORK/http.body"
check "GET /other: 404" test "$(http GET /other | cut -d' ' -f1)" = 404
check "POST /metrics: 405" test "$(http POST /metrics | cut -d' ' -f1)" = 405
exec 7>&-
check "a bad --metrics-listen is refused at start (exit 2)" \
    sh -c "'$BIN/localsad' --metrics-listen 1.2.3:99999 --check-config >/dev/null 2>&1; test \$? = 2"

health=$("$BIN/localsactl" --control "$CTL" health); rc=$?
echo "# health: $health"
check "health: OK while serving (exit 0)" test "$rc" = 0
check "... -j: the same as JSON" sh -c "'$BIN/localsactl' --control '$CTL' -j health | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j[\"health\"] == 0 and j[\"line\"].startswith(\"OK: \")'"
check "... one line naming the port and the master" \
    grep -q "^OK: localsad on .* port 1 (LID $OWN_LID); master SA at LID $FABRIC_SM_LID answered" <<<"$health"

kill "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null; DAEMON_PID=
health=$("$BIN/localsactl" --control "$CTL" health); rc=$?
echo "# health: $health"
check "health: CRITICAL once localsad is gone (exit 2)" test "$rc" = 2
check "... saying the daemon does not answer" grep -q '^CRITICAL: localsad does not answer on' <<<"$health"
summary
