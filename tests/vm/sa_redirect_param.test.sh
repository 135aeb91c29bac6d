#!/usr/bin/env bash
# vm test: the ib_core.sa_redirect parameters of the patched ib_core on kernel line $1
# (6.1 or 6.12): the module loads, the three parameters exist with their defaults, values
# round-trip through sysfs and when given at load time, bad values are rejected (-EINVAL)
# with the table unchanged, and the RDMA stack loads on top. No fabric is needed.
# Boots through scripts/vm when it is executable, else through tests/vm/lib/qemu_boot.sh.
# vm-lines: 6.1 6.12 6.12-debug
set -euo pipefail
LINE=${1:?usage: $0 6.1|6.12|6.12-debug}
cd "$(dirname "$0")/../.."
CACHE=${LOCALSA_CACHE:-/var/cache/localsa}

if [[ $LINE == *-debug ]]; then
    # the debug line's ib_core is built in tree: the .ko files of its module tree
    scripts/kernel build-debug --kernel "${LINE%-debug}"
    # shellcheck disable=SC1090
    . "$CACHE/kernel/$LINE/current/kernel.env"
else
    scripts/kernel fetch --kernel "$LINE"
    scripts/kernel build --kernel "$LINE"
    # shellcheck disable=SC1090
    . "$CACHE/kernel/$LINE/kernel.env"
fi

export LOCALSA_KO_DIR=$IB_CORE_PATCHED LOCALSA_MOD_DIR=$KERNEL_MODULES
checks=tests/vm/lib/sa_redirect_checks.sh
if [[ -x scripts/vm ]]; then
    export LOCALSA_SA_LOADTIME='*:*=self'
    scripts/vm run --kernel "$LINE" --no-fabric --timeout "${LOCALSA_VM_TIMEOUT:-500}" \
        --modparam "ib_core:sa_redirect=$LOCALSA_SA_LOADTIME" -- bash "$checks"
else
    VM_TIMEOUT=500 tests/vm/lib/qemu_boot.sh "$LINE" "$checks" \
        LOCALSA_KO_DIR="$LOCALSA_KO_DIR" LOCALSA_MOD_DIR="$LOCALSA_MOD_DIR"
fi
