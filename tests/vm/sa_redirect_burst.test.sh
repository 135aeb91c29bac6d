#!/usr/bin/env bash
# vm test: bursts of kernel path queries through a healthy, warm localsad with a small
# sa_redirect_timeout_ms (R, default 20 ms here), on the normal Debian kernel of line $1.
# 8-host ibsim fabric, OpenSM on simhca0, localsad on simhca1 (--netlink off: the queries take
# the redirected MAD path), sa_redirect=simhca1:1=self. A burst answers later than R, but
# localsad answers: no Get may fall back to the master (issue 27, defect 7: a slow but live
# local SA must not push the node's load on the master), and every answer must be the
# master's. Then localsad SIGSTOPped: a path query still gets the master's answer, within
# the caller's timeout.
# LOCALSA_BURST_R (20), LOCALSA_BURST_COUNT (200) and LOCALSA_BURST_ROUNDS (3) size it.
# Usage: tests/vm/sa_redirect_burst.test.sh 6.1|6.12
# vm-lines: 6.1 6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    t0=$SECONDS
    rc=0
    bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --timeout "${LOCALSA_VM_TIMEOUT:-400}" \
        --modparam 'ib_core:sa_redirect=simhca1:1=self' \
        --modparam "ib_core:sa_redirect_timeout_ms=${LOCALSA_BURST_R:-20}" \
        -- env LOCALSA_BURST_COUNT="${LOCALSA_BURST_COUNT:-200}" \
        LOCALSA_BURST_ROUNDS="${LOCALSA_BURST_ROUNDS:-3}" \
        bash tests/vm/sa_redirect_burst.test.sh --guest || rc=$?
    echo "sa_redirect_burst $LINE: $((SECONDS - t0)) s"
    exit "$rc"
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
# shellcheck source=tests/vm/lib/localsa-test.sh
. "$(dirname "$0")/lib/localsa-test.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
N=${LOCALSA_BURST_COUNT:-200}
ROUNDS=${LOCALSA_BURST_ROUNDS:-3}
TIMEOUT_MS=1000
cd /tmp

"$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --netlink off --spread-ms 1000 \
    >>/tmp/localsad.log 2>&1 &
DAEMON=$!
trap 'kill -CONT $DAEMON 2>/dev/null; kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n 1; }
preloaded() { [[ $(stat_of preload_state) == "done" ]]; }
# the answer's fields as "path" prints them (dlid=... pkey=0x....)
fields() { sed -n 's/.*status=0 \(dlid=.* pkey=0x[0-9a-f]*\).*/\1/p' <<<"$1"; }

check "localsa_test loads (caller timeout $TIMEOUT_MS ms)" modprobe localsa_test timeout_ms=$TIMEOUT_MS
R=$(cat /sys/module/ib_core/parameters/sa_redirect_timeout_ms)
OWN_GID=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]))' \
    "$(cat /sys/class/infiniband/simhca1/ports/1/gids/0)")
check "localsad serves simhca1 (preload done)" wait_until 60 preloaded
check "the redirect is in force" wait_until 10 state_is redirect
table=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --table)
lid=$(timeout 10 saquery -C simhca1 -L H2 2>/dev/null | awk 'NR == 1 { print $1 }')
DEST=$(sed -n "s/^dlid=$lid .* dgid=\(.*\)\$/\1/p" <<<"$table" | head -n 1)
check "destination H2 ($DEST)" test -n "$DEST"
# the master's answer: localsactl asks the SM LID, not the redirect
MASTER=$(timeout 10 "$BIN/localsactl" --ca simhca1 query pr --sgid "$OWN_GID" --dgid "$DEST" \
    --reversible 1 --numb-path 1 | sed -n 's/^\(dlid=.* pkey=0x[0-9a-f]*\) .*/\1/p')
check "the master's answer ($MASTER)" test -n "$MASTER"
r=$(op path "$DEST")
eq "one path through localsad (warm-up): the master's answer" "$MASTER" "$(fields "$r")"

echo "--- R = sa_redirect_timeout_ms = $R ms: $ROUNDS bursts of $N path queries (guest time $SECONDS s)"
rd0=$(redir 4) fb0=$(redir 5) pb0=$(redir 6) up0=$(stat_of upstream_requests)
late=0
for ((i = 1; i <= ROUNDS; i++)); do
    r=$(op path_burst "$DEST" "$N")
    echo "BURST $i $r"
    eq "burst $i: all answered" "$N 0 0 0" \
        "$(val ok "$r") $(val etimedout "$r") $(val other "$r") $(val lost "$r")"
    eq "burst $i: every answer the same" 0 "$(val differ "$r")"
    eq "burst $i: ... the master's" "$MASTER" "$(fields "$r")"
    (($(val max_ms "$r") > R)) && late=$((late + 1))
done
echo "REDIR redirected=$(($(redir 4) - rd0)) fallen_back=$(($(redir 5) - fb0))" \
    "probed=$(($(redir 6) - pb0)) state=$(redir 3) bursts_answered_later_than_R=$late"
eq "every Get was redirected" $((ROUNDS * N)) $(($(redir 4) - rd0))
eq "none fell back to the master" 0 $(($(redir 5) - fb0))
eq "the port stays redirected" redirect "$(redir 3)"
eq "localsad asked the master nothing (cached)" "$up0" "$(stat_of upstream_requests)"
echo "info - $late of $ROUNDS bursts had answers later than R ($R ms)"

echo "--- localsad stopped (guest time $SECONDS s)"
kill -STOP "$DAEMON"
fb0=$(redir 5)
r=$(op path "$DEST")
e=$(sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p' <<<"$r")
eq "a path query gets the master's answer" "$MASTER" "$(fields "$r")"
echo "info - elapsed_ms=$e, fallen_back $fb0 -> $(redir 5), state $(redir 3)"
check "the stopped localsad is found hung: fallback" wait_until 10 state_is fallback
r=$(op path_burst "$DEST" "$N")
echo "BURST stopped $r"
eq "a burst of $N: all answered by the master" "$N 0 $MASTER" \
    "$(val ok "$r") $(val differ "$r") $(fields "$r")"
kill -CONT "$DAEMON"
check "SIGCONT: a probe finds localsad again" wait_until 20 state_is redirect
check "no kernel warning or oops" bash -c "! dmesg | grep -E 'BUG:|WARNING:|Oops|INFO: task|UBSAN|KASAN'"
check "localsa_test unloads" rmmod localsa_test
finish
