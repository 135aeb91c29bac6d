#!/usr/bin/env python3
"""Every scenario of a localsa-fleet-scale JSON has the fields of issue 25 (the master's work with
localsa, the same client workload without localsa, the worst client wait, the capacity and its
source); usage: check_fields.py FILE SCENARIO..."""
import json
import sys

d = json.load(open(sys.argv[1]))
want = set(sys.argv[2:])
seen = set()
bad = []
for s in d["scenarios"]:
    name = s["scenario"]
    seen.add(name)
    for path in ("master.records", "master.queries", "master.dropped", "master.peak_over_capacity",
                 "master.busy", "without_localsa.records", "without_localsa.queries",
                 "without_localsa.dropped", "without_localsa.peak_over_capacity",
                 "without_localsa.worst_client_wait_s", "clients.worst_wait_s",
                 "master_capacity.records_per_s", "master_capacity.transactions_per_s",
                 "master_capacity.queue", "master_capacity.source", "memory.max_rss_kb_per_node",
                 "memory.rss_per_node_bytes", "memory.limit_per_node_bytes"):
        v = s
        for k in path.split("."):
            v = v.get(k) if isinstance(v, dict) else None
        if v is None:
            bad.append(f"{name}: no {path}")
    # Every client question counts once without localsa; with localsa, some work was done.
    if s["without_localsa"]["queries"] != s["clients"]["queries"]:
        bad.append(f"{name}: without_localsa.queries {s['without_localsa']['queries']} != "
                   f"clients.queries {s['clients']['queries']}")
    if s["master"]["queries"] <= 0:
        bad.append(f"{name}: the master saw no query")
missing = want - seen
if missing:
    bad.append(f"scenarios missing: {sorted(missing)}")
for b in bad:
    print("check_fields:", b)
sys.exit(1 if bad else 0)
