# shellcheck shell=bash
# Guest side of `scripts/vm run`: ibsim, one simhca-relay per simhca device and OpenSM on
# simhca0 through the real /dev/infiniband/umad0 and issm0. Sourced by `scripts/vm __guest`
# (inside the VM) with VM_NET, VM_SM, VM_HCAS and VM_ROOT set. Exports VM_FABRIC_DIR.

VM_FABRIC_DIR=/tmp/vm-fabric
export VM_FABRIC_DIR
FABRIC_PIDS=()

fabric_log() { echo "vm-fabric: $*" >&2; }

fabric_relay_bin() {
    local b
    for b in "${LOCALSA_BUILD:-}/bin/simhca-relay" "$VM_ROOT/build/bin/simhca-relay"; do
        [[ -x "$b" ]] && { echo "$b"; return 0; }
    done
    return 1
}

# wait_for SECONDS COMMAND...: poll every 0.2 s
fabric_wait() {
    local limit=$1 t0=$SECONDS
    shift
    until "$@"; do
        ((SECONDS - t0 < limit)) || return 1
        sleep 0.2
    done
}

fabric_ports_active() {
    local i
    for ((i = 0; i < VM_NDEV; i++)); do
        grep -q ACTIVE "/sys/class/infiniband/simhca$i/ports/1/state" || return 1
    done
}

# the SA answers (OpenSM serves queries once its first sweep as master is done)
fabric_sa_ready() { saquery -C simhca0 -P 1 -c >/dev/null 2>&1; }

fabric_sm_master() { grep -q "Entering MASTER state" "$VM_FABRIC_DIR/opensm.log" 2>/dev/null; }

fabric_start() {
    local relay net t0=$SECONDS i
    mkdir -p "$VM_FABRIC_DIR/osm"
    relay=$(fabric_relay_bin) || { fabric_log "no simhca-relay (build it; LOCALSA_BUILD)"; return 1; }
    VM_SM=${VM_SM:-H0}
    ((${#VM_HCAS[@]})) || VM_HCAS=(H1)
    VM_NDEV=$((1 + ${#VM_HCAS[@]}))
    export VM_SM VM_NDEV
    net="$VM_FABRIC_DIR/net"
    if [[ -n "$VM_NET" ]]; then
        cp "$VM_NET" "$net"
    else
        bash "$VM_ROOT/scripts/fabric" gen --hosts 8 >"$net" || return 1
    fi

    # LOCALSA_VM_DGRAM_QLEN: ibsim's datagram queues (net.unix.max_dgram_qlen, 10 by default,
    # read when a socket is created). Heavy SA traffic (hundreds of MADs in flight) fills 10 and
    # ibsim then spins on a send and the fabric freezes, as scripts/fabric up notes for the host.
    [[ -z ${LOCALSA_VM_DGRAM_QLEN:-} ]] || sysctl -qw net.unix.max_dgram_qlen="$LOCALSA_VM_DGRAM_QLEN"
    # ibsim with its console on a FIFO held open read-write (never EOF)
    mkfifo "$VM_FABRIC_DIR/ibsim.in"
    exec {FABRIC_CONSOLE_FD}<>"$VM_FABRIC_DIR/ibsim.in"
    ibsim -s "$net" <&"$FABRIC_CONSOLE_FD" >"$VM_FABRIC_DIR/ibsim.log" 2>&1 &
    FABRIC_PIDS+=($!)

    modprobe simhca ndev="$VM_NDEV" || return 1
    local nodes=("$VM_SM" "${VM_HCAS[@]}") relay_extra=()
    # extra simhca-relay options for every relay, e.g. loss injection (--drop-rate-file F)
    read -ra relay_extra <<<"${LOCALSA_RELAY_ARGS:-}"
    for ((i = 0; i < VM_NDEV; i++)); do
        "$relay" --device "/dev/simhca$i" --node "${nodes[$i]}" "${relay_extra[@]}" \
            --counters-file "$VM_FABRIC_DIR/relay-$i.counters" \
            --log-level "${LOCALSA_RELAY_LOG:-${VM_RELAY_LOG:-info}}" >"$VM_FABRIC_DIR/relay-$i.log" 2>&1 &
        FABRIC_PIDS+=($!)
    done
    fabric_wait 30 grep -q "attached to ibsim" "$VM_FABRIC_DIR/relay-$((VM_NDEV - 1)).log" ||
        { fabric_log "relays did not attach"; tail -n 5 "$VM_FABRIC_DIR"/relay-*.log "$VM_FABRIC_DIR/ibsim.log" >&2; return 1; }

    # LOCALSA_VM_COUNT_SA=1: OpenSM logs every SA request it dispatches (counted from opensm.log), as
    # scripts/fabric up --count-sa does: DEBUG for the SA MAD controller only.
    # LOCALSA_VM_EPOCH_PLUGIN=PATH: OpenSM loads the routing epoch plugin as a site running
    # localsad configures it (event_plugin_name; OpenSM dlopens lib<name>.so by name).
    local osm_conf=() osm_ld_path=${LD_LIBRARY_PATH:-}
    : >"$VM_FABRIC_DIR/opensm.conf"
    if [[ ${LOCALSA_VM_COUNT_SA:-} == 1 ]]; then
        echo "osm_sa_mad_ctrl.c 0x0F" >"$VM_FABRIC_DIR/per-module-logging.conf"
        printf 'per_module_logging_file %s\nforce_log_flush TRUE\n' \
            "$VM_FABRIC_DIR/per-module-logging.conf" >>"$VM_FABRIC_DIR/opensm.conf"
        osm_conf=(-F "$VM_FABRIC_DIR/opensm.conf")
    fi
    if [[ -n ${LOCALSA_VM_EPOCH_PLUGIN:-} ]]; then
        [[ -f $LOCALSA_VM_EPOCH_PLUGIN ]] ||
            { fabric_log "no routing epoch plugin at $LOCALSA_VM_EPOCH_PLUGIN"; return 1; }
        echo "event_plugin_name localsaepoch" >>"$VM_FABRIC_DIR/opensm.conf"
        osm_ld_path=$(dirname "$LOCALSA_VM_EPOCH_PLUGIN")${osm_ld_path:+:$osm_ld_path}
        osm_conf=(-F "$VM_FABRIC_DIR/opensm.conf")
    fi
    local guid
    guid=$(sed 's/^.*:\(....:....:....:....\)$/\1/; s/://g' /sys/class/infiniband/simhca0/ports/1/gids/0)
    LD_LIBRARY_PATH=$osm_ld_path OSM_TMP_DIR="$VM_FABRIC_DIR/osm" OSM_CACHE_DIR="$VM_FABRIC_DIR/osm" \
        opensm "${osm_conf[@]}" -g "0x$guid" -f "$VM_FABRIC_DIR/opensm.log" ${VM_OPENSM_ARGS:-} ${LOCALSA_VM_OPENSM_ARGS:-} \
        >"$VM_FABRIC_DIR/opensm.out" 2>&1 &
    VM_OPENSM_PID=$!
    export VM_OPENSM_PID
    FABRIC_PIDS+=($!)
    # LOCALSA_VM_SUBNET_WAIT_S: a bigger --net (hundreds of hosts) sweeps for minutes under TCG
    local wait_s=${LOCALSA_VM_SUBNET_WAIT_S:-60}
    if ! fabric_wait $((wait_s * 3 / 2)) fabric_sm_master || ! fabric_wait "$wait_s" fabric_ports_active ||
        ! fabric_wait "$wait_s" fabric_sa_ready; then
        fabric_log "the subnet did not come up in $((SECONDS - t0)) s"
        tail -n 20 "$VM_FABRIC_DIR/opensm.log" >&2
        tail -n 5 "$VM_FABRIC_DIR"/relay-*.log >&2
        return 1
    fi
    fabric_log "subnet up in $((SECONDS - t0)) s (OpenSM on $VM_SM, simhca1.. on ${VM_HCAS[*]})"
}

# ibsim console command, e.g. fabric_console 'Baselid "H1"[1] 20'
fabric_console() { echo "$*" >"$VM_FABRIC_DIR/ibsim.in"; }

fabric_stop() {
    local p
    for ((p = ${#FABRIC_PIDS[@]} - 1; p >= 0; p--)); do
        kill "${FABRIC_PIDS[$p]}" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
