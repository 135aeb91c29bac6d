#!/usr/bin/env bash
# The kernel series and test module of one Debian line pass that line's checkpatch.pl --strict
# and apply without fuzz (scripts/kernel checkpatch). Skipped (77) when the line's linux-source
# has not been fetched.
#   tests/lint/checkpatch.sh LINE
set -euo pipefail
cd "$(dirname "$0")/../.."
line=${1:?usage: tests/lint/checkpatch.sh LINE}
env=$(scripts/kernel env --kernel "$line" 2>/dev/null) || {
    echo "checkpatch: linux-source $line not fetched (scripts/kernel fetch --kernel $line): skipped"
    exit 77
}
eval "$env"
if [[ ! -f "$KERNEL_SOURCE/scripts/checkpatch.pl" ]]; then
    echo "checkpatch: $KERNEL_SOURCE/scripts/checkpatch.pl missing: skipped"
    exit 77
fi
exec scripts/kernel checkpatch --kernel "$line"
