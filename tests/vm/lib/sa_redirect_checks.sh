#!/usr/bin/env bash
# Runs inside the guest (host root, guest kernel): checks of the ib_core.sa_redirect
# parameters on a patched ib_core. Needs LOCALSA_KO_DIR (the patched .ko files) and
# LOCALSA_MOD_DIR (the kernel's Debian module tree, for configfs). If ib_core is already
# loaded (by scripts/vm with --modparam ib_core:sa_redirect=$LOCALSA_SA_LOADTIME), checks that
# value first. Prints "N passed, N failed"; exits non-zero on any failure.
set -u
P=/sys/module/ib_core/parameters
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   - $*"; }
nok() { fail=$((fail + 1)); echo "FAIL - $*"; }
check() { # check DESCRIPTION COMMAND...
    local d=$1; shift
    if "$@"; then ok "$d"; else nok "$d"; fi
}
eq() { # eq DESCRIPTION GOT WANT
    if [[ "$2" == "$3" ]]; then ok "$1"; else nok "$1: got '$2', want '$3'"; fi
}
table() { cat $P/sa_redirect; }
warnings() { dmesg | grep -c 'sa_redirect: invalid entry'; }
stack_down() {
    local m
    for m in simhca rdma_ucm rdma_cm iw_cm ib_cm ib_umad ib_uverbs ib_core; do
        [[ -d /sys/module/$m ]] && rmmod "$m"
    done
    [[ ! -d /sys/module/ib_core ]]
}
load() { insmod "$LOCALSA_KO_DIR/ib_core.ko" "$@"; }

: "${LOCALSA_KO_DIR:?}" "${LOCALSA_MOD_DIR:?}"
echo "kernel $(uname -r), ib_core from $LOCALSA_KO_DIR"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

# 0. given by the harness at load time
if [[ -d /sys/module/ib_core ]]; then
    if [[ -n "${LOCALSA_SA_LOADTIME:-}" ]]; then
        eq "load-time value from the harness" "$(table)" "$LOCALSA_SA_LOADTIME"
    fi
    check "unload the RDMA stack" stack_down
fi

# 1. load-time values
check "patched ib_core loads with parameters" \
    load 'sa_redirect=mlx4_0:1=31,*:*=self' sa_redirect_timeout_ms=300 sa_redirect_probe_ms=1000
eq "sa_redirect given at load" "$(table)" "mlx4_0:1=0x1f,*:*=self"
eq "sa_redirect_timeout_ms given at load" "$(cat $P/sa_redirect_timeout_ms)" 300
eq "sa_redirect_probe_ms given at load" "$(cat $P/sa_redirect_probe_ms)" 1000
check "unload" rmmod ib_core
# fail-open: a bad value at load time is logged and leaves the table empty; the RDMA
# stack loads
before=$(dmesg | grep -c 'sa_redirect: invalid entry "\*:\*=0xc000": .*, redirect off')
check "a bad load-time value does not fail the load" load 'sa_redirect=*:*=0xc000'
eq "... the table is empty" "$(table)" ""
eq "... and it is logged" "$(dmesg | grep -c 'sa_redirect: invalid entry "\*:\*=0xc000": .*, redirect off')" $((before + 1))
check "... writes are checked again once loaded" bash -c "! echo '*:*=0xc000' >$P/sa_redirect 2>/dev/null"
check "unload" rmmod ib_core
# the same for the two numbers: a bad value at load time is logged, the default kept
check "a bad sa_redirect_timeout_ms / _probe_ms at load does not fail the load" \
    load sa_redirect_timeout_ms=abc sa_redirect_probe_ms=200ms
eq "... sa_redirect_timeout_ms keeps its default" "$(cat $P/sa_redirect_timeout_ms 2>/dev/null)" 200
eq "... sa_redirect_probe_ms keeps its default" "$(cat $P/sa_redirect_probe_ms 2>/dev/null)" 5000
check "... the log says why" bash -c "dmesg | grep -q 'sa_redirect_timeout_ms: invalid value \"abc\", keeping 200'"
check "... both" bash -c "dmesg | grep -q 'sa_redirect_probe_ms: invalid value \"200ms\", keeping 5000'"
check "unload" rmmod ib_core

# 2. defaults
check "patched ib_core loads" load
for p in sa_redirect sa_redirect_timeout_ms sa_redirect_probe_ms; do
    eq "$p exists, mode 0644" "$(stat -c %a $P/$p 2>/dev/null)" 644
done
eq "sa_redirect default (empty)" "$(table)" ""
eq "sa_redirect_timeout_ms default" "$(cat $P/sa_redirect_timeout_ms)" 200
eq "sa_redirect_probe_ms default" "$(cat $P/sa_redirect_probe_ms)" 5000
check "debugfs: a directory ib_sa (one directory per device in it)" test -d /sys/kernel/debug/ib_sa
check "debugfs: no file at the root" test ! -e /sys/kernel/debug/ib_sa_redirect

# 3. run-time writes round-trip
w() { echo "$1" >$P/sa_redirect 2>/dev/null; }
check "write *:*=self" w '*:*=self'
eq "read *:*=self" "$(table)" '*:*=self'
check "write a table" w 'mlx5_0:1=0x12,mlx5_0:2=18, *:*=self'
eq "read the table in canonical form" "$(table)" 'mlx5_0:1=0x12,mlx5_0:2=0x12,*:*=self'
check "the read-out writes back" w "$(table)"
eq "and reads the same" "$(table)" 'mlx5_0:1=0x12,mlx5_0:2=0x12,*:*=self'

# 4. bad values: -EINVAL, table unchanged, one warning naming the entry
for bad in '*:*=0xc000' 'mlx5_0' 'mlx5_0:0=5' '*:*=self,*:*=7' '*:*=selfish' 'a:1=1,,b:1=2'; do
    before=$(warnings)
    err=$(echo "$bad" 2>&1 >$P/sa_redirect)
    rc=$?
    check "'$bad' rejected" test $rc -ne 0
    check "'$bad' rejected with EINVAL" grep -q 'Invalid argument' <<<"$err"
    eq "'$bad' leaves the table" "$(table)" 'mlx5_0:1=0x12,mlx5_0:2=0x12,*:*=self'
    eq "'$bad' logs one warning" "$(($(warnings) - before))" 1
done
check "the warning names the entry" bash -c "dmesg | grep -q 'invalid entry \"\\*:\\*=7\"'"

# 5. clearing, the other two parameters
check "write empty" w ''
eq "empty table" "$(table)" ""
echo 500 >$P/sa_redirect_timeout_ms && echo 2000 >$P/sa_redirect_probe_ms
eq "sa_redirect_timeout_ms writable" "$(cat $P/sa_redirect_timeout_ms)" 500
eq "sa_redirect_probe_ms writable" "$(cat $P/sa_redirect_probe_ms)" 2000
check "a non-number timeout is rejected" bash -c "! echo x >$P/sa_redirect_timeout_ms 2>/dev/null"

# 6. Debian's own RDMA modules load on top of the patched ib_core (only ib_core is
#    replaced when it is installed)
check "set *:*=self again" w '*:*=self'
debian() { # insmod Debian's module $1 of this kernel
    local f
    f=$(find "$LOCALSA_MOD_DIR/kernel" -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" | head -n1)
    [[ -n "$f" ]] && insmod "$f"
}
[[ -d /sys/module/configfs ]] || debian configfs
for m in ib_umad ib_cm iw_cm rdma_cm; do
    check "Debian's $m loads on the patched ib_core" debian $m
done
eq "table kept while the stack loads" "$(table)" '*:*=self'
check "unload the RDMA stack" stack_down

echo "sa_redirect_param: $pass passed, $fail failed"
((fail == 0))
