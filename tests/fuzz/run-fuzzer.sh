#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time: first every input of the seed corpus (regression
# inputs included), then new inputs. Fails on any crash, sanitizer report, leak, timeout or
# out-of-memory. New interesting inputs go to WORK_DIR/corpus, never into the seed corpus.
#   run-fuzzer.sh FUZZER SEED_CORPUS_DIR WORK_DIR [extra libFuzzer flags]
#   LOCALSA_FUZZ_SECONDS   how long (default 30)
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3
shift 3
seconds=${LOCALSA_FUZZ_SECONDS:-30}
mkdir -p "$work/corpus" "$work/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$@" \
    "$work/corpus" "$seeds"
