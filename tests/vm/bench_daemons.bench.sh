#!/usr/bin/env bash
# vm benchmark (label vmbench): localsad and OpenSM side by side on the real MAD layer (ib_umad,
# ib_mad over simhca; 6.12 guest under TCG: only ratios count). OpenSM runs on simhca0 (H0),
# localsad on simhca1 (H1), each with a warm answer for every question. The same client,
# sa_flood, asks each daemon from the daemon's own port (localsad serves its own port only), so
# both paths are the same: client -> umad -> ib_mad -> simhca's loopback -> ib_mad -> umad ->
# daemon, and back; neither crosses ibsim or a relay. PathRecord Gets (SLID = the port's,
# DLID = every other host) at 1, 16 and 64 outstanding, OpenSM and localsad alternating, each
# point LOCALSA_VMBENCH_REPS times (default 3). CPU: utime + stime of each daemon's process
# from /proc/PID/stat around each run. OpenSM logs at its default level (no per-query log).
# Prints one "flood TARGET DEPTH REP RATE P50 P99 ANSWERED OK DAEMON_UTICKS DAEMON_STICKS
# CLIENT_TICKS COUNT" line per run (ticks of the guest's CLK_TCK, printed as "clk_tck N"),
# which scripts/bench turns into its table; fails if a run had an error or localsad asked the
# master during the measured runs.
# Usage: tests/vm/bench_daemons.bench.sh 6.12   (LOCALSA_VMBENCH_SCALE=0.25: shorter runs)
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    t0=$SECONDS
    rc=0
    echo "host_load_before $(cut -d' ' -f1-3 /proc/loadavg)"
    bash scripts/vm run --kernel "$LINE" --sm H0 --hca H1 --timeout 1500 \
        -- bash tests/vm/bench_daemons.bench.sh --guest || rc=$?
    echo "bench_daemons $LINE: $((SECONDS - t0)) s"
    echo "host_load_after $(cut -d' ' -f1-3 /proc/loadavg)"
    exit $rc
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
CTL=/tmp/localsad.sock
REPS=${LOCALSA_VMBENCH_REPS:-3}
SCALE=${LOCALSA_VMBENCH_SCALE:-1}
cd /tmp

ticks() { awk '{ sub(/^.*\) /, ""); print $12, $13 }' "/proc/$1/stat"; }
stat_of() { timeout 10 "$BIN/localsactl" --control "$CTL" -j stats 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# LIDs of every CA port of the fabric
mapfile -t HOSTS <<<"$(ca_nodes 1 | awk '{ print $2 }')"
LID0=$(port_lid 0)
LID1=$(port_lid 1)
others() { printf '%s\n' "${HOSTS[@]}" | grep -vx "$1" | paste -sd,; }
DLIDS0=$(others "$LID0")
DLIDS1=$(others "$LID1")
check "hosts of the fabric: ${#HOSTS[@]}, OpenSM on LID $LID0, localsad on LID $LID1" \
    test "${#HOSTS[@]}" -ge 4

"$BIN/localsad" --foreground --ca simhca1 --control "$CTL" --no-preload --spread-ms 0 \
    --netlink off --log-level warn >/tmp/localsad.log 2>&1 &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null || true' EXIT
ready() { [[ -S $CTL ]] && stat_of upstream_requests >/dev/null 2>&1; }
check "localsad runs on simhca1" wait_until 30 ready

# flood CA SLID DLIDS SALID COUNT DEPTH -> "RATE P50 P99 ANSWERED OK"
flood() {
    timeout 600 "$BIN/sa_flood" --ca "$1" --slid "$2" --dlid "$3" --lid "$4" --count "$5" \
        --depth "$6" --timeout 5000 --latency 2>/dev/null |
        awk '/^sent/ {a=$4; o=$6; r=$14} /^latency_us/ {p50=$3; p99=$5} END {print r, p50, p99, a, o}'
}
# Warm both: every question once (OpenSM's first answers after a sweep are no different, but
# the first run of each pays the page faults of its buffers).
flood simhca1 "$LID1" "$DLIDS1" "$LID1" 64 4 >/dev/null
flood simhca1 "$LID1" "$DLIDS1" "$LID1" 64 4 >/dev/null
flood simhca0 "$LID0" "$DLIDS0" "$LID0" 64 4 >/dev/null
up0=$(stat_of upstream_requests)
checks0=$(stat_of subscription_checks)
echo "clk_tck $(getconf CLK_TCK)"
echo "hosts ${#HOSTS[@]}"
ERR=0
for depth in 1 16 64; do
    case $depth in 1) count=2000 ;; 16) count=8000 ;; *) count=12000 ;; esac
    count=$(awk -v c="$count" -v s="$SCALE" 'BEGIN { printf "%d", c * s }')
    for rep in $(seq "$REPS"); do
        for target in opensm localsad; do
            if [[ $target == opensm ]]; then
                pid=$VM_OPENSM_PID ca=simhca0 lid=$LID0 dl=$DLIDS0
            else
                pid=$DAEMON ca=simhca1 lid=$LID1 dl=$DLIDS1
            fi
            read -r u0 s0 <<<"$(ticks "$pid")"
            t_client0=$(awk '{ print $16 + $17 }' /proc/$$/stat) # children's ticks so far
            res=$(flood "$ca" "$lid" "$dl" "$lid" "$count" "$depth")
            t_client1=$(awk '{ print $16 + $17 }' /proc/$$/stat)
            read -r u1 s1 <<<"$(ticks "$pid")"
            read -r _ _ _ _ ok_n <<<"$res"
            ((ok_n == count)) || ERR=$((ERR + 1))
            echo "flood $target $depth $rep $res $((u1 - u0)) $((s1 - s0))" \
                "$((t_client1 - t_client0)) $count"
        done
    done
done
eq "every run answered every query without error" 0 "$ERR"
up1=$(stat_of upstream_requests)
checks1=$(stat_of subscription_checks)
eq "localsad answered every measured query from its cache (no query to the master)" \
    0 $((up1 - up0 - (checks1 - checks0)))
echo "localsad: $(stat_of pr_cache_hits) cache hits"
finish
