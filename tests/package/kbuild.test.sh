#!/usr/bin/env bash
# The top-level Kbuild: `make -C <headers> M=$PWD` builds the project's kernel modules (simhca,
# localsa_test) against a Debian kernel's headers, here those of the cached 6.1 and 6.12 lines.
#   tests/package/kbuild.test.sh [SOURCE_DIR]
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
cache=${LOCALSA_CACHE:-/var/cache/localsa}
work=$(mktemp -d /var/tmp/localsa-kbuild.XXXXXX)
trap 'rm -rf "$work"' EXIT
built=0
for line in 6.1 6.12; do
    env=$cache/kernel/$line/kernel.env
    [[ -f $env ]] || { echo "kbuild: no cached $line kernel (scripts/vm prepare --kernel $line)"; continue; }
    # shellcheck disable=SC1090
    KERNEL_HEADERS=$(. "$env" && echo "$KERNEL_HEADERS")
    copy=$work/$line
    mkdir -p "$copy"
    (cd "$src" && git ls-files -co --exclude-standard -z -- Kbuild kernel/simhca kernel/test |
        tar --null -cf - -T -) | tar -C "$copy" -xf -
    make -C "$KERNEL_HEADERS" M="$copy" -j"$(nproc)" modules >"$work/$line.log" 2>&1 ||
        { tail -30 "$work/$line.log" >&2; echo "kbuild: FAIL: $line" >&2; exit 1; }
    for ko in kernel/simhca/simhca.ko kernel/test/localsa_test.ko; do
        [[ -f $copy/$ko ]] || { echo "kbuild: FAIL: $line: no $ko" >&2; exit 1; }
        vermagic=$(modinfo -F vermagic "$copy/$ko")
        [[ $vermagic == "$(. "$env" && echo "$KERNEL_RELEASE") "* ]] ||
            { echo "kbuild: FAIL: $line: $ko has vermagic '$vermagic'" >&2; exit 1; }
    done
    echo "kbuild: $line: simhca.ko, localsa_test.ko"
    built=$((built + 1))
done
((built)) || exit 77
