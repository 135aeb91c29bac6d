#!/usr/bin/env bash
# A package build: -DBUILD_TESTING=OFF configures, builds and installs localsad, localsactl, the
# man page and the unit on a machine without the test equipment. Here that equipment is hidden
# rather than removed: pkg-config sees libibumad and libibverbs only (not libibmad), and
# find_package of Catch2 and Google Benchmark is disabled, so a configure that still asked for one
# of them fails.
#   tests/lint/without-tests.sh SOURCE_DIR
set -euo pipefail
src=$(cd "${1:?usage: tests/lint/without-tests.sh SOURCE_DIR}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "without-tests: $*" >&2; exit 1; }

mkdir "$work/pkgconfig"
# What a package build needs: libibumad (MADs) and libibverbs (the port's events), with what
# libibverbs' own .pc requires (libnl).
for lib in libibumad libibverbs $(pkg-config --print-requires --print-requires-private libibverbs |
    awk '{print $1}'); do
    cp "$(pkg-config --variable=pcfiledir "$lib")/$lib.pc" "$work/pkgconfig/"
done
export PKG_CONFIG_LIBDIR=$work/pkgconfig PKG_CONFIG_PATH=
! pkg-config --exists libibmad || fail "libibmad still visible to pkg-config"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src" -B "$work/build" "${generator[@]}" -DBUILD_TESTING=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
    >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; fail "configure failed"; }
# A REQUIRED find of a disabled package fails the configure; an optional one must not find it.
if grep -E '^(Catch2_DIR|benchmark_DIR):PATH=/|^IBMAD_FOUND' "$work/build/CMakeCache.txt"; then
    fail "the configure looked for test equipment"
fi

cmake --build "$work/build" -j2 >"$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log" >&2; fail "build failed"; }
for test_only in localsa-fleet simhca-relay unit_tests localsa_bench sim-ud-subscriber; do
    [[ ! -e $work/build/bin/$test_only ]] || fail "$test_only was built"
done
"$(dirname "$0")/install.sh" "$work/build"
echo "without-tests: configured, built and installed without Catch2, benchmark, libibmad"
