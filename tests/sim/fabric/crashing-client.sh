#!/usr/bin/env bash
# A stand-in client for the harness test (client-retry.test.sh): crashes with SIGSEGV in its
# first N starts before it is up, as umad2sim does now and then, then behaves as told.
#   crashing-client.sh --state FILE --crashes N [--ready-file PATH] [--exit S]
#                      [--crash-after-ready] [--run-s SECONDS]
# --state counts the starts; --exit S exits with S before it is up (a failure of its own);
# --ready-file creates PATH when up; --crash-after-ready dies of SIGSEGV 0.3 s after that;
# --run-s stays up that long (default 0), then exits 0. Prints "start K" on every start.
set -u
state="" crashes=0 ready="" exit_status="" crash_after=0 run_s=0
while [[ $# -gt 0 ]]; do
    case "$1" in
    --state) state=$2; shift 2 ;;
    --crashes) crashes=$2; shift 2 ;;
    --ready-file) ready=$2; shift 2 ;;
    --exit) exit_status=$2; shift 2 ;;
    --crash-after-ready) crash_after=1; shift ;;
    --run-s) run_s=$2; shift 2 ;;
    *) echo "crashing-client: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
ulimit -c 0 # no core files
start=$(($(cat "$state" 2>/dev/null || echo 0) + 1))
echo "$start" >"$state"
echo "start $start"
if ((start <= crashes)); then
    sleep 0.1
    kill -SEGV $$
fi
[[ -z $exit_status ]] || exit "$exit_status"
[[ -z $ready ]] || : >"$ready"
if ((crash_after)); then
    sleep 0.3
    kill -SEGV $$
fi
sleep "$run_s"
exit 0
