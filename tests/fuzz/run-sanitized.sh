#!/usr/bin/env bash
# The sanitized test run: an ASan + UBSan build of localsa with clang-14 in build-san, then the
# unit, fuzz and sim tiers in it. Any sanitizer report fails the run (UBSan included: its checks
# are compiled non-recoverable and halt_on_error is set).
#   tests/fuzz/run-sanitized.sh                  unit + fuzz + sim
#   tests/fuzz/run-sanitized.sh -L unit          other ctest arguments replace the label filter
#   LOCALSA_FUZZ_SECONDS=N                       seconds per fuzz target (default 30)
#   LOCALSA_SAN_BUILD=DIR                        build directory (default build-san)
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${LOCALSA_SAN_BUILD:-build-san}
start=$SECONDS

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DLOCALSA_SANITIZE=ON \
    -DCMAKE_C_FLAGS="-fno-sanitize-recover=all" -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=all" \
    >/dev/null
cmake --build "$build" -j2
echo "run-sanitized: configured and built in $((SECONDS - start)) s"

# umad2sim (the sim tier's LD_PRELOAD) works under ASan's interceptors; its own overflow and the
# libraries' leaks at exit are suppressed by name (asan.supp, lsan.supp; docs/fuzzing.md).
supp=$PWD/tests/fuzz
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:suppressions=$supp/asan.supp}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$supp/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
if (($# == 0)); then
    set -- -L 'unit|fuzz|sim'
fi
rc=0
ctest --test-dir "$build" --output-on-failure --timeout 900 "$@" || rc=$?
echo "run-sanitized: done in $((SECONDS - start)) s (exit $rc)"
exit $rc
