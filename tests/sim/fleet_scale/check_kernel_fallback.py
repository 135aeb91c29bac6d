#!/usr/bin/env python3
"""The kernel's fallback rule in the fleet simulation (--kernel-fallback): the same cold
all-to-all job start (256 nodes above a preload threshold of 16) under each rule. A kernel that
sends a query to the master after sa_redirect_timeout_ms (timeout) fails open more than one that
keeps its Gets at a live local SA until the caller's timeout (probe, patch 8), and clients that
wait however long (wait) never fail open; the records the local SAs ask stay the same N^2.
Usage: check_kernel_fallback.py TIMEOUT.json PROBE.json WAIT.json"""
import json
import sys

runs = {}
for rule, path in zip(("timeout", "probe", "wait"), sys.argv[1:4]):
    d = json.load(open(path))
    if d["config"]["kernel_fallback"] != rule:
        sys.exit(f"{path}: kernel_fallback is {d['config']['kernel_fallback']}, not {rule}")
    runs[rule] = d["scenarios"][0]
for rule, r in runs.items():
    m = r["master"]
    print(f"{rule}: {m['fail_open_queries']} fail-opens, {m['dropped']} dropped, "
          f"{m['records']} records, worst wait {r['clients']['worst_wait_s']:.2f} s")
failed = False
fo = {rule: r["master"]["fail_open_queries"] for rule, r in runs.items()}
if not fo["timeout"] > fo["probe"]:
    print("the caller's timeout does not keep more Gets at the local SA than 200 ms does")
    failed = True
if fo["wait"] != 0:
    print("clients that wait failed open")
    failed = True
n = runs["wait"]["nodes"]
if runs["wait"]["master"]["records"] != n * n:
    print(f"the job's tables are not N^2 = {n * n} records")
    failed = True
sys.exit(1 if failed else 0)
