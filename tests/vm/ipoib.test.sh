#!/usr/bin/env bash
# vm test: the real ib_ipoib (Debian's module, datagram mode) over simhca, its PathRecords
# answered by localsad over netlink on the stock kernel. Boots kernel line $1 with Debian's own
# ib_core, OpenSM on simhca0 counting its SA requests, and three more simhca ports (H1..H3),
# each with an IPoIB interface in its own network namespace (IPv4 and IPv6). Checks:
#   every pair pings, v4 and v6; localsad (one per port) answered the PathRecords (nl_answered);
#     the first round reaches OpenSM at most once per node and neighbour;
#   the broadcast group's join reached the master: its members are the three ports;
#   OpenSM runs the routing epoch plugin (LOCALSA_VM_EPOCH_PLUGIN, default the build's) and each
#     localsad trusts the epoch;
#   a repeated round (interfaces down and up, so IPoIB asks its paths again) is answered by
#     localsad and reaches OpenSM zero times;
#   a neighbour storm (all interfaces down/up, neighbour tables flushed, every interface pings
#     every other at once): OpenSM's PathRecord count with localsa and without (localsad killed),
#     printed as a table (a measurement: only "without localsa it reaches OpenSM" is checked).
# Usage: tests/vm/ipoib.test.sh 6.1|6.12
# vm-lines: 6.1 6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    # OpenSM with the routing epoch plugin, as deployed: localsad keeps its answers until the
    # epoch changes (without it the TTL rules renew what is in use, and a slow round sees it).
    export LOCALSA_VM_EPOCH_PLUGIN=${LOCALSA_VM_EPOCH_PLUGIN:-${LOCALSA_BUILD:-$PWD/build}/userspace/liblocalsaepoch.so}
    LOCALSA_VM_COUNT_SA=1 exec bash scripts/vm run --kernel "$LINE" --stock --sm H0 \
        --hca H1 --hca H2 --hca H3 --timeout "${LOCALSA_VM_TIMEOUT:-840}" \
        -- bash tests/vm/ipoib.test.sh --guest
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"
# shellcheck source=tests/vm/lib/ipoib.sh
. "$(dirname "$0")/lib/ipoib.sh"

section "localsad on simhca1..3, netlink"
for n in $NODES; do start_localsad "$n"; done
all_listening() { local n; for n in $NODES; do [[ $(stat_of "$n" nl_listening) == true ]] || return 1; done; }
check "the three localsad listen on RDMA_NL_GROUP_LS" wait_until 60 all_listening
check "... and hold their preload tables" wait_until 120 all_preloaded
check "OpenSM loaded the routing epoch plugin" grep -q "localsa routing epoch plugin loaded" "$VM_FABRIC_DIR/opensm.log"
for n in $NODES; do
    check "localsad on simhca$n keeps its answers on the master's routing epoch" wait_until 30 epoch_trusted "$n"
done

section "ib_ipoib"
check "stock ib_core: no sa_redirect parameter" test ! -e /sys/module/ib_core/parameters/sa_redirect
check "modprobe ib_ipoib" modprobe ib_ipoib
check "IPoIB interfaces of simhca1..3 appear" wait_until 30 all_ifaces
sa_start=$(osm_pr)
nl0=$(nl_total)
up0=$(sum_stat upstream_requests)
setup_netns
check "carrier on the three interfaces" wait_until 60 all_carrier
for n in $NODES; do echo "     node $n: ${IFACE[$n]} in ns ipoib$n, ${GID[$n]}, LID $(port_lid "$n")"; done

section "every pair pings (first round)"
t0=$SECONDS
ping_round
echo "     first round: $((SECONDS - t0)) s"
sa_first=$(($(osm_pr) - sa_start))
nl_first=$(($(nl_total) - nl0))
check "localsad answered PathRecords over netlink ($nl_first)" test "$nl_first" -ge 1
eq "... no error replies" 0 "$(nl_errors_total)"
check "OpenSM saw at most one PathRecord per node and neighbour ($sa_first <= 6)" test "$sa_first" -le 6
echo "     first round: localsad answered $nl_first, OpenSM's PathRecords +$sa_first, localsad's upstream requests +$(($(sum_stat upstream_requests) - up0))"

section "the broadcast group at the master"
members=$(members_at_master ff12:401b:ffff::ffff:ffff)
for n in $NODES; do
    check "port GID of simhca$n is a member (the node joined)" grep -qx "${GID[$n]}" <<<"$members"
done

section "a repeated round"
bounce_all
check "carrier again" wait_until 60 all_carrier
sa0=$(osm_pr)
nl1=$(nl_total)
ne1=$(sum_stat nl_errors)
nt1=$(sum_stat nl_timeouts)
up1=$(sum_stat upstream_requests)
ping_round
nl_rep=$(($(nl_total) - nl1))
echo "     repeated round: localsad answered $nl_rep, error replies +$(($(sum_stat nl_errors) - ne1)) (timeouts +$(($(sum_stat nl_timeouts) - nt1))), its own upstream requests +$(($(sum_stat upstream_requests) - up1)), OpenSM's PathRecords +$(($(osm_pr) - sa0))"
check "IPoIB asked its paths again, localsad answered ($nl_rep)" test "$nl_rep" -ge 1
eq "the repeated round reached OpenSM zero times (its PathRecord count)" "$sa0" "$(osm_pr)"

section "neighbour storm"
ne1=$(sum_stat nl_errors)
up1=$(sum_stat upstream_requests)
storm
storm_with=$STORM
failed_with=$STORM_FAILED
echo "     storm with localsa: error replies +$(($(sum_stat nl_errors) - ne1)), localsad's own upstream requests +$(($(sum_stat upstream_requests) - up1))"
kill_localsads
storm
storm_without=$STORM
failed_without=$STORM_FAILED
echo "     neighbour storm, OpenSM's PathRecord count:"
echo "       | run | OpenSM PathRecords | pings unanswered (of 12) |"
echo "       |---|---|---|"
echo "       | with localsa (netlink) | $storm_with | $failed_with |"
echo "       | without localsa | $storm_without | $failed_without |"
check "without localsa the storm reaches OpenSM ($storm_without >= 1)" test "$storm_without" -ge 1

section "simhca counters"
for n in $NODES; do
    echo "     simhca$n: $(hw_counters "$n")"
done
check "no datagram dropped for a P_Key or Q_Key mismatch" no_key_drops
check "no kernel warning" bash -c '! dmesg | grep -E "WARNING:|BUG:|Oops|timing out"'
((VM_FAILS)) && { echo "--- localsad logs"; tail -n 15 /tmp/localsad-*.log; dmesg | grep -i ipoib | tail -20; }
finish
