#!/usr/bin/env python3
"""Cold misses in a burst (issue 25, item 3): above --preload-max-ports an all-to-all job start
costs the master one GetTable per node (no PathRecord Get), drops nothing and sends no client to
the master by fail-open, and computes no more PathRecords than the same clients without localsa.
Usage: check_burst.py BURST.json READ_THROUGH.json (the same run with --burst-share 0, which must
show what the batching saves: drops or fail-opens)."""
import json
import sys

failed = False


def scenario(path):
    return json.load(open(path))["scenarios"][0]


burst, through = scenario(sys.argv[1]), scenario(sys.argv[2])
for name, r in (("burst", burst), ("read-through", through)):
    m = r["master"]
    print(f"{name} N={r['nodes']}: {m['by_kind']['path_table']} tables, "
          f"{m['by_kind']['path_get']} Gets, {m['records']} records, {m['queries']} queries, "
          f"{m['dropped']} dropped, {m['fail_open_queries']} fail-opens; without localsa "
          f"{r['without_localsa']['records']} records, {r['without_localsa']['dropped']} dropped")
m = burst["master"]
if m["by_kind"]["path_table"] != burst["nodes"]:
    print("not one table per node")
    failed = True
if m["by_kind"]["path_get"] != 0:
    print("PathRecord Gets reached the master")
    failed = True
if m["dropped"] or m["fail_open_queries"]:
    print("the master dropped queries, or clients failed open to it")
    failed = True
if m["records"] > burst["without_localsa"]["records"]:
    print("master records with localsa exceed those without localsa")
    failed = True
t = through["master"]
if not (t["dropped"] or t["fail_open_queries"]):
    print("read-through shows no drop and no fail-open: the scenario cannot tell the difference")
    failed = True
sys.exit(1 if failed else 0)
