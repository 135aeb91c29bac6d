#!/usr/bin/env bash
# vm test: the real ib_ipoib over simhca on the patched ib_core, every IPoIB port's SA queries
# redirected to itself (sa_redirect=simhcaN:1=self for simhca1..3) where localsad answers them.
# Checks:
#   Debian's ib_ipoib loads against the patched ib_core; the three interfaces (one per network
#     namespace) get their carrier (the broadcast join went through localsad to the master)
#     and every pair pings, v4 and v6; localsad served the PathRecords (pr_requests);
#   a repeated round (interfaces bounced, neighbours flushed) reaches OpenSM zero times; how
#     the kernel asked localsad (netlink or the redirected MAD) and the first pings' times
#     are printed;
#   localsad hung (SIGSTOP, all three): an interface brought down and up gets its carrier and
#     pings its neighbours within 15 s (the hung-`self` case of the kernel work, seen by a real
#     consumer); the time it took is printed either way.
# On the debug line (KASAN, lockdep, kmemleak) the same checks with waits and the bound four
# times longer (its guest is several times slower); scripts/vm fails the run on any report of
# the debug kernel: simhca's datagrams and IPoIB's joins, bounces and neighbours under them.
# Usage: tests/vm/ipoib_selfhang.test.sh 6.12|6.12-debug
# vm-lines: 6.12 6.12-debug
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.12|6.12-debug}
    cd "$(dirname "$0")/../.."
    LOCALSA_VM_COUNT_SA=1 exec bash scripts/vm run --kernel "$LINE" --sm H0 \
        --hca H1 --hca H2 --hca H3 --timeout "${LOCALSA_VM_TIMEOUT:-840}" \
        --modparam 'ib_core:sa_redirect=simhca1:1=self,simhca2:1=self,simhca3:1=self' \
        -- bash tests/vm/ipoib_selfhang.test.sh --guest "$LINE"
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
# shellcheck source=tests/vm/lib/ipoib.sh
. "$(dirname "$0")/lib/ipoib.sh"
SLOW=1
[[ ${2:-} == *-debug ]] && SLOW=4
export SLOW # read by up_and_ping in the namespace
BOUND=$((15 * SLOW))

# Times from bash itself (EPOCHREALTIME, microseconds): a process started under TCG takes up
# to seconds. One shell in the namespace, started with the bounce, polls the carrier with
# builtins and pings both neighbours at once as soon as it is on.
now() { echo "${EPOCHREALTIME/[.,]/}"; }
us() { printf '%d.%d' $(($1 / 1000000)) $(($1 % 1000000 / 100000)); }
since() { us $(($(now) - $1)); }
# (read -t on a FIFO opened read-write: a sleep without a process)
rm -f /tmp/selfhang.fifo
mkfifo /tmp/selfhang.fifo
# shellcheck disable=SC2016 # expanded by the shell in the namespace
up_and_ping='exec 3<>/tmp/selfhang.fifo || exit 1; i=0
    until read -r c <"/sys/class/net/$0/carrier" 2>/dev/null && ((c == 1)); do
        ((++i < 1200 * SLOW)) || exit 1; read -r -t 0.05 -u 3 _; done
    echo "carrier ${EPOCHREALTIME/[.,]/}"
    for d in "$@"; do
        (k=0; until ping -q -c 1 -w 15 "$d" >/dev/null 2>&1; do ((++k < 3)) || exit 1; done
         echo "ping $d ${EPOCHREALTIME/[.,]/}") &
    done
    wait'

section "localsad on simhca1..3, sa_redirect self"
check "patched ib_core: sa_redirect is set" grep -q 'simhca3:1=self' /sys/module/ib_core/parameters/sa_redirect
for n in $NODES; do start_localsad "$n"; done
all_serving() { local n; for n in $NODES; do [[ -n $(stat_of "$n" pr_requests) ]] || return 1; done; }
check "the three localsad serve" wait_until $((60 * SLOW)) all_serving

section "ib_ipoib"
check "modprobe ib_ipoib (Debian's module, patched ib_core)" modprobe ib_ipoib
check "IPoIB interfaces of simhca1..3 appear" wait_until $((30 * SLOW)) all_ifaces
pr0=0
for n in $NODES; do pr0=$((pr0 + $(stat_of "$n" pr_requests))); done
setup_netns
check "carrier on the three interfaces" wait_until $((60 * SLOW)) all_carrier
ping_round
pr1=0
for n in $NODES; do pr1=$((pr1 + $(stat_of "$n" pr_requests))); done
check "localsad answered the PathRecords ($((pr1 - pr0)))" test $((pr1 - pr0)) -ge 1
members=$(members_at_master ff12:401b:ffff::ffff:ffff)
for n in $NODES; do
    check "port GID of simhca$n is a member of the broadcast group at the master" \
        grep -qx "${GID[$n]}" <<<"$members"
done

section "a repeated round, localsad running: the master is not asked again"
# A preload that did not come at the start (a slow guest) is asked again later: not in the round.
check "the three localsad preloaded" wait_until $((60 * SLOW)) all_preloaded
# redirected_total: the SA queries the kernel sent to the three ports' redirect targets
redirected_total() {
    local n s=0 v
    for n in $NODES; do
        v=$(awk 'NR > 1 { s += $4 } END { print s + 0 }' "/sys/kernel/debug/ib_sa/simhca$n/redirect" 2>/dev/null)
        s=$((s + ${v:-0}))
    done
    echo $s
}
bounce_all
check "carrier again" wait_until $((60 * SLOW)) all_carrier
sa0=$(osm_pr) nl0=$(nl_total) nt0=$(sum_stat nl_timeouts) rd0=$(redirected_total)
up0=$(sum_stat upstream_requests)
t0=$(now)
bounce 1
out=$(ip netns exec ipoib1 bash -c "$up_and_ping" "${IFACE[1]}" "$(v4 2)" "$(v4 3)")
for n in 2 3; do
    at=$(sed -n "s/^ping $(v4 "$n") //p" <<<"$out")
    echo "     localsad running: ping to $n answered after $([[ -n $at ]] && us $((at - t0)) || echo never) s"
done
ping_round
sa1=$(osm_pr) up1=$(sum_stat upstream_requests)
echo "     repeated round: localsad answered $(($(nl_total) - nl0)) over netlink (its timeouts +$(($(sum_stat nl_timeouts) - nt0))), the kernel redirected $(($(redirected_total) - rd0)) SA queries to localsad, OpenSM's PathRecords +$((sa1 - sa0)), localsad's own upstream requests +$((up1 - up0))"
for n in $NODES; do echo "     localsad on simhca$n: routing epoch trusted: $(epoch_trusted "$n" && echo yes || echo no)"; done
if ((SLOW == 1)); then
    eq "the repeated round reached OpenSM zero times (its PathRecord count)" "$sa0" "$sa1"
else
    # The debug guest takes minutes per round: localsad's own refreshes may fall in it. None
    # of the kernel's queries may reach OpenSM.
    check "no query of the kernel reached OpenSM in the repeated round (OpenSM's PathRecords +$((sa1 - sa0)), localsad's own upstream requests +$((up1 - up0)))" \
        test $((sa1 - sa0)) -le $((up1 - up0))
fi

section "localsad hung (SIGSTOP): ${IFACE[1]} down and up"
for n in $NODES; do kill -STOP "${DAEMON[$n]}"; done
t0=$(now)
bounce 1
out=$(ip netns exec ipoib1 bash -c "$up_and_ping" "${IFACE[1]}" "$(v4 2)" "$(v4 3)")
c=1 p=0 d_ping=0
at=$(sed -n "s/^carrier //p" <<<"$out")
[[ -n $at ]] && c=0 && t_carrier=$(us $((at - t0)))
for n in 2 3; do
    at=$(sed -n "s/^ping $(v4 "$n") //p" <<<"$out")
    if [[ -n $at ]]; then
        ((at - t0 > d_ping)) && d_ping=$((at - t0))
        echo "     ping to $n answered after $(us $((at - t0))) s"
    else
        p=1
    fi
done
t_ping=$(us "$d_ping")
dmesg | grep -E "SA redirect|ipoib|multicast" | tail -n 12
echo "     localsad stopped: carrier after ${t_carrier:-?} s (got it: $((c == 0))), pings after ${t_ping} s (answered: $((p == 0)))"
check "carrier and pings within $BOUND s (carrier ${t_carrier:-?} s, pings ${t_ping} s)" \
    test $c -eq 0 -a $p -eq 0 -a $d_ping -le $((BOUND * 1000000))
t1=$(now)
for n in $NODES; do kill -CONT "${DAEMON[$n]}"; done
up_and_pinging() { carrier 1 && ping4 1 2 && ping4 1 3; }
check "localsad resumed (SIGCONT): carrier and pings" wait_until $((120 * SLOW)) up_and_pinging
echo "     after SIGCONT: carrier and pings after $(since "$t1") s"
dmesg | grep -iE "ipoib|ib_sa|multicast" | tail -n 8

check "no kernel warning" bash -c '! dmesg | grep -E "WARNING:|BUG:|Oops"'
((VM_FAILS)) && { echo "--- localsad logs"; tail -n 15 /tmp/localsad-*.log; dmesg | grep -i -E "ipoib|ib_sa" | tail -20; }
finish
