#!/usr/bin/env bash
# sim tier: SIGHUP reloads localsad's --config file without dropping the cache; a changed value
# takes effect, a value that only applies at start is reported and kept, a bad file is logged
# and the running configuration stays. localsad runs with --user nobody: after dropping root
# it still polls the port, answers, and reads its configuration file.
# Usage: reload.test.sh BUILD_BIN_DIR
set -uo pipefail

BIN=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/build/bin}
# shellcheck source=tests/sim/lib/localsad-fabric.sh
. "$(dirname "$0")/../lib/localsad-fabric.sh"
start_fabric reload
chmod 755 "$WORK" # nobody reads umad2sim's fake sysfs and the configuration in here
SM_LID=$FABRIC_SM_LID
mapfile -t LIDS < <("$FABRIC" lid --dir "$WORK/fabric" --all | awk '{print $2}')
OWN_LID=${LIDS[1]}
CONF=$WORK/localsad.conf
printf 'log-level = info\nnegative-ttl-ms = 600000\nport-poll-ms = 200\n' >"$CONF"
chmod 644 "$CONF"
fabric_client_start --dir "$WORK/fabric" --name "localsad on H1" --ready-file "$CTL" --timeout 10 \
    --output "$WORK/localsad.log" -- "$FABRIC" run --dir "$WORK/fabric" --node H1 --no-retry -- \
    "$BIN/localsad" --foreground --control "$CTL" --config "$CONF" --user nobody \
    --state-dir "$WORK/state"
DAEMON_PID=$FABRIC_CLIENT_PID
check "localsad starts" test -S "$CTL"
eq() { check "$1 ($2 = $3)" test "$2" = "$3"; }
eq "runs as nobody" 65534 "$(awk '$1 == "Uid:" {print $3}' "/proc/$DAEMON_PID/status")"
eq "... without capabilities" 0000000000000000 "$(awk '$1 == "CapEff:" {print $2}' "/proc/$DAEMON_PID/status")"

OWN_GID=$(ctl stats | python3 -c "import json,sys; print(json.load(sys.stdin)['port']['gid'])")
for i in 2 3 5 8 13; do q pr --sgid "$OWN_GID" --dlid "${LIDS[$i]}" --lid "$OWN_LID" >/dev/null; done
q pr --sgid "$OWN_GID" --dgid fe80::dead:beef --lid "$OWN_LID" >/dev/null
entries=$(stats_of cache_entries)
eq "six answers cached (five paths, one NO_RECORDS)" 6 "$entries"
foreign() { "$FABRIC" run --dir "$WORK/fabric" --node H2 -- "$BIN/localsactl" query pr --timeout-ms 300 \
    --sgid "$OWN_GID" --dlid "${LIDS[3]}" --lid "$OWN_LID" >/dev/null 2>&1; }
debug_lines() { grep -c 'refused: the requester is another port' "$WORK/localsad.log"; }
foreign
eq "at log level info no debug line" 0 "$(debug_lines)"

# A good reload: log level and negative TTL change, the cache stays.
printf 'log-level = debug\nnegative-ttl-ms = 0\nport-poll-ms = 200\ncache-max-entries = 5\nsubscription-check-s = 30\n' >"$CONF"
kill -HUP "$DAEMON_PID"
reloaded() { grep -q "configuration $CONF reloaded" "$WORK/localsad.log"; }
for _ in $(seq 30); do reloaded && break; sleep 0.1; done
check "SIGHUP: reloaded" reloaded
check "... the log names what changed" grep -q 'SIGHUP: negative-ttl-ms: 600000 -> 0' "$WORK/localsad.log"
check "... subscription-check-s applied, not ignored" grep -q 'SIGHUP: subscription-check-s (ms): 60000 -> 30000' "$WORK/localsad.log"
check "... and what needs a restart (cache-max-entries)" \
    grep -q 'SIGHUP: cache-max-entries: 1000000 -> 5 changed but applies only at start' "$WORK/localsad.log"
check "localsad survived SIGHUP" kill -0 "$DAEMON_PID"
eq "the cache survived SIGHUP" "$entries" "$(stats_of cache_entries)"
up0=$(stats_of upstream_requests) hits0=$(stats_of pr_cache_hits)
for i in 2 3 5 8 13; do q pr --sgid "$OWN_GID" --dlid "${LIDS[$i]}" --lid "$OWN_LID" >/dev/null; done
eq "... its answers are served after SIGHUP: five hits" "$((hits0 + 5))" "$(stats_of pr_cache_hits)"
eq "... without asking the master" "$up0" "$(stats_of upstream_requests)"
foreign
eq "log level debug took effect" 1 "$(debug_lines)"
miss0=$(stats_of pr_cache_misses)
ctl flush >/dev/null
for _ in 1 2; do q pr --sgid "$OWN_GID" --dgid fe80::dead:cafe --lid "$OWN_LID" >/dev/null; done
eq "negative-ttl-ms 0 took effect: NO_RECORDS no longer remembered (2 misses)" \
    "$((miss0 + 2))" "$(stats_of pr_cache_misses)"
eq "cache-max-entries kept until restart: 5 paths still fit with the old limit" 0 "$(stats_of cache_entries)"
for i in 2 3 5 8 13 14; do q pr --sgid "$OWN_GID" --dlid "${LIDS[$i]}" --lid "$OWN_LID" >/dev/null; done
eq "... six answers cached again (limit 5 not applied)" 6 "$(stats_of cache_entries)"

# A bad reload: logged, the running configuration stays.
printf 'log-level = debug\nupstream-retries = lots\n' >"$CONF"
kill -HUP "$DAEMON_PID"
failed_reload() { grep -q "configuration $CONF not reloaded, the running configuration stays" "$WORK/localsad.log"; }
for _ in $(seq 30); do failed_reload && break; sleep 0.1; done
check "a bad configuration is logged clearly" failed_reload
check "... naming the option" grep -q "not reloaded.*upstream-retries" "$WORK/localsad.log"
check "localsad survived the bad reload" kill -0 "$DAEMON_PID"
eq "... and kept its cache" 6 "$(stats_of cache_entries)"
# What a unit's ExecReload runs first: --check-config with the same arguments, status 2.
"$BIN/localsad" --config "$CONF" --check-config >/dev/null 2>&1
eq "--check-config refuses the bad file with status 2" 2 "$?"
printf 'path-ttl-s = 0\n' >"$CONF"
"$BIN/localsad" --config "$CONF" --check-config >/dev/null 2>&1
eq "... and path-ttl-s 0 (the preload period) with status 2" 2 "$?"
printf 'upstream-retries = 99\n' >"$CONF"
kill -HUP "$DAEMON_PID"
range_error() { grep -q "not reloaded.*--upstream-retries must be between 0 and 10" "$WORK/localsad.log"; }
for _ in $(seq 30); do range_error && break; sleep 0.1; done
check "an out-of-range value is refused on reload too" range_error
rm -f "$CONF"
kill -HUP "$DAEMON_PID"
no_file() { grep -q "not reloaded.*cannot read configuration file" "$WORK/localsad.log"; }
for _ in $(seq 30); do no_file && break; sleep 0.1; done
check "a missing file is refused" no_file
foreign
eq "the old configuration is still in force (debug log)" 2 "$(debug_lines)"
check "nobody reads the port fine (no port read errors)" bash -c "! grep -q 'cannot read the port' '$WORK/localsad.log'"
check "localsad still running" kill -0 "$DAEMON_PID"
summary
