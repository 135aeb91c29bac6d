# shellcheck shell=bash
# Helpers for the guest half of tests/vm/*.test.sh (run inside `scripts/vm run`).

VM_FAILS=0
pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; VM_FAILS=$((VM_FAILS + 1)); }
# check DESCRIPTION COMMAND...: pass if COMMAND succeeds
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
# eq DESCRIPTION EXPECTED ACTUAL
eq() {
    if [[ "$2" == "$3" ]]; then pass "$1 ($3)"; else fail "$1: expected '$2', got '$3'"; fi
}
# wait_until SECONDS COMMAND...: poll every 0.2 s
wait_until() {
    local limit=$1 t0=$SECONDS
    shift
    until "$@"; do
        ((SECONDS - t0 < limit)) || return 1
        sleep 0.2
    done
}
finish() {
    if ((VM_FAILS)); then
        echo "--- opensm.log (tail)"; tail -n 15 "$VM_FABRIC_DIR/opensm.log" 2>/dev/null || true
        echo "--- relay logs (tail)"; tail -n 8 "$VM_FABRIC_DIR"/relay-*.log 2>/dev/null || true
        echo "--- kernel log (simhca)"; dmesg | grep simhca | tail -n 20 || true
        echo "$VM_FAILS check(s) failed"
        exit 1
    fi
    echo "all checks passed"
}

# sysfs attribute of simhcaN port 1
port_attr() { cat "/sys/class/infiniband/simhca$1/ports/1/$2"; }
# decimal LID of simhcaN (sysfs shows hex)
port_lid() { printf '%d' "$(port_attr "$1" lid)"; }
port_sm_lid() { printf '%d' "$(port_attr "$1" sm_lid)"; }
# number of ports (nodes) in the net file
net_nodes() { grep -cE '^(Hca|Switch|Ca)[[:space:]]' "$VM_FABRIC_DIR/net"; }
# events simhcaN logged, e.g. event_count 1 "LID change"
event_count() { dmesg | grep -c "simhca$1: port 1: $2" || true; }
# "NODE LID" of every CA port of the fabric, from the master's NodeRecords (saquery on
# simhca$1), sorted by LID: what `scripts/fabric lid --all` prints on the host
ca_nodes() {
    saquery -C "simhca$1" NodeRecord 2>/dev/null | python3 -c '
import re, sys
recs, cur = [], {}
for line in sys.stdin:
    m = re.match(r"\s*(\w+)\.{2,}(.*)$", line)
    if not m:
        continue
    k, v = m.group(1), m.group(2).strip()
    if k == "lid":
        cur = {"lid": int(v, 0)}
        recs.append(cur)
    else:
        cur[k] = v
for r in sorted(recs, key=lambda r: r["lid"]):
    t = r.get("node_type", "")
    if t.startswith("Channel") or t in ("1", "0x1"):
        print(r.get("NodeDescription", "?").split()[0], r["lid"])'
}
