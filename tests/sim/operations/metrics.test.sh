#!/usr/bin/env bash
# sim tier: what an operator's monitoring reads from a running localsad. `localsactl stats
# --format prometheus` passes promtool's exposition check and carries the same counts as the
# JSON; `localsactl health` says OK (exit 0) while localsad serves with its master answering,
# WARNING (1) with an empty kernel redirect table is covered by the unit tests, and CRITICAL (2)
# once localsad is gone.
# Usage: metrics.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
PROMTOOL=$(command -v promtool || echo "${LOCALSA_CACHE:-/var/cache/localsa}/promtool/promtool")
[[ -x $PROMTOOL ]] || { echo "FAIL - no promtool (scripts/setup fetches it)"; exit 1; }
start_fabric metrics
start_localsad
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

health=$(ctl health); rc=$?
echo "# health: $health"
check "health: OK while serving (exit 0)" test "$rc" = 0
check "... one line naming the port and the master" \
    grep -q "^OK: localsad on .* port 1 (LID $OWN_LID); master SA at LID $FABRIC_SM_LID answered" <<<"$health"

kill "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null; DAEMON_PID=
health=$(ctl health); rc=$?
echo "# health: $health"
check "health: CRITICAL once localsad is gone (exit 2)" test "$rc" = 2
check "... saying the daemon does not answer" grep -q '^CRITICAL: localsad does not answer on' <<<"$health"
summary
