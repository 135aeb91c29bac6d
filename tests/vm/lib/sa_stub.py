#!/usr/bin/env python3
"""Stand-ins for the sa_redirect fail-open test (inside the guest).

  sa_stub.py relay /dev/simhcaN LOG     the fabric of one simhca port: sets the port ACTIVE
                                        (LID 5, SM LID 1) and answers every SA Get sent to
                                        the SM LID with an empty GetResp, logging
                                        "SM attr=0xNNNN t=SECONDS" per query; SA Gets
                                        to other LIDs are dropped ("DROP ..."). SIGUSR1: client
                                        re-register; SIGUSR2: move the port to LID 7.
  sa_stub.py localsa /dev/infiniband/umadN LOG
                                        a local SA: registers for SA Get on the port and
                                        answers every one, logging "LOCAL attr=0xNNNN".
"""
import fcntl
import os
import select
import signal
import struct
import sys
import time

LID, SM_LID = 5, 1
MSG = struct.Struct("<II280s")            # struct simhca_msg
MAD = struct.Struct("<HHIIIHBBI256s")     # struct simhca_mad
SIMHCA_MSG_MAD, SIMHCA_MSG_PORT = 1, 2
SIMHCA_PORT_F_CLIENT_REREG = 1
QKEY = 0x80010000


def log(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def response(mad):
    """The request turned into a successful GetResp."""
    resp = bytearray(mad)
    resp[3] = 0x81
    resp[4:6] = b"\0\0"
    return bytes(resp)


def port_msg(lid, flags=0):
    body = struct.pack(">QQQ", 0x0002C90300001234, 0x0002C90300001235, 0xFE80000000000000)
    # cap_mask, lid, sm_lid, lmc, sm_sl, state ACTIVE, phys LinkUp, width 1x, speed SDR,
    # active/max MTU 2048, subnet_timeout, init_type_reply, max_vl_num, reserved
    body += struct.pack("<IHHBBBBBBBBBBBB", 0, lid, SM_LID, 0, 0, 4, 5, 1, 1, 4, 4, 18, 0, 1, 0)
    body += struct.pack("<32H", 0xFFFF, *([0] * 31))
    return MSG.pack(SIMHCA_MSG_PORT, flags, body.ljust(280, b"\0"))


def relay(dev, path):
    fd = os.open(dev, os.O_RDWR)
    pending = []
    lid = [LID]
    signal.signal(signal.SIGUSR1, lambda *_: pending.append(SIMHCA_PORT_F_CLIENT_REREG))
    signal.signal(signal.SIGUSR2, lambda *_: (lid.__setitem__(0, 7), pending.append(0)))
    os.write(fd, port_msg(lid[0]))
    log(path, "PORT lid=%d" % lid[0])
    while True:
        while pending:
            os.write(fd, port_msg(lid[0], pending.pop(0)))
            log(path, "PORT lid=%d" % lid[0])
        try:
            r, _, _ = select.select([fd], [], [], 0.2)
        except InterruptedError:
            continue
        if not r:
            continue
        mtype, _, body = MSG.unpack(os.read(fd, MSG.size))
        if mtype != SIMHCA_MSG_MAD:
            continue
        dlid, slid, dqpn, sqpn, _, pkey_index, sl, _, length, mad = MAD.unpack(body)
        if mad[1] != 0x03 or mad[3] != 0x01:
            continue
        attr = struct.unpack(">H", mad[16:18])[0]
        if dlid != SM_LID:  # a silent redirect target
            log(path, "DROP dlid=0x%x attr=0x%04x t=%.3f" % (dlid, attr, time.monotonic()))
            continue
        log(path, "SM attr=0x%04x t=%.3f" % (attr, time.monotonic()))
        out = MAD.pack(slid, SM_LID, sqpn, 1, QKEY, pkey_index, sl, 0, length, response(mad))
        os.write(fd, MSG.pack(SIMHCA_MSG_MAD, 0, out))


def localsa(dev, path):
    fd = os.open(dev, os.O_RDWR)
    # struct ib_user_mad_reg_req (28 bytes): id, method_mask (2 longs, 4-aligned): Get,
    # qpn 1, class 0x03 version 2, oui, rmpp_version 1
    req = bytearray(struct.pack("<IQQBBB3sB", 0, 1 << 0x01, 0, 1, 0x03, 2, b"\0\0\0", 1).ljust(28, b"\0"))
    fcntl.ioctl(fd, (3 << 30) | (28 << 16) | (0x1B << 8) | 0x01, req, True)  # REGISTER_AGENT
    agent = struct.unpack("<I", req[:4])[0]
    log(path, "REGISTERED agent=%d" % agent)
    hdr_size = 56  # struct ib_user_mad_hdr_old
    while True:
        buf = os.read(fd, hdr_size + 256)
        mad = buf[hdr_size:]
        if len(mad) < 24 or mad[1] != 0x03 or mad[3] != 0x01:
            continue
        attr = struct.unpack(">H", mad[16:18])[0]
        log(path, "LOCAL attr=0x%04x" % attr)
        # back to the sender: keep qpn (20), lid (28) and sl (30) of the received header
        out = bytearray(buf[:hdr_size])
        out[0:20] = struct.pack("<IIIII", agent, 0, 0, 0, 0)
        out[24:28] = struct.pack(">I", QKEY)
        out[31:33] = b"\0\0"  # path bits, no GRH
        os.write(fd, bytes(out) + response(mad))


if __name__ == "__main__":
    {"relay": relay, "localsa": localsa}[sys.argv[1]](sys.argv[2], sys.argv[3])
