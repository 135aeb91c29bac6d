#!/usr/bin/env python3
"""Stand-ins for the sa_redirect fail-open test (inside the guest).

  sa_stub.py relay /dev/simhcaN LOG     the fabric of one simhca port: sets the port ACTIVE
                                        (LID 5, SM LID 1) and answers the SA requests sent
                                        to these LIDs, logging "ROLE attr=0xNNNN
                                        method=0xNN t=SECONDS" per request:
                                          0x1 SM       answers every request (echo, status 0)
                                          0xb NOAGENT  a node with no SA agent: its MAD layer
                                                       refuses Get and Set (status 0x000c)
                                                       and drops the rest
                                          0xc PARTIAL  an SA that answers ClassPortInfo and
                                                       refuses every other attribute (0x000c)
                                          0xd SLOW     an SA that answers ClassPortInfo at
                                                       once and everything else after 0.6 s
                                        Requests to other LIDs are dropped ("DROP ...").
                                        SIGUSR1: client re-register; SIGUSR2: move the port to
                                        LID 7; SIGHUP: SM LID 0 <-> 1.
  sa_stub.py localsa /dev/infiniband/umadN LOG [DELAY]
                                        a local SA: registers for SA Get on the port and
                                        answers every one (after DELAY seconds), logging
                                        "LOCAL attr=0xNNNN".
  sa_stub.py localsa-sets /dev/infiniband/umadN LOG
                                        the same, registered for Get, Set and Delete as
                                        localsad is, answering all of them.
  sa_stub.py localsa-relaydie /dev/infiniband/umadN LOG
                                        registered for Get, Set and Delete; answers Gets,
                                        relays the first Set to the SM (LID 1) without
                                        answering it, logs "RELAYED" and exits.
"""
import fcntl
import heapq
import os
import select
import signal
import struct
import sys
import time

LID, SM_LID = 5, 1
NOAGENT_LID, PARTIAL_LID, SLOW_LID = 0xB, 0xC, 0xD
SLOW_DELAY = 0.6
CLASS_PORT_INFO = 0x0001
UNSUPPORTED_METHOD_ATTRIB = 0x000C
MSG = struct.Struct("<II280s")            # struct simhca_msg
MAD = struct.Struct("<HHIIIHBBI256s")     # struct simhca_mad
SIMHCA_MSG_MAD, SIMHCA_MSG_PORT = 1, 2
SIMHCA_PORT_F_CLIENT_REREG = 1
QKEY = 0x80010000
GET, SET, GET_TABLE, GET_MULTI, DELETE = 0x01, 0x02, 0x12, 0x14, 0x15
RESPONSE = {GET: 0x81, SET: 0x81, GET_TABLE: 0x92, GET_MULTI: 0x94, DELETE: 0x95}


def log(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def response(mad, status=0):
    """The request turned into its response, with STATUS."""
    resp = bytearray(mad)
    resp[3] = RESPONSE.get(mad[3], 0x81)
    resp[4:6] = struct.pack(">H", status)
    return bytes(resp)


def port_msg(lid, sm_lid, flags=0):
    body = struct.pack(">QQQ", 0x0002C90300001234, 0x0002C90300001235, 0xFE80000000000000)
    # cap_mask, lid, sm_lid, lmc, sm_sl, state ACTIVE, phys LinkUp, width 1x, speed SDR,
    # active/max MTU 2048, subnet_timeout, init_type_reply, max_vl_num, reserved
    body += struct.pack("<IHHBBBBBBBBBBBB", 0, lid, sm_lid, 0, 0, 4, 5, 1, 1, 4, 4, 18, 0, 1, 0)
    body += struct.pack("<32H", 0xFFFF, *([0] * 31))
    return MSG.pack(SIMHCA_MSG_PORT, flags, body.ljust(280, b"\0"))


def relay(dev, path):
    fd = os.open(dev, os.O_RDWR)
    pending = []
    state = {"lid": LID, "sm_lid": SM_LID}
    later = []  # (due, seq, message): delayed answers of the slow SA
    seq = 0

    def move(_sig, _frame):
        state["lid"] = 7
        pending.append(0)

    def toggle_sm(_sig, _frame):
        state["sm_lid"] = 0 if state["sm_lid"] else SM_LID
        pending.append(0)

    signal.signal(signal.SIGUSR1, lambda *_: pending.append(SIMHCA_PORT_F_CLIENT_REREG))
    signal.signal(signal.SIGUSR2, move)
    signal.signal(signal.SIGHUP, toggle_sm)
    os.write(fd, port_msg(state["lid"], state["sm_lid"]))
    log(path, "PORT lid=%d sm_lid=%d" % (state["lid"], state["sm_lid"]))
    while True:
        while pending:
            os.write(fd, port_msg(state["lid"], state["sm_lid"], pending.pop(0)))
            log(path, "PORT lid=%d sm_lid=%d" % (state["lid"], state["sm_lid"]))
        now = time.monotonic()
        while later and later[0][0] <= now:
            os.write(fd, heapq.heappop(later)[2])
        wait = 0.2 if not later else max(0.0, min(0.2, later[0][0] - now))
        try:
            r, _, _ = select.select([fd], [], [], wait)
        except InterruptedError:
            continue
        if not r:
            continue
        mtype, _, body = MSG.unpack(os.read(fd, MSG.size))
        if mtype != SIMHCA_MSG_MAD:
            continue
        dlid, slid, dqpn, sqpn, _, pkey_index, sl, _, length, mad = MAD.unpack(body)
        if mad[1] != 0x03 or mad[3] & 0x80:
            continue
        attr = struct.unpack(">H", mad[16:18])[0]
        method = mad[3]
        role = {SM_LID: "SM", NOAGENT_LID: "NOAGENT", PARTIAL_LID: "PARTIAL",
                SLOW_LID: "SLOW"}.get(dlid, "DROP")
        log(path, "%s dlid=0x%x attr=0x%04x method=0x%02x t=%.3f"
            % (role, dlid, attr, method, time.monotonic()))
        status, delay = 0, 0.0
        if role == "DROP" or (role == "SM" and not state["sm_lid"]):
            continue
        if role == "NOAGENT":
            if method not in (GET, SET):
                continue
            status = UNSUPPORTED_METHOD_ATTRIB
        elif role == "PARTIAL" and attr != CLASS_PORT_INFO:
            status = UNSUPPORTED_METHOD_ATTRIB
        elif role == "SLOW" and attr != CLASS_PORT_INFO:
            delay = SLOW_DELAY
        out = MAD.pack(slid, dlid, sqpn, 1, QKEY, pkey_index, sl, 0, length,
                       response(mad, status))
        msg = MSG.pack(SIMHCA_MSG_MAD, 0, out)
        if delay:
            seq += 1
            heapq.heappush(later, (time.monotonic() + delay, seq, msg))
        else:
            os.write(fd, msg)


def localsa(dev, path, delay=0.0, mode="get"):
    fd = os.open(dev, os.O_RDWR)
    # struct ib_user_mad_reg_req (28 bytes): id, method_mask (2 longs, 4-aligned): Get
    # (and Set, Delete), qpn 1, class 0x03 version 2, oui, rmpp_version 1
    mask = 1 << GET
    if mode != "get":
        mask |= 1 << SET | 1 << DELETE
    req = bytearray(struct.pack("<IQQBBB3sB", 0, mask, 0, 1, 0x03, 2, b"\0\0\0", 1).ljust(28, b"\0"))
    fcntl.ioctl(fd, (3 << 30) | (28 << 16) | (0x1B << 8) | 0x01, req, True)  # REGISTER_AGENT
    agent = struct.unpack("<I", req[:4])[0]
    log(path, "REGISTERED agent=%d" % agent)
    hdr_size = 56  # struct ib_user_mad_hdr_old
    while True:
        buf = os.read(fd, hdr_size + 256)
        mad = buf[hdr_size:]
        if len(mad) < 24 or mad[1] != 0x03 or mad[3] & 0x80:
            continue
        attr = struct.unpack(">H", mad[16:18])[0]
        log(path, "LOCAL attr=0x%04x method=0x%02x t=%.3f" % (attr, mad[3], time.monotonic()))
        if mode == "relaydie" and mad[3] == SET:
            # to the SM: QP1, LID 1, no response expected by this agent
            out = bytearray(hdr_size)
            out[0:4] = struct.pack("<I", agent)
            out[20:24] = struct.pack(">I", 1)
            out[24:28] = struct.pack(">I", QKEY)
            out[28:30] = struct.pack(">H", SM_LID)
            os.write(fd, bytes(out) + mad)
            log(path, "RELAYED attr=0x%04x t=%.3f" % (attr, time.monotonic()))
            time.sleep(0.05)
            os._exit(0)
        if delay:
            time.sleep(delay)
        # back to the sender: keep qpn (20), lid (28) and sl (30) of the received header
        out = bytearray(buf[:hdr_size])
        out[0:20] = struct.pack("<IIIII", agent, 0, 0, 0, 0)
        out[24:28] = struct.pack(">I", QKEY)
        out[31:33] = b"\0\0"  # path bits, no GRH
        try:
            os.write(fd, bytes(out) + response(mad))
        except OSError as e:
            # a request that waited while the stub was stopped may be refused by ib_umad
            # (e.g. its sender's address is no longer valid); a local SA serves on
            log(path, "SEND-FAILED attr=0x%04x errno=%d" % (attr, e.errno))


if __name__ == "__main__":
    if sys.argv[1] == "relay":
        relay(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "localsa-sets":
        localsa(sys.argv[2], sys.argv[3], mode="sets")
    elif sys.argv[1] == "localsa-relaydie":
        localsa(sys.argv[2], sys.argv[3], mode="relaydie")
    else:
        localsa(sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
