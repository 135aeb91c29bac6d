#!/usr/bin/env python3
"""docs/grafana/localsa-dashboard.json is a Grafana dashboard whose every localsa_* metric is one
that localsad exports (localsactl stats --format prometheus): the engine's counters with _total,
or a gauge that the stats reply holds."""
import json
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[2]
dashboard = json.loads((root / "docs/grafana/localsa-dashboard.json").read_text())
counters = re.findall(r"^\s*X\(([a-z_]+)\)", (root / "userspace/engine/counters.hpp").read_text(), re.M)
gauges = set()
for src in list((root / "userspace/engine").rglob("*.cpp")) + [root / "userspace/daemon/main.cpp"]:
    gauges |= set(re.findall(r'j\["([a-z_]+)"\]\s*=', src.read_text()))
known = {f"localsa_{c}_total" for c in counters} | {f"localsa_{g}" for g in gauges}
known |= {"localsa_preload_state", "localsa_port_info"}
# The kernel's sa_redirect of the port (daemon/metrics.cpp, when debugfs is readable).
known |= {"localsa_kernel_redirected_total", "localsa_kernel_fallen_back_total",
          "localsa_kernel_probed_total", "localsa_kernel_redirect_target",
          "localsa_kernel_redirect_state"}
errors = []
if not dashboard.get("panels"):
    errors.append("no panels")
for panel in dashboard.get("panels", []):
    for target in panel.get("targets", []):
        for metric in re.findall(r"\blocalsa_[a-z_]+", target.get("expr", "")):
            if metric not in known:
                errors.append(f'panel "{panel["title"]}": {metric} is not exported')
for template in dashboard.get("templating", {}).get("list", []):
    for metric in re.findall(r"\blocalsa_[a-z_]+", template.get("query", "")):
        if metric not in known:
            errors.append(f'variable {template["name"]}: {metric} is not exported')
if errors:
    print("dashboard: " + "\ndashboard: ".join(errors), file=sys.stderr)
    sys.exit(1)
print(f"dashboard: {len(dashboard['panels'])} panels, every metric exported")
