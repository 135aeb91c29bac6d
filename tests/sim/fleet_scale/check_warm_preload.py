#!/usr/bin/env python3
"""Preload shaped by use (issue 25, item 3): above --preload-max-ports the nodes ask no table
(preload_transactions 0) and a power-on costs the master no more PathRecords than the same
clients without localsa (master.records <= without_localsa.records)."""
import json
import sys

report = json.load(open(sys.argv[1]))
failed = False
for r in report["scenarios"]:
    tables = r["local_sa_counters"]["preload_transactions"]
    with_ = r["master"]["records"]
    without = r["without_localsa"]["records"]
    print(f"{r['scenario']} N={r['nodes']}: {tables} preload tables, {with_} records with "
          f"localsa, {without} without")
    if tables:
        print("a node asked a table above --preload-max-ports")
        failed = True
    if with_ > without:
        print("master records with localsa exceed those without localsa")
        failed = True
sys.exit(1 if failed else 0)
