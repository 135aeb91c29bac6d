#!/usr/bin/env bash
# vm test: the real ib_ipoib over simhca on the patched ib_core, every IPoIB port's SA queries
# redirected to itself (sa_redirect=simhcaN:1=self for simhca1..3) where localsad answers them.
# Checks:
#   Debian's ib_ipoib loads against the patched ib_core; the three interfaces (one per network
#     namespace) get their carrier (the broadcast join went through localsad to the master)
#     and every pair pings, v4 and v6; localsad served the PathRecords (pr_requests);
#   localsad hung (SIGSTOP, all three): an interface brought down and up gets its carrier and
#     pings its neighbours within 15 s (the hung-`self` case of the kernel work, seen by a real
#     consumer); the time it took is printed either way.
# Usage: tests/vm/ipoib_selfhang.test.sh 6.1|6.12
# vm-lines: 6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    LOCALSA_VM_COUNT_SA=1 exec bash scripts/vm run --kernel "$LINE" --sm H0 \
        --hca H1 --hca H2 --hca H3 --timeout "${LOCALSA_VM_TIMEOUT:-840}" \
        --modparam 'ib_core:sa_redirect=simhca1:1=self,simhca2:1=self,simhca3:1=self' \
        -- bash tests/vm/ipoib_selfhang.test.sh --guest
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
# shellcheck source=tests/vm/lib/ipoib.sh
. "$(dirname "$0")/lib/ipoib.sh"
BOUND=15

section "localsad on simhca1..3, sa_redirect self"
check "patched ib_core: sa_redirect is set" grep -q 'simhca3:1=self' /sys/module/ib_core/parameters/sa_redirect
for n in $NODES; do start_localsad "$n"; done
all_serving() { local n; for n in $NODES; do [[ -n $(stat_of "$n" pr_requests) ]] || return 1; done; }
check "the three localsad serve" wait_until 60 all_serving

section "ib_ipoib"
check "modprobe ib_ipoib (Debian's module, patched ib_core)" modprobe ib_ipoib
check "IPoIB interfaces of simhca1..3 appear" wait_until 30 all_ifaces
pr0=0
for n in $NODES; do pr0=$((pr0 + $(stat_of "$n" pr_requests))); done
setup_netns
check "carrier on the three interfaces" wait_until 60 all_carrier
ping_round
pr1=0
for n in $NODES; do pr1=$((pr1 + $(stat_of "$n" pr_requests))); done
check "localsad answered the PathRecords ($((pr1 - pr0)))" test $((pr1 - pr0)) -ge 1
members=$(members_at_master ff12:401b:ffff::ffff:ffff)
for n in $NODES; do
    check "port GID of simhca$n is a member of the broadcast group at the master" \
        grep -qx "${GID[$n]}" <<<"$members"
done

section "localsad hung (SIGSTOP): ${IFACE[1]} down and up"
for n in $NODES; do kill -STOP "${DAEMON[$n]}"; done
now() { date +%s.%N; }
since() { python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$(now)" "$1"; }
t0=$(now)
bounce 1
wait_until 60 carrier 1
c=$?
t_carrier=$(since "$t0")
p=1
((c == 0)) && ping4 1 2 && t_ping2=$(since "$t0") && ping4 1 3 && p=0
t_ping=$(since "$t0")
echo "     pings: to 2 answered after ${t_ping2:-?} s, to 3 after ${t_ping} s"
dmesg | grep -E "SA redirect|ipoib|multicast" | tail -n 12
echo "     localsad stopped: carrier after ${t_carrier} s (got it: $((c == 0))), pings after ${t_ping} s (answered: $((p == 0)))"
check "carrier and pings within $BOUND s (carrier ${t_carrier} s, pings ${t_ping} s)" \
    python3 -c "import sys; sys.exit(not ($p == 0 and float(sys.argv[1]) <= $BOUND))" "$t_ping"
t1=$(now)
for n in $NODES; do kill -CONT "${DAEMON[$n]}"; done
up_and_pinging() { carrier 1 && ping4 1 2 && ping4 1 3; }
check "localsad resumed (SIGCONT): carrier and pings" wait_until 120 up_and_pinging
echo "     after SIGCONT: carrier and pings after $(since "$t1") s"
dmesg | grep -iE "ipoib|ib_sa|multicast" | tail -n 8

check "no kernel warning" bash -c '! dmesg | grep -E "WARNING:|BUG:|Oops"'
((VM_FAILS)) && { echo "--- localsad logs"; tail -n 15 /tmp/localsad-*.log; dmesg | grep -i -E "ipoib|ib_sa" | tail -20; }
finish
