#!/usr/bin/env bash
# The kernel series of one Debian line is bisectable: its patches apply in order, without
# fuzz, to the line's drivers/infiniband/core, and after each one the C files the series
# has touched so far compile (warnings are errors). Prints the lines each patch adds.
# Objects only, no module link (a full build of the directory takes ~10 min on the shared
# host; the vm tests build and load the whole series' modules).
# Skipped (77) when the line's source and headers have not been fetched.
#   tests/kernel/series_build.sh LINE
set -euo pipefail
cd "$(dirname "$0")/../.."
line=${1:?usage: tests/kernel/series_build.sh LINE}
env=$(scripts/kernel env --kernel "$line" 2>/dev/null) || {
    echo "series_build: kernel $line not fetched (scripts/kernel fetch --kernel $line): skipped"
    exit 77
}
eval "$env"
[[ -d "$KERNEL_SOURCE/drivers/infiniband/core" && -f "$KERNEL_HEADERS/Makefile" ]] || {
    echo "series_build: source or headers of $line missing: skipped"
    exit 77
}
work=$(mktemp -d "${TMPDIR:-/tmp}/series_build.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/drivers/infiniband" "$work/a/b"
cp -a "$KERNEL_SOURCE/drivers/infiniband/core" "$KERNEL_SOURCE/drivers/infiniband/Kconfig" \
    "$work/drivers/infiniband/"
mod=$work/drivers/infiniband/core
n=0 fail=0 objs=()
for p in kernel/patches/"$line"/*.patch; do
    grep -q '^diff --git ' "$p" || continue    # the cover letter
    n=$((n + 1))
    added=$(sed -n '/^diff --git /,$p' "$p" | grep -c '^+[^+]\|^+$' || true)
    name=$(basename "$p")
    if ! patch -d "$work" -p1 -s -F0 --no-backup-if-mismatch <"$p"; then
        echo "FAIL $name: does not apply"
        exit 1
    fi
    for f in $(sed -n 's|^+++ b/drivers/infiniband/core/\([a-z_0-9]*\)\.c$|\1.o|p' "$p"); do
        [[ " ${objs[*]} " == *" $f "* ]] || objs+=("$f")
    done
    # an object the line's configuration does not build is not compiled: the KUnit suite
    # (obj-$(CONFIG_INFINIBAND_SA_REDIRECT_KUNIT_TEST)) needs CONFIG_KUNIT, which Debian's
    # kernels do not set; the debug line (scripts/kernel build-debug) builds it
    build=() skipped=""
    for f in "${objs[@]}"; do
        # the CONFIG_ of an object's kbuild line "xxx-$(CONFIG_X) += ... f.o ...", if any
        conf=$(awk -v o="$f" '$1 ~ /^[a-z0-9_-]+-\$\(CONFIG_[A-Z0-9_]+\)$/ && $2 ~ /^[+:]?=$/ {
                for (i = 3; i <= NF; i++) if ($i == o) { c = $1; sub(/^.*\$\(/, "", c); sub(/\)$/, "", c); print c; exit } }' \
            "$mod/Makefile")
        if [[ -n "$conf" ]] && ! grep -q "^$conf=[ym]$" "$KERNEL_HEADERS/.config"; then
            skipped+=" $f"
        else
            build+=("$f")
        fi
    done
    t0=$SECONDS
    if make -s -C "$KERNEL_HEADERS" M="$mod" KCFLAGS="-I$work/a/b -Werror" \
        -j"${JOBS:-2}" "${build[@]}" >"$work/build.log" 2>&1; then
        echo "ok   $name: +$added lines, ${build[*]} build ($((SECONDS - t0)) s)${skipped:+ (not built by the config of $line:$skipped)}"
    else
        echo "FAIL $name: +$added lines, does not build:"
        tail -n 20 "$work/build.log"
        fail=$((fail + 1))
    fi
done
echo "series_build $line: $n patches, $fail failed to build"
((n > 0 && fail == 0))
