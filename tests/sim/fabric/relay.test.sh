#!/usr/bin/env bash
# sim tier: simhca-relay under load in both directions at once (sim-relay-flood against the real
# ibsim). ibsim writes to a client until the client reads; a relay that blocks sending to ibsim
# while ibsim writes to it stops the whole fabric (in the vm tier: OpenSM's own SMPs stop, "SM
# port is down"). Checks: with the relay's node receiving COUNT SA Gets while its "kernel" sends
# COUNT, every MAD is delivered both ways. COUNT (4,000) is past what ibsim's sockets queue
# (`scripts/fabric up` raises net.unix.max_dgram_qlen to 1,024; the vm guest keeps 10).
# Usage: relay.test.sh [BUILD_BIN_DIR]
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$(cd "${1:-$ROOT/build/bin}" && pwd)
FABRIC=$ROOT/scripts/fabric
COUNT=${LOCALSA_RELAY_FLOOD_COUNT:-4000}
passed=0
failed=0
pass() { echo "ok   - $*"; passed=$((passed + 1)); }
fail() { echo "FAIL - $*"; failed=$((failed + 1)); }
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }

WORK=$(mktemp -d /tmp/localsa-relay.XXXXXX)
D=$WORK/fabric
cleanup() { "$FABRIC" down --dir "$D" >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
cd "$WORK" || exit 1
"$FABRIC" up --dir "$D" --hosts 6 --timeout 60 >/dev/null || { echo "FAIL - fabric up"; exit 1; }
# shellcheck disable=SC1091
source "$D/env"
echo "# net.unix.max_dgram_qlen $(cat /proc/sys/net/unix/max_dgram_qlen)"
# each round on nodes of its own: a stuck round leaves its ibsim clients behind
for round in 1 2; do
    relay_node=H$((2 * round)) peer_node=H$((2 * round + 1))
    read -r relay_lid peer_lid < <("$FABRIC" lid --dir "$D" "$relay_node" "$peer_node" | tr '\n' ' ')
    out=$(IBSIM_SOCKNAME=$IBSIM_SOCKNAME timeout 60 "$BIN/sim-relay-flood" --node "$relay_node" \
        --node-lid "$relay_lid" --peer "$peer_node" --peer-lid "$peer_lid" --count "$COUNT" \
        --timeout-s 20 2>&1)
    rc=$?
    echo "# round $round: $out"
    check "round $round: $COUNT MADs each way through a relay loaded both ways, all delivered" \
        test "$rc" -eq 0
done
echo "$passed passed, $failed failed"
((failed == 0))
