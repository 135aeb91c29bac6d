#!/usr/bin/env python3
"""Shows that layers.py refuses each backward include: the real userspace/ tree passes, and a
copy of it with one wrong include added fails, naming that file and line."""
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
CHECK = HERE / "layers.py"

# (file, include added to it): each goes against the direction.
BACKWARD = [
    ("engine/upstream/upstream_client.hpp", "daemon/options.hpp"),  # the bottom reaches up
    ("engine/proxy/proxy.hpp", "engine/local_sa.hpp"),
    ("engine/events/report_fanout.hpp", "daemon/reload.hpp"),
    ("engine/coherence/coherence.hpp", "engine/local_sa.hpp"),  # coherence <-> dispatcher
    ("engine/handlers/path_record_service.hpp", "engine/coherence/coherence.hpp"),
    ("transport/transport.hpp", "engine/cache/path_cache.hpp"),
    ("ib/path_record.hpp", "transport/transport.hpp"),
    ("tools/localsactl.cpp", "daemon/control_server.hpp"),  # the tool reaches the server
    ("control/client.hpp", "engine/counters.hpp"),
    ("engine/local_sa.hpp", "daemon/options.hpp"),
]


def run(root):
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True,
                          text=True)


def main(source):
    failures = 0
    clean = run(source)
    if clean.returncode != 0:
        print(f"layers_test: the tree itself fails:\n{clean.stderr}", file=sys.stderr)
        failures += 1
    with tempfile.TemporaryDirectory() as tmp:
        for file, target in BACKWARD:
            tree = pathlib.Path(tmp) / "userspace"
            shutil.rmtree(tree, ignore_errors=True)
            shutil.copytree(source, tree)
            path = tree / file
            path.write_text(f'#include "{target}"\n' + path.read_text())
            result = run(tree)
            if result.returncode == 0 or f"{file}:1:" not in result.stderr:
                print(f"layers_test: {file} including {target} was not refused:\n"
                      f"{result.stderr}", file=sys.stderr)
                failures += 1
            else:
                print(f"refused as expected: {result.stderr.strip()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "userspace")))
