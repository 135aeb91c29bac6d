#!/usr/bin/env bash
# vm test: ib_core.sa_redirect on a live IB port of kernel line $1 (6.1 or 6.12): a simhca
# port redirected to itself (*:*=self) with a stub fabric that answers as the SM; checks the
# redirect, the fail-open to the SM when no local SA answers, the probes, the resume when a
# local SA appears, a LID change, and the resume on a write of the parameter.
# Boots through tests/vm/lib/qemu_boot.sh (no ibsim fabric needed).
set -euo pipefail
LINE=${1:?usage: $0 6.1|6.12}
cd "$(dirname "$0")/../.."
CACHE=${LOCALSA_CACHE:-/var/cache/localsa}

scripts/kernel fetch --kernel "$LINE"
scripts/kernel build --kernel "$LINE"
# shellcheck disable=SC1090
. "$CACHE/kernel/$LINE/kernel.env"

# simhca (kernel/simhca) for this kernel, built in the cache when its sources changed
sim="$CACHE/kernel/$LINE/simhca-test"
stamp=$(cat kernel/simhca/* 2>/dev/null | sha256sum | cut -c1-16)
if [[ ! -f "$sim/simhca.ko" || "$(cat "$sim/STAMP" 2>/dev/null)" != "$stamp" ]]; then
    rm -rf "$sim"
    mkdir -p "$sim"
    cp -a kernel/simhca/. "$sim/"
    make -C "$sim" KDIR="$KERNEL_HEADERS" >"$sim/build.log" 2>&1 ||
        { tail -n 30 "$sim/build.log"; echo "simhca build failed"; exit 1; }
    echo "$stamp" >"$sim/STAMP"
fi

VM_TIMEOUT=500 tests/vm/lib/qemu_boot.sh "$LINE" tests/vm/lib/sa_redirect_failopen_checks.sh \
    LOCALSA_KO_DIR="$IB_CORE_PATCHED" LOCALSA_MOD_DIR="$KERNEL_MODULES" \
    LOCALSA_SIMHCA_KO="$sim/simhca.ko" LOCALSA_STUB="$PWD/tests/vm/lib/sa_stub.py"
