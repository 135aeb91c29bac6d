#!/usr/bin/env python3
"""Checks that userspace/ includes only along the layer direction.

Every #include "..." of a file under userspace/ must name a header of the file's own unit or of
a unit that unit may depend on (ALLOWED below). A unit is a folder (or one header: the bottom of
the engine, which every part of it counts on). Usage: layers.py [userspace-dir]; exit 1 and one
line per wrong include when there is one.
"""
import pathlib
import re
import sys

# unit -> units it may include. The longest unit that prefixes a file's path is its unit.
ALLOWED = {
    "ib/": [],
    "transport/": ["ib/"],
    "transport/umad/": ["ib/", "transport/transport.hpp"],
    "transport/sim/": ["ib/", "transport/transport.hpp"],
    # The port's events over libibverbs, behind transport.hpp's PortEventSource.
    "transport/verbs/": ["ib/", "transport/transport.hpp"],
    # The kernel's netlink local path service: its messages (bytes only) and its socket.
    "transport/netlink/": [],
    # The engine's bottom: counters, sending (counted), the clock; every part of it uses them.
    "engine/counters.hpp": [],
    "engine/send.hpp": ["ib/", "transport/transport.hpp", "engine/counters.hpp"],
    "engine/counters.cpp": ["engine/counters.hpp"],
    "engine/clock.hpp": [],
    "engine/log_limiter.hpp": [],
    "engine/upstream/": ["ib/", "transport/transport.hpp", "engine/counters.hpp", "engine/send.hpp",
                         "engine/clock.hpp"],
    "engine/cache/": ["ib/", "engine/clock.hpp"],
    "engine/proxy/": ["ib/", "transport/transport.hpp", "engine/counters.hpp", "engine/send.hpp",
                      "engine/upstream/"],
    "engine/events/": ["ib/", "transport/transport.hpp", "engine/counters.hpp", "engine/send.hpp",
                       "engine/clock.hpp", "engine/upstream/"],
    "engine/handlers/": ["ib/", "transport/transport.hpp", "engine/counters.hpp", "engine/send.hpp",
                         "engine/clock.hpp", "engine/log_limiter.hpp", "engine/upstream/", "engine/proxy/",
                         "engine/cache/", "engine/events/"],
    "engine/coherence/": ["ib/", "transport/transport.hpp", "engine/counters.hpp", "engine/send.hpp",
                          "engine/clock.hpp", "engine/upstream/", "engine/cache/",
                          "engine/events/", "engine/handlers/"],
    # The netlink local path service: RESOLVE turned into the Get ib_sa would send, answered by
    # the dispatcher through the transport it wraps.
    "engine/netlink/": ["ib/", "transport/transport.hpp", "transport/netlink/ls_message.hpp",
                        "engine/counters.hpp", "engine/clock.hpp"],
    # The dispatcher: wires every part of the engine. The simulator's quirks stay below it.
    "engine/": ["ib/", "transport/transport.hpp", "engine/"],
    "control/": [],
    "daemon/": ["ib/", "transport/", "engine/", "control/"],
    "tools/": ["ib/", "transport/transport.hpp", "transport/umad/", "control/"],
    "sim/fleet/": ["ib/", "transport/", "engine/"],
    # The fleet-scale driver: local SAs (the engine) against an in-process master model.
    "sim/fleet_scale/": ["ib/", "transport/", "engine/"],
    "sim/simhca_relay/": [],
    # The OpenSM event plugin: C against libopensm-dev, runs inside OpenSM, shares nothing.
    "opensm/": [],
}


def unit_of(path):
    best = None
    for unit in ALLOWED:
        if path == unit or (unit.endswith("/") and path.startswith(unit)):
            if best is None or len(unit) > len(best):
                best = unit
    return best


def allowed(unit, target):
    if unit.endswith("/") and target.startswith(unit) and unit_of(target) == unit:
        return True
    for dep in ALLOWED[unit]:
        if target == dep or (dep.endswith("/") and target.startswith(dep)):
            return True
    return False


def check(root):
    root = pathlib.Path(root)
    errors = []
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for source in sorted(root.rglob("*")):
        if source.suffix not in (".hpp", ".cpp", ".h", ".c"):
            continue
        rel = source.relative_to(root).as_posix()
        unit = unit_of(rel)
        if unit is None:
            errors.append(f"{rel}: in no layer (add its folder to tests/lint/layers.py)")
            continue
        for number, line in enumerate(source.read_text().splitlines(), 1):
            m = include.match(line)
            if not m:
                continue
            target = m.group(1)
            if "/" not in target:
                continue  # a header next to the file (simhca-relay's, kernel ABI)
            if not (root / target).exists():
                errors.append(f"{rel}:{number}: includes \"{target}\", not in userspace/")
            elif not allowed(unit, target):
                errors.append(f"{rel}:{number}: {unit} must not include \"{target}\" "
                              f"(against the layer direction)")
    return errors


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "userspace"
    errors = check(root)
    for e in errors:
        print(f"layers: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
