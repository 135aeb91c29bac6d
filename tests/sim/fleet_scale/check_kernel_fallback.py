#!/usr/bin/env python3
"""The kernel's fallback rule in the fleet simulation (--kernel-fallback): the same cold
all-to-all job start (256 nodes above a preload threshold of 16) under each rule. Whatever the
kernel does with a Get its live local SA has not answered (to the master after
sa_redirect_timeout_ms: timeout; after the caller's timeout: probe, patch 8; never: wait), the
master computes the job's N^2 records once, in the paced tables, and nothing else: a table
paced past what the requesters wait has them answered BUSY (the kernel hands that to the
caller, who retries) instead of sending them to the master; every client answered BUSY is served
by the table later. Before BUSY, timeout and probe sent 59,160 and 2,040 Gets to the master.
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
    m, c = r["master"], r["clients"]
    print(f"{rule}: {m['fail_open_queries']} fail-opens, {m['dropped']} dropped, "
          f"{m['records']} records, {c['busy']} answered BUSY ({c['answered_after_busy']} served "
          f"later), worst wait {c['worst_wait_s']:.2f} s")
failed = False
n = runs["wait"]["nodes"]
for rule, r in runs.items():
    m, c = r["master"], r["clients"]
    if m["fail_open_queries"] or m["dropped"]:
        print(f"{rule}: the kernel sent Gets to the master ({m['fail_open_queries']}), "
              f"{m['dropped']} dropped")
        failed = True
    if m["records"] != n * n:
        print(f"{rule}: the job cost {m['records']} records, not its tables' N^2 = {n * n}")
        failed = True
    if c["answered_after_busy"] != c["busy"]:
        print(f"{rule}: {c['busy'] - c['answered_after_busy']} clients answered BUSY never served")
        failed = True
for rule in ("timeout", "probe"):
    if runs[rule]["clients"]["busy"] == 0:
        print(f"{rule}: no client answered BUSY: the tables were not paced past their wait")
        failed = True
if runs["wait"]["clients"]["busy"] != 0:
    print("wait: clients that wait for their local SA were answered BUSY")
    failed = True
sys.exit(1 if failed else 0)
