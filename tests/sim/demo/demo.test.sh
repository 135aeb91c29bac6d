#!/usr/bin/env bash
# sim tier: scripts/demo at small N. Checks, from OpenSM's own log (scripts/fabric sa-count):
#   the job start without local SAs puts exactly N(N-1) PathRecord queries on the master;
#   with cold local SAs (empty caches, no preload) exactly the same N(N-1), each miss once;
#   with warm local SAs the master sees 0 during the job, every query answered locally;
#   every query of every phase answered with status OK and the right path.
# Usage: demo.test.sh BIN_DIR   (the directory holding localsa-fleet)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$(cd "${1:-$ROOT/build/bin}" && pwd)
N=${DEMO_TEST_HOSTS:-10}
passed=0
failed=0
pass() { echo "ok   - $*"; passed=$((passed + 1)); }
fail() { echo "FAIL - $*"; failed=$((failed + 1)); }
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }

WORK=$(mktemp -d /tmp/localsa-demo-test.XXXXXX)
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
cd "$WORK" || exit 1

# scripts/demo stops every fabric it started (also on failure). --no-fleet-scale: its fleet-scale
# table (N = 256 and 1,024, minutes on 2 cores) has tests of its own (unit.fleet_scale_*).
LOCALSA_BUILD=$(dirname "$BIN") "$ROOT/scripts/demo" --hosts "$N" --sizes "$N" --out "$WORK/out" \
    --no-fleet-scale >"$WORK/demo.out" 2>"$WORK/demo.err"
rc=$?
cat "$WORK/demo.out"
check "scripts/demo --hosts $N exits 0 (got $rc)" test "$rc" -eq 0
J=$WORK/out/job-$N.json
check "the job's results are written ($J)" test -s "$J"
check "the table is printed" grep -q "queries at master SA" "$WORK/demo.out"
check "the plot is written" test -s "$WORK/out/master-queries.png"

field() { # PHASE KEY
    python3 -c "import json,sys; d=json.load(open('$J')); print({p['phase']: p for p in d['phases']}['$1']['$2'])" 2>/dev/null
}
E=$((N * (N - 1)))
b=$(field baseline master_pr_queries)
check "baseline: the master saw exactly N(N-1) = $E PathRecord queries (sa-count: $b)" test "$b" = "$E"
c=$(field cold master_pr_queries)
# Cold caches, no preload: each (source, destination) pair is a distinct miss, asked once.
check "cold local SAs: every miss once at the master, no more, no less ($c = $E)" test "$c" = "$E"
eq_cold=$(field cold answered_locally)
check "cold: none answered from the emptied caches ($eq_cold)" test "$eq_cold" = 0
w=$(field warm master_pr_queries)
check "warm local SAs: the master saw 0 PathRecord queries during the job (sa-count: $w)" test "$w" = 0
l=$(field warm answered_locally)
check "warm: all $E queries answered by the local SAs ($l)" test "$l" = "$E"
for p in baseline cold warm; do
    ok=$(field $p ok)
    err=$(field $p errors)
    check "$p: all $E answered with status OK and the right path (ok $ok, errors $err)" \
        test "$ok" = "$E" -a "$err" = 0
done
# No fabric left behind by the demo: an OpenSM whose demo directory is gone is a leak.
left=0
while read -r conf; do
    [[ -e $conf ]] || left=$((left + 1))
done < <(ps -eo args | sed -n 's|^opensm -F \(/tmp/localsa-demo\.[^ ]*\) .*|\1|p')
check "no OpenSM left running by the demo ($left)" test "$left" -eq 0

if ((failed)); then
    echo "--- demo stderr"; tail -20 "$WORK/demo.err"
    echo "--- fleet log"; tail -20 "$WORK/out/job-$N.log" 2>/dev/null
fi
echo "$passed passed, $failed failed"
((failed == 0))
