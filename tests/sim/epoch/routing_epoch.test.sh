#!/usr/bin/env bash
# sim tier: the routing epoch end to end (userspace/opensm/localsa_epoch.c, docs/localsad.md,
# "Routing epoch"). The real OpenSM on a 16-host ibsim fat tree, localsad on H1 with a short
# TTL (5 s) and the preload (--sim-preload: partitions keep every table within one MAD, as in
# tests/sim/coherence/preload.test.sh).
#   1. OpenSM loads liblocalsaepoch.so:
#      (a) localsad's stats show the epoch, learnt from the plugin's ServiceRecord, equal to
#          ServiceData64[0] of that ServiceRecord read at the master and to OpenSM's own log;
#      (b) three paths used every second for more than three TTLs: OpenSM receives no
#          PathRecord request at all in that window (counted in OpenSM's own log,
#          `scripts/fabric sa-count`);
#      (c) a leaf-to-spine link unlinked in ibsim: OpenSM re-routes and publishes a new epoch;
#          localsad reports it (from the plugin's Report) within a bound, renews what is in use,
#          and its answers afterwards equal the master's byte for byte.
#   2. OpenSM without the plugin (LOCALSA_EPOCH_PLUGIN=0):
#      (d) localsad reports no epoch source and keeps the TTL rules: over the same window, with
#          the same use, OpenSM receives PathRecord requests again (refreshes, table renewals).
# Prints the measured numbers ("# ..."). Not checkable here: ServiceData64[1] (the SM port GUID)
# lies at bytes 224-231 of the SA MAD, past the 224 bytes umad2sim delivers intact
# (docs/fabric.md), so localsad reads it as garbage from the ServiceRecord under ibsim (the
# Report carries it intact); the epoch itself (bytes 216-223) is intact.
# Usage: routing_epoch.test.sh BUILD_BIN_DIR [LIBLOCALSAEPOCH_SO]
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
PLUGIN=${2:-$BIN/../userspace/liblocalsaepoch.so}
if [[ ! -f $PLUGIN ]]; then
    echo "SKIP - OpenSM plugin not built ($PLUGIN; needs libopensm-dev)"
    exit 77
fi
PLUGIN=$(cd "$(dirname "$PLUGIN")" && pwd)/$(basename "$PLUGIN")
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"

TTL_S=5
WINDOW_S=16 # more than three TTLs
SERVICE_ID=100000004c534145
# Port GUIDs of a generated tree: host Hn has port GUID 0x100001 + 2n (scripts/fabric help).
PARTS=$(mktemp /tmp/localsa-partitions.XXXXXX)
cat >"$PARTS" <<'PARTITIONS'
Default=0x7fff : ALL=limited, SELF=full ;
PartA=0x8001 : 0x0000000000100003=full, 0x0000000000100005=full, 0x000000000010000b=full ;
PARTITIONS
OWN_GID=fe80::10:3 # H1
E_VALUE='' E_SOURCE='' E_TRUSTED='' E_CHANGES='' E_LOST='' E_GUID='' REFRESHES='' STALE='' PRELOAD='' # snap

now_ms() { echo $(($(date +%s%N) / 1000000)); }
sa_count() { "$FABRIC" sa-count --dir "$WORK/fabric"; }
# snap: localsad's stats read once (python's start is slow on a loaded machine) into E_VALUE,
# E_SOURCE, E_TRUSTED, E_CHANGES, E_LOST, E_GUID (routing_epoch), REFRESHES, STALE, PRELOAD.
snap() {
    eval "$(ctl stats | python3 -c '
import json, shlex, sys
j = json.load(sys.stdin); e = j["routing_epoch"]
for k, v in (("E_VALUE", e["value"]), ("E_SOURCE", e["source"]), ("E_TRUSTED", e["trusted"]),
             ("E_CHANGES", e["changes"]), ("E_LOST", e.get("lost", "")),
             ("E_GUID", hex(e["sm_port_guid"])),
             ("REFRESHES", j["refreshes"]), ("STALE", j["stale_served"]),
             ("PRELOAD", j["preload_state"])):
    print(f"{k}={shlex.quote(str(v))}")')"
}
# the epoch's value alone, without python (the stats are pretty-printed, keys sorted)
epoch_value() { ctl stats | awk '/"routing_epoch": \{/ { f = 1 } f && /"value":/ { gsub(/[^0-9]/, ""); print; exit }'; }
# log_ms FILE REGEX: epoch ms of the first line of localsad's log matching REGEX
log_ms() {
    local line
    line=$(grep -m1 -E -- "$2" "$1" | cut -c1-23) || return 1
    [[ -n $line ]] && echo $(($(date -d "$line" +%s%N) / 1000000))
}
# osm_ms REGEX: epoch ms of the last line of OpenSM's log matching REGEX ("Dec 05 07:24:02 275479")
osm_ms() {
    local line
    line=$(grep -E -- "$1" "$FABRIC_OSM_LOG" | tail -1 | cut -c1-22)
    [[ -n $line ]] && echo $(($(date -d "${line:0:15}" +%s) * 1000 + 10#${line:16:6} / 1000))
}
# The answer with its TID masked and cut to the 224 bytes umad2sim delivers intact (as
# tests/sim/localsad/localsad.test.sh compares them).
raw() { q "$@" --raw --timeout-ms 1500 | sed -n 's/^raw=//p' | cut -c1-448 |
    sed -E 's/^(.{16}).{16}/\1XXXXXXXXXXXXXXXX/'; }
# ServiceData64[0] of the epoch's ServiceRecord at the master (SA data at 56, ServiceData64 at
# 160 of the record: MAD bytes 216-223), as an unsigned decimal.
sr_epoch() {
    local hex
    hex=$(q sa --attr 0x31 --comp-mask 1 --data "$SERVICE_ID" --lid "$SM_LID" --raw \
        --timeout-ms 1500 | sed -n 's/^raw=//p' | cut -c433-448)
    [[ -n $hex ]] && python3 -c "print(int('$hex', 16))"
}
# Paths H1 uses: to the SM (PKey 0xffff, answered from the preload), to H2 in PartA (0x8001,
# from the preload), to H5 with no PKey (a Get read through once, then cached).
SHAPES=(
    "pr --sgid $OWN_GID --dgid fe80::10:1 --pkey 0xffff --reversible 1 --numb-path 1"
    "pr --sgid $OWN_GID --dgid fe80::10:5 --pkey 0x8001 --reversible 1 --numb-path 1"
    "pr --sgid $OWN_GID --dgid fe80::10:b"
)
use_paths() { # one round through localsad; prints how many were answered OK
    local ok=0 s args
    for s in "${SHAPES[@]}"; do
        read -ra args <<<"$s"
        [[ $(q "${args[@]}" --lid "$OWN_LID" --timeout-ms 1500 2>/dev/null |
            sed -n 's/^status=//p') == OK ]] && ok=$((ok + 1))
    done
    echo "$ok"
}
# window: use the paths every second for WINDOW_S; sets w_count (PathRecords at OpenSM),
# w_rounds and w_bad (rounds not all answered)
window() {
    local c0 t0
    c0=$(sa_count)
    t0=$(now_ms)
    w_rounds=0 w_bad=0
    while (($(now_ms) - t0 < WINDOW_S * 1000)); do
        [[ $(use_paths) == "${#SHAPES[@]}" ]] || w_bad=$((w_bad + 1))
        w_rounds=$((w_rounds + 1))
        sleep 1
    done
    w_count=$(($(sa_count) - c0))
}
# up: a fabric (the plugin as $LOCALSA_EPOCH_PLUGIN says) and localsad with the preload done
up() {
    start_fabric "$1" --partitions "$PARTS"
    SM_LID=$FABRIC_SM_LID
    OWN_LID=$("$FABRIC" lid --dir "$WORK/fabric" H1)
    start_localsad --sim-preload --spread-ms 500 --path-ttl-s "$TTL_S" --negative-ttl-ms 0
    check "localsad starts" test -S "$CTL"
    for _ in $(seq 50); do
        snap
        [[ $PRELOAD == "done" && ($E_SOURCE != none || -n $E_LOST) ]] && break
        sleep 0.1
    done
    check "the preload is done ($PRELOAD)" test "$PRELOAD" = "done"
}

# ===== 1. with the plugin ===================================================================
export LOCALSA_EPOCH_PLUGIN=$PLUGIN
up routing-epoch
check "OpenSM loaded the plugin" grep -q "localsa routing epoch plugin loaded" "$FABRIC_OSM_LOG"

# --- (a) the epoch at localsad is the master's ----------------------------------------------
snap
value=$E_VALUE
source=$E_SOURCE
at_master=$(sr_epoch)
logged=$(sed -n 's/.*localsa routing epoch \([0-9]*\)$/\1/p' "$FABRIC_OSM_LOG" | tail -1)
echo "# routing epoch: localsad $value ($source), ServiceRecord at the master $at_master, OpenSM log $logged"
check "localsad's epoch comes from the plugin's ServiceRecord ($source)" test "$source" = service-record
check "... and is trusted" test "$E_TRUSTED" = True
check "... equal to ServiceData64[0] at the master and to OpenSM's log" \
    test -n "$value" -a "$value" != 0 -a "$value" = "$at_master" -a "$value" = "$logged"

# --- (b) nothing changes for more than three TTLs: OpenSM is asked nothing -----------------
first=$(use_paths) # the Get without PKey reads through once; the others come from the preload
check "the paths are answered through localsad ($first of ${#SHAPES[@]})" test "$first" = "${#SHAPES[@]}"
sleep 0.5
snap
refreshes=$REFRESHES
window
with_plugin=$w_count
snap
echo "# with the plugin: $with_plugin PathRecord requests at OpenSM in ${WINDOW_S} s (TTL ${TTL_S} s, $w_rounds rounds of ${#SHAPES[@]} paths through localsad)"
check "every round answered ($w_bad of $w_rounds not)" test "$w_bad" = 0
check "no PathRecord request reached OpenSM in ${WINDOW_S} s, > 3 TTLs ($with_plugin)" test "$with_plugin" = 0
check "... nothing refreshed ($((REFRESHES - refreshes)))" test "$REFRESHES" = "$refreshes"
check "... the epoch unchanged" test "$E_VALUE" = "$value"

# --- (c) a routing change ---------------------------------------------------------------
# L0 carries H0-H3; its port 5 goes to the spine S0. Unlinked, OpenSM re-routes (LFTs change).
changes=$E_CHANGES
c0=$(sa_count)
t0=$(now_ms)
"$FABRIC" cmd --dir "$WORK/fabric" 'Unlink "L0"[5]' >/dev/null
t_polled=
while (($(now_ms) - t0 < 10000)); do
    [[ $(epoch_value) != "$value" ]] && { t_polled=$(now_ms); break; }
    sleep 0.05
done
# From the logs (the polling above is slow on a loaded machine): OpenSM's first publish after
# the Unlink, localsad's first new epoch.
t_pub=$(osm_ms "publish: localsa routing epoch $((value + 1))\$")
t_seen=$(log_ms "$WORK/localsad.log" "routing epoch [0-9]+ .*renewing")
delay=$((${t_seen:-0} - t0))
echo "# Unlink \"L0\"[5] -> new epoch published by OpenSM +$((${t_pub:-0} - t0)) ms, in localsad's log +${delay} ms, seen in its stats +$((${t_polled:-0} - t0)) ms"
check "a new epoch reaches localsad within 3 s of the change (${delay} ms by its log)" \
    test -n "$t_polled" -a -n "$t_seen" -a "$delay" -le 3000
snap
check "... learnt from the plugin's Report ($E_SOURCE)" test "$E_SOURCE" = report
# H0's port GUID (0x100001 + 2n): the Report carries it intact (the ServiceRecord's copy is
# past umad2sim's 224 bytes)
check "... which names the SM port ($E_GUID)" test "$E_GUID" = 0x100001
sleep 1.5 # the renewal window after a change (1 s for this small cache) and the answers
snap
at_master=$(sr_epoch)
echo "# epoch after the change: localsad $E_VALUE, ServiceRecord at the master $at_master ($E_CHANGES changes)"
check "the epoch at localsad equals the master's again" test -n "$E_VALUE" -a "$E_VALUE" = "$at_master"
check "... and is counted as a change" test "$E_CHANGES" -gt "$changes"
renewed=$(($(sa_count) - c0))
echo "# PathRecord requests at OpenSM for the renewal after the change: $renewed"
check "what is in use was asked again after the change ($renewed)" test "$renewed" -ge 1
for s in "${SHAPES[@]}"; do
    read -ra args <<<"$s"
    master=$(raw "${args[@]}" --lid "$SM_LID")
    local_sa=$(raw "${args[@]}" --lid "$OWN_LID")
    check "after the change, ${args[*]:1}: localsad's answer equals the master's" \
        test -n "$master" -a "$master" = "$local_sa"
done
snap
check "nothing stale was served" test "$STALE" = 0
check "localsad is still running" kill -0 "$DAEMON_PID"

# ===== 2. without the plugin ================================================================
cleanup
DAEMON_PID=
export LOCALSA_EPOCH_PLUGIN=0
up routing-epoch-off
rm -f "$PARTS" # copied into the fabric's directory
check "OpenSM runs without the plugin" bash -c "! grep -q 'localsa routing epoch' '$FABRIC_OSM_LOG'"

# --- (d) no epoch source: the TTL rules ------------------------------------------------------
echo "# routing epoch without the plugin: source $E_SOURCE, lost '$E_LOST'"
check "localsad reports no epoch source ($E_SOURCE)" test "$E_SOURCE" = none
check "... not trusted, value 0" test "$E_TRUSTED" = False -a "$E_VALUE" = 0
check "... because the master has none" test "$E_LOST" = "no routing epoch at the master"
first=$(use_paths)
check "the paths are answered through localsad ($first of ${#SHAPES[@]})" test "$first" = "${#SHAPES[@]}"
sleep 0.5
snap
refreshes=$REFRESHES
window
without_plugin=$w_count
snap
echo "# without the plugin: $without_plugin PathRecord requests at OpenSM in ${WINDOW_S} s (TTL ${TTL_S} s, $w_rounds rounds; with it: $with_plugin)"
check "every round answered ($w_bad of $w_rounds not)" test "$w_bad" = 0
check "localsad asks OpenSM again after the TTL ($without_plugin PathRecord requests)" \
    test "$without_plugin" -ge 2
check "... refreshing what is used ($((REFRESHES - refreshes)) refreshes)" \
    test "$REFRESHES" -gt "$refreshes"
check "localsad is still running" kill -0 "$DAEMON_PID"
summary
