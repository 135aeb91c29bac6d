#!/usr/bin/env bash
# vm test: ib_core.sa_redirect on a live IB port of kernel line $1 (6.1 or 6.12): a simhca
# port whose fabric is a stub (tests/vm/lib/sa_stub.py) with the SM and stand-in redirect
# targets; checks the redirect to self (used exactly when an agent serves the request),
# the fail-open per method (a target that answers neither a query nor a probe within
# sa_redirect_timeout_ms costs the port its redirect until it answers a probe; a Set is
# not sent twice), the probes of a fixed target LID, stale decisions, a device
# rename, an SM LID of 0 and the removal of the device while probing.
# Boots through scripts/vm (no ibsim fabric: simhca and the stub are started by the checks).
# vm-lines: 6.1 6.12 6.12-debug
set -euo pipefail
LINE=${1:?usage: $0 6.1|6.12|6.12-debug}
cd "$(dirname "$0")/../.."
export LOCALSA_STUB=$PWD/tests/vm/lib/sa_stub.py
scripts/vm run --kernel "$LINE" --no-fabric --timeout "${LOCALSA_VM_TIMEOUT:-500}" \
    --modparam 'ib_core:sa_redirect=*:*=self' \
    --modparam ib_core:sa_redirect_timeout_ms=200 \
    --modparam ib_core:sa_redirect_probe_ms=1000 \
    -- bash tests/vm/lib/sa_redirect_failopen_checks.sh
