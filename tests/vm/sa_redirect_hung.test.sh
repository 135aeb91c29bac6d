#!/usr/bin/env bash
# vm test: ib_core.sa_redirect=*:*=self with a local SA that hangs or dies mid-request, on
# kernel line $1 (6.1 or 6.12): a SIGSTOPped local SA (still registered for Get, Set and
# Delete) does not cut the port off the SA (joins and leaves reach the SM), and a join
# relayed once by a local SA that dies reaches the SM once. The fabric is
# tests/vm/lib/sa_stub.py (no ibsim): simhca and the stubs are started by the checks.
# vm-lines: 6.1 6.12
set -euo pipefail
LINE=${1:?usage: $0 6.1|6.12}
cd "$(dirname "$0")/../.."
export LOCALSA_STUB=$PWD/tests/vm/lib/sa_stub.py
scripts/vm run --kernel "$LINE" --no-fabric --timeout "${LOCALSA_VM_TIMEOUT:-400}" \
    --modparam 'ib_core:sa_redirect=*:*=self' \
    --modparam ib_core:sa_redirect_timeout_ms=200 \
    --modparam ib_core:sa_redirect_probe_ms=1000 \
    -- bash tests/vm/lib/sa_redirect_hung_checks.sh
