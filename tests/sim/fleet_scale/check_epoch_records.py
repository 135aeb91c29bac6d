#!/usr/bin/env python3
"""Steady state with the routing epoch: the master computes no more PathRecords for the local SAs
than for the same clients without localsa (master.records <= without_localsa.records)."""
import json
import sys

report = json.load(open(sys.argv[1]))
failed = False
for r in report["scenarios"]:
    if r["scenario"] != "steady":
        continue
    with_ = r["master"]["records"]
    without = r["without_localsa"]["records"]
    print(f"steady N={r['nodes']} routing_epoch={r['routing_epoch']}: "
          f"{with_} records with localsa, {without} without")
    if with_ > without:
        print("master records with localsa exceed those without localsa")
        failed = True
sys.exit(1 if failed else 0)
