# shellcheck shell=bash
# Helpers of tests/vm/ipoib*.test.sh (guest side): IPoIB interfaces of simhca1..3, each in its
# own network namespace ipoibN with 10.77.0.N/24 and fd77::N/64, and one localsad per port.
# Needs vm-checks.sh.

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
NODES="1 2 3"
declare -A IFACE GID DAEMON
STORM_FAILED=0
cd /tmp || exit 1

section() { echo "--- $* (guest time ${SECONDS} s)"; }
v4() { echo "10.77.0.$1"; }
v6() { echo "fd77::$1"; }
# norm_gid GID: RFC 5952 text (what saquery prints), in bash: python is slow to start under TCG
norm_gid() {
    local IFS=: g i best=-1 bestlen=0 run=-1 len=0 out=""
    # expand a "::" first, then strip leading zeros
    local x=$1
    if [[ $x == *::* ]]; then
        local head=${x%%::*} tail=${x##*::} n fill=""
        local -a h t
        read -ra h <<<"$head"
        read -ra t <<<"$tail"
        n=$((8 - ${#h[@]} - ${#t[@]}))
        for ((i = 0; i < n; i++)); do fill+="0:"; done
        x="${head:+$head:}$fill$tail"
        x=${x%:}
    fi
    read -ra g <<<"$x"
    for ((i = 0; i < 8; i++)); do
        g[i]=$(printf '%x' "0x${g[i]:-0}")
        if [[ ${g[i]} == 0 ]]; then
            ((run < 0)) && run=$i len=0
            len=$((len + 1))
            ((len > bestlen)) && best=$run bestlen=$len
        else
            run=-1
        fi
    done
    ((bestlen < 2)) && best=-1
    for ((i = 0; i < 8; i++)); do
        if ((i == best)); then
            out+="::"
            i=$((i + bestlen - 1))
            continue
        fi
        [[ $out == "" || $out == *:: ]] || out+=":"
        out+=${g[i]}
    done
    echo "$out"
}

# localsad serving simhcaN, default control socket (the instances see each other's queries)
start_localsad() {
    "$BIN/localsad" --foreground --ca "simhca$1" --spread-ms 1000 >>"/tmp/localsad-$1.log" 2>&1 &
    DAEMON[$1]=$!
}
kill_localsads() {
    local n
    for n in "${!DAEMON[@]}"; do
        kill -9 "${DAEMON[$n]}" 2>/dev/null
        wait "${DAEMON[$n]}" 2>/dev/null
    done
    DAEMON=()
}
trap 'kill_localsads; wait 2>/dev/null || true' EXIT
stat_of() { timeout 10 "$BIN/localsactl" -C "simhca$1" -j stats 2>/dev/null |
    sed -n "s/^ *\"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n 1; }
# sum_stat NAME: the sum over the three localsad (a stat that does not answer counts 0)
sum_stat() { local n v s=0; for n in $NODES; do v=$(stat_of "$n" "$1"); s=$((s + ${v:-0})); done; echo $s; }
nl_total() { sum_stat nl_answered; }
nl_errors_total() { sum_stat nl_errors; }
# every localsad has its preload table (its own GetTable reached the master before we count)
all_preloaded() { local n v; for n in $NODES; do v=$(stat_of "$n" preloaded_paths); ((${v:-0} > 0)) || return 1; done; }
# epoch_trusted N: localsad on simhcaN has the master's routing epoch (source not "none")
epoch_trusted() {
    timeout 10 "$BIN/localsactl" -C "simhca$1" -j stats 2>/dev/null | python3 -c '
import json, sys
e = json.load(sys.stdin).get("routing_epoch", {})
sys.exit(0 if e.get("source") not in (None, "none", "disabled") and "lost" not in e else 1)'
}
osm_pr() { grep -c 'Posting Dispatcher message OSM_MSG_MAD_PATH_RECORD$' "$VM_FABRIC_DIR/opensm.log"; }

# IFACE[N], GID[N]: the IPoIB netdev of simhcaN (its hardware address ends with the port GID)
find_ifaces() {
    local n g d a
    for n in $NODES; do
        g=$(tr -d ':' <"/sys/class/infiniband/simhca$n/ports/1/gids/0")
        # shellcheck disable=SC2034 # read by the tests
        GID[$n]=$(norm_gid "$(cat "/sys/class/infiniband/simhca$n/ports/1/gids/0")")
        for d in /sys/class/net/ib*; do
            [[ -e $d ]] || continue
            a=$(tr -d ':' <"$d/address")
            [[ ${a: -32} == "$g" ]] && IFACE[$n]=${d##*/}
        done
    done
}
all_ifaces() { find_ifaces; [[ -n ${IFACE[1]:-} && -n ${IFACE[2]:-} && -n ${IFACE[3]:-} ]]; }

setup_netns() {
    local n
    for n in $NODES; do
        ip netns add "ipoib$n"
        check "${IFACE[$n]} moves into ns ipoib$n" ip link set "${IFACE[$n]}" netns "ipoib$n"
        ip -n "ipoib$n" link set lo up
        # the IPv6 address survives the bounces (by default a link down removes it)
        ip netns exec "ipoib$n" sysctl -qw "net.ipv6.conf.${IFACE[$n]}.keep_addr_on_down=1"
        ip -n "ipoib$n" addr add "$(v4 "$n")/24" dev "${IFACE[$n]}"
        ip -n "ipoib$n" addr add "$(v6 "$n")/64" dev "${IFACE[$n]}" nodad
        check "${IFACE[$n]} up" ip -n "ipoib$n" link set "${IFACE[$n]}" up
    done
}
carrier() { ip -n "ipoib$1" -o link show "${IFACE[$1]}" | grep -q LOWER_UP; }
all_carrier() { local n; for n in $NODES; do carrier "$n" || return 1; done; }
bounce() {
    ip -n "ipoib$1" link set "${IFACE[$1]}" down
    ip -n "ipoib$1" neigh flush all >/dev/null 2>&1
    ip -n "ipoib$1" link set "${IFACE[$1]}" up
}
bounce_all() { local n; for n in $NODES; do bounce "$n"; done; }
# ping4/ping6 FROM TO
ping4() { ip netns exec "ipoib$1" ping -q -c 1 -w 15 "$(v4 "$2")" >/dev/null 2>&1; }
ping6() { ip netns exec "ipoib$1" ping -6 -q -c 1 -w 15 "$(v6 "$2")" >/dev/null 2>&1; }
ping_round() {
    local i j
    for i in $NODES; do
        for j in $NODES; do
            ((i == j)) && continue
            check "ipoib$i -> $(v4 "$j")" ping4 "$i" "$j"
            check "ipoib$i -> $(v6 "$j")" ping6 "$i" "$j"
        done
    done
}
# storm: paths and neighbours forgotten, then every interface pings every other at once;
# STORM = OpenSM's PathRecords during it
storm() {
    local i j sa0 pids=() bad=0 p
    bounce_all
    wait_until 60 all_carrier || fail "storm: carrier"
    sa0=$(osm_pr)
    for i in $NODES; do
        for j in $NODES; do
            ((i == j)) && continue
            ping4 "$i" "$j" &
            pids+=($!)
            ping6 "$i" "$j" &
            pids+=($!)
        done
    done
    for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
    # a measurement, not a check: under TCG some of the 12 pings (one try each, 15 s) can go
    # unanswered in a storm; the count is printed with the table
    # shellcheck disable=SC2034 # read by the tests
    STORM_FAILED=$bad
    # shellcheck disable=SC2034 # read by the tests
    STORM=$(($(osm_pr) - sa0))
}
# member port GIDs of MGID at the master (trusted requester: OpenSM's default SA key)
members_at_master() {
    local g
    timeout 10 saquery --smkey 1 -C simhca1 MCMR --mgid "$1" 2>/dev/null |
        sed -n 's/^[[:space:]]*PortGid[.]*\(.*\)$/\1/p' |
        while read -r g; do norm_gid "$g"; done
}
hw_counters() {
    local f out=""
    for f in /sys/class/infiniband/simhca"$1"/ports/1/hw_counters/*; do
        [[ ${f##*/} == lifespan ]] && continue
        out+="${f##*/}=$(cat "$f") "
    done
    echo "$out"
}
no_key_drops() {
    local n f
    for n in $NODES; do
        for f in ud_drop_pkey ud_drop_qkey; do
            (($(cat "/sys/class/infiniband/simhca$n/ports/1/hw_counters/$f") == 0)) || return 1
        done
    done
}
