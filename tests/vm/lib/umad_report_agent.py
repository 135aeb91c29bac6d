#!/usr/bin/env python3
"""Register a umad agent for SubnAdm Reports on QP1 of one port, as an event subscriber that
subscribes from QP1 must (OpenSM's osmtest does): the MAD layer hands an incoming Report only to
the agent registered for the method. Prints "registered" or "refused: <errno name>".
Exit 0 registered, 1 refused, 2 usage or no umad device for the port.
Usage: umad_report_agent.py CA PORT
"""
import errno
import fcntl
import os
import struct
import sys

# <rdma/ib_user_mad.h>: struct ib_user_mad_reg_req, 28 bytes with its tail padding;
# IB_USER_MAD_REGISTER_AGENT = _IOWR(0x1b, 1, struct ib_user_mad_reg_req).
REG_REQ = struct.Struct("=I4IBBB3sBx")
REGISTER_AGENT = (3 << 30) | (REG_REQ.size << 16) | (0x1B << 8) | 1
SUBN_ADM_CLASS, SUBN_ADM_VERSION, METHOD_REPORT = 0x03, 2, 0x06


def umad_device(ca: str, port: int) -> str:
    base = "/sys/class/infiniband_mad"
    for name in sorted(os.listdir(base)):
        if not name.startswith("umad"):
            continue
        with open(f"{base}/{name}/ibdev") as f:
            dev = f.read().strip()
        with open(f"{base}/{name}/port") as f:
            p = int(f.read())
        if dev == ca and p == port:
            return f"/dev/infiniband/{name}"
    raise LookupError(f"no umad device for {ca} port {port}")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        path = umad_device(sys.argv[1], int(sys.argv[2]))
    except (LookupError, ValueError, OSError) as e:
        print(e, file=sys.stderr)
        return 2
    mask = [1 << METHOD_REPORT, 0, 0, 0]
    req = bytearray(REG_REQ.pack(0, *mask, 1, SUBN_ADM_CLASS, SUBN_ADM_VERSION, b"\0\0\0", 0))
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.ioctl(fd, REGISTER_AGENT, req)
    except OSError as e:
        print(f"refused: {errno.errorcode.get(e.errno, e.errno)}")
        return 1
    finally:
        os.close(fd)  # unregisters the agent
    print("registered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
