#!/usr/bin/env bash
# vm test: the KUnit suite of the ib_core.sa_redirect parser (sa_redirect_test.ko, patch
# 7 of the 6.12 series) run on the debug line, where the series is built in tree with
# CONFIG_KUNIT: loading the module runs the suite. Checked from both of its reports, the
# KTAP results in debugfs (/sys/kernel/debug/kunit/ib_sa_redirect/results) and the summary
# in the kernel log: every case ran and passed, none failed or was skipped.
# vm-lines: 6.12-debug
# Usage: tests/vm/sa_redirect_kunit.test.sh 6.12-debug
set -euo pipefail
if [[ ${1:-} != --guest ]]; then
    LINE=${1:?usage: $0 6.12-debug}
    cd "$(dirname "$0")/../.."
    t0=$SECONDS
    rc=0
    bash scripts/vm run --kernel "$LINE" --no-fabric --timeout "${LOCALSA_VM_TIMEOUT:-900}" \
        -- bash tests/vm/sa_redirect_kunit.test.sh --guest || rc=$?
    echo "sa_redirect_kunit $LINE: $((SECONDS - t0)) s"
    exit $rc
fi
set +e
VM_FABRIC_DIR=${VM_FABRIC_DIR:-/tmp/vm-fabric}  # no fabric: finish() looks there on failure
# shellcheck source=tests/vm/lib/vm-checks.sh
. "$(dirname "$0")/lib/vm-checks.sh"

# the cases of the suite, as the patches add them (the KUnit patches are three, not all with
# "KUnit" in their file names)
cases=$(grep -hoE '^\+[[:space:]]*KUNIT_CASE\(ib_sa_redirect_test_[a-z_]+\)' \
    "$(dirname "$0")/../../kernel/patches/6.12/"*.patch | sed -E 's/.*\((.*)\)/\1/' | sort -u)
ncases=$(wc -w <<<"$cases")
echo "kernel $(uname -r), $ncases cases in the suite"
check "the suite has cases" test "$ncases" -gt 0
check "the series is built with KUnit" test -d /sys/kernel/debug/kunit
check "loading sa_redirect_test runs the suite" modprobe sa_redirect_test
# built with KUNIT_DEFAULT_ENABLED off (allnoconfig): scripts/vm boots it with kunit.enable=1
check "KUnit is enabled" bash -c '! dmesg | grep -q "kunit: disabled"'
results=/sys/kernel/debug/kunit/ib_sa_redirect/results
check "debugfs has the suite's results" test -r "$results"
echo "--- $results"
cat "$results"
echo "---"
# KTAP: "ok N name" per case (indented, a subtest), then "ok 1 ib_sa_redirect" for the suite
for c in $cases; do
    check "case $c passed" grep -qE "^[[:space:]]+ok [0-9]+ $c\$" "$results"
done
eq "cases reported" "$ncases" "$(grep -cE '^[[:space:]]+(not )?ok [0-9]+ ib_sa_redirect_test_' "$results")"
eq "cases failed" 0 "$(grep -cE '^[[:space:]]*not ok ' "$results")"
eq "cases skipped" 0 "$(grep -ciE '# SKIP' "$results")"
check "the suite passed" grep -qE '^ok [0-9]+ ib_sa_redirect$' "$results"
# the kernel log's KTAP has the suite's totals
check "kernel log: pass:$ncases fail:0 skip:0 total:$ncases" \
    bash -c "dmesg | grep -q '# ib_sa_redirect: pass:$ncases fail:0 skip:0 total:$ncases'"
echo "--- the suite's KTAP in the kernel log"
dmesg | sed -n '/# Subtest: ib_sa_redirect/,/ok [0-9]* ib_sa_redirect$/p'
check "unload" rmmod sa_redirect_test
finish
