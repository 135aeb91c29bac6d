#!/usr/bin/env bash
# vm test: localsad@.service under a real systemd. The guest boots the host's systemd as PID 1
# (scripts/vm run --systemd: journald, udevd with rdma-core's rules), /etc gets a writable
# overlay (and the build's sysconfdir, whose localsad.conf the unit reads by default), the
# account comes from localsa.sysusers through systemd-sysusers, and localsad and the unit built
# from userspace/daemon/localsad@.service.in are installed where the build would install them
# (the install prefix gets an overlay too). Then, as an admin would:
#   - the umad device unit the instance binds to exists (rdma-core's udev rule);
#   - systemctl start returns once localsad sent READY (Type=notify), with a STATUS line; it
#     runs as the localsa user and answers on its control socket;
#   - systemctl reload: a good file (written after the start) is applied (SIGHUP), a bad one
#     fails the reload and the daemon keeps running with the old configuration;
#   - killed with SIGKILL it is restarted by systemd (Restart=on-failure);
#   - systemctl stop ends it cleanly (status 0), STOPPING logged in the journal.
# Usage: tests/vm/systemd.test.sh 6.1|6.12
# vm-lines: 6.12
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.1|6.12}
    cd "$(dirname "$0")/../.."
    exec bash scripts/vm run --systemd --kernel "$LINE" --sm H0 --hca H1 --timeout 400 \
        -- bash tests/vm/systemd.test.sh --guest
fi
set +e
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

BIN=${LOCALSA_BUILD:-$PWD/build}/bin
UNIT_SRC=${LOCALSA_BUILD:-$PWD/build}/userspace/localsad@.service
INSTANCE=localsad@simhca1:1.service
# the file the unit's localsad reads by default (the build's sysconfdir; /etc in the package)
CONF=$("$BIN/localsad" --help | tr -d ' \n' | sed -n 's|.*default:\(/[^ ]*/localsad\.conf\)whenitexists.*|\1|p')

check "systemd is PID 1" test "$(cat /proc/1/comm)" = systemd
# the host root is read-only: /etc gets a writable layer for the account, unit and config
modprobe overlay
mkdir -p /run/etc-upper /run/etc-work
check "/etc writable (overlay)" mount -t overlay overlay \
    -o lowerdir=/etc,upperdir=/run/etc-upper,workdir=/run/etc-work /etc
check "the default configuration file ($CONF)" test -n "$CONF"
check "the unit was built ($UNIT_SRC)" test -f "$UNIT_SRC"
sbindir=$(sed -n 's|^ExecStart=.*exec \(/[^ ]*\)/localsad .*|\1|p' "$UNIT_SRC")
check "the unit's sbindir ($sbindir)" test -n "$sbindir"
# the install prefix (/usr/local for a build tree) gets a writable layer too: localsad is
# installed where the unit runs it from (a checkout below /tmp would be hidden from the
# service by its PrivateTmp, and the unit is used unchanged)
prefix=$(dirname "$sbindir")
mkdir -p /run/prefix-upper /run/prefix-work
check "$prefix writable (overlay)" mount -t overlay overlay \
    -o lowerdir="$prefix",upperdir=/run/prefix-upper,workdir=/run/prefix-work "$prefix"
etc=$(dirname "$(dirname "$CONF")")
if [[ $etc != /etc && $etc != "$prefix"/* ]]; then
    mkdir -p /run/cfg-upper /run/cfg-work
    check "$etc writable (overlay)" mount -t overlay overlay \
        -o lowerdir="$etc",upperdir=/run/cfg-upper,workdir=/run/cfg-work "$etc"
fi
check "the localsa account (systemd-sysusers)" \
    systemd-sysusers "$PWD/userspace/daemon/localsa.sysusers"
check "getent passwd localsa" getent passwd localsa
# /var/lib is the host's, read-only: the unit's StateDirectory= (the warm set) must be able to
# create /var/lib/localsa as on a real system, so /var/lib gets a writable layer too
mkdir -p /run/varlib-upper /run/varlib-work
check "/var/lib writable (overlay)" mount -t overlay overlay \
    -o lowerdir=/var/lib,upperdir=/run/varlib-upper,workdir=/run/varlib-work /var/lib
rm -rf /var/lib/localsa
mkdir -p "$sbindir"
check "localsad installed in $sbindir" install -m 0755 "$BIN/localsad" "$sbindir/localsad"
cp "$UNIT_SRC" /etc/systemd/system/localsad@.service
# no file at start: the admin writes one later and reloads
mkdir -p "$(dirname "$CONF")"
rm -f "$CONF"
systemctl daemon-reload
# --man=no: the man page is not installed in the guest (the package test verifies with it)
if out=$(systemd-analyze verify --man=no /etc/systemd/system/localsad@.service 2>&1); then
    pass "systemd-analyze verify"
else
    fail "systemd-analyze verify: $out"
fi

dev_unit=$(systemd-escape --path /sys/subsystem/rdma/devices/simhca1:1/umad).device
dev_up() { systemctl is-active --quiet "$dev_unit"; }
check "the port's umad device unit ($dev_unit) is active" wait_until 20 dev_up

echo "--- start"
t0=$SECONDS
journal() { journalctl -q -o cat -u "$INSTANCE" 2>/dev/null; }
if timeout 60 systemctl start "$INSTANCE"; then
    pass "systemctl start returns (Type=notify: READY sent)"
else
    fail "systemctl start returns (Type=notify: READY sent)"
    systemctl status --no-pager "$INSTANCE" | tail -n 12
    journal | tail -n 12
    # nothing below can run without the daemon
    finish
fi
echo "     started in $((SECONDS - t0)) s"
check "StateDirectory= made /var/lib/localsa, owned by localsa" \
    test "$(stat -c %U /var/lib/localsa)" = localsa
eq "active" active "$(systemctl is-active "$INSTANCE")"
status=$(systemctl show -P StatusText "$INSTANCE")
check "a STATUS line ($status)" grep -q "master" <<<"$status"
pid=$(systemctl show -P MainPID "$INSTANCE")
eq "runs as localsa" localsa "$(ps -o user= -p "$pid" | tr -d ' ')"
ctl() { timeout 10 "$BIN/localsactl" --control /run/localsa/simhca1-1.sock "$@" >/dev/null; }
check "answers on /run/localsa/simhca1-1.sock" ctl stats
# the kernel's redirect state reaches the metrics from inside the sandbox (debugfs is opened
# before privileges drop)
prom=$(timeout 10 "$BIN/localsactl" -C simhca1 -P 1 stats --format prometheus 2>/dev/null)
check "the kernel's redirect state in the metrics" \
    grep -q '^localsa_kernel_redirect_state{ca="simhca1",port="1",state=' <<<"$prom"

echo "--- reload"
echo "log-level = debug" >"$CONF"
if timeout 30 systemctl reload "$INSTANCE"; then
    pass "systemctl reload with a good file, written after the start"
else
    fail "systemctl reload with a good file"
    journal | tail -n 8
fi
reloaded() { journal | grep -q "SIGHUP: configuration $CONF reloaded"; }
check "... applied (journal)" wait_until 10 reloaded
echo "path-ttl-s = 0" >"$CONF"
if timeout 30 systemctl reload "$INSTANCE"; then
    fail "systemctl reload with a bad file fails"
else
    pass "systemctl reload with a bad file fails"
fi
eq "... the daemon keeps running" "$pid" "$(systemctl show -P MainPID "$INSTANCE")"
check "... and answering" ctl stats
echo "log-level = info" >"$CONF"

echo "--- restart on failure"
# a MainPID of 0 would make this kill the test's own process group
[[ $pid =~ ^[1-9][0-9]*$ ]] || { fail "a main PID to kill ($pid)"; finish; }
kill -9 "$pid"
restarted() {
    local p
    p=$(systemctl show -P MainPID "$INSTANCE")
    [[ $p != 0 && $p != "$pid" ]] && systemctl is-active --quiet "$INSTANCE"
}
check "killed with SIGKILL: restarted by systemd (Restart=on-failure)" wait_until 30 restarted
eq "NRestarts" 1 "$(systemctl show -P NRestarts "$INSTANCE")"
check "... answering again" wait_until 10 ctl stats

echo "--- stop"
check "systemctl stop" timeout 30 systemctl stop "$INSTANCE"
eq "inactive" inactive "$(systemctl is-active "$INSTANCE")"
eq "exit status 0" 0 "$(systemctl show -P ExecMainStatus "$INSTANCE")"
echo "--- journal"
journal | tail -n 12
check "the journal has its lines with priorities" bash -c \
    "journalctl -q -u '$INSTANCE' -p info -o cat | grep -q ."
finish
