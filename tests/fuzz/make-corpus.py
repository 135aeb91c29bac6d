#!/usr/bin/env python3
"""Writes the seed corpus: tests/fuzz/corpus/{codec,dispatch,netlink}/. Run again after changing the
input formats of the targets (codec_fuzz.cpp, dispatch_fuzz.cpp); inputs named regress-* are
regression inputs found by fuzzing and are kept as they are."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def gid(guid):
    return struct.pack(">QQ", 0xFE80000000000000, guid)


def sa_mad(method, attr, tid=0x42, mask=0, data=b"", status=0, sm_key=0, attr_offset=0,
           rmpp=b"\0" * 12, mgmt=3, cver=2, size=256):
    hdr = struct.pack(">BBBBHHQHHI", 1, mgmt, cver, method, status, 0, tid, attr, 0, 0)
    sa = rmpp + struct.pack(">QHHQ", sm_key, attr_offset, 0, mask)
    body = hdr + sa + data
    return body + b"\0" * max(0, size - len(body))


def path_record(sgid=0x100003, dguid=0x100005, dlid=0, slid=0, reversible=1, numb=1, pkey=0,
                mtu=0, rate=0, life=0):
    return (struct.pack(">Q", 0) + gid(dguid) + gid(sgid) + struct.pack(">HH", dlid, slid) +
            struct.pack(">I", 0) + bytes([0, reversible << 7 | numb]) + struct.pack(">HH", pkey, 0) +
            bytes([mtu, rate, life, 0]) + b"\0" * 6)


PR_MASK = (1 << 2) | (1 << 3) | (1 << 11) | (1 << 12)  # DGID SGID Reversible NumbPath


def rmpp_hdr(paylen):
    return struct.pack(">BBBBII", 1, 1, 0x07, 0, 1, paylen)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def codec():
    pr_get = sa_mad(0x01, 0x35, mask=PR_MASK, data=path_record())
    recs = b"".join(path_record(dlid=0x10 + i, slid=5, mtu=4, rate=7, life=18) for i in range(3))
    pr_table = sa_mad(0x92, 0x35, attr_offset=8, data=recs, rmpp=rmpp_hdr(len(recs) + 40),
                      size=56 + len(recs))
    node_get = sa_mad(0x01, 0x11, mask=1, data=struct.pack(">H", 7))
    notice = struct.pack(">IHHH", 0x80000000 | 3 << 24, 64, 1, 1) + b"\0" * 6 + gid(0x100005)
    notice += b"\0" * (80 - len(notice))
    report = sa_mad(0x06, 0x02, data=notice)
    smi = bytearray(256)
    smi[0:4] = bytes([1, 0x81, 1, 1])
    smi[16:18] = struct.pack(">H", 0x20)
    inform = gid(0) + struct.pack(">HHHBBHHII", 0xFFFF, 0, 0, 1, 1, 0xFFFF, 64, 0, 0xFFFFFF)
    samples = {
        "pr-get": pr_get, "pr-gettable-resp": pr_table, "node-get": node_get, "report": report,
        "sminfo": bytes(smi), "informinfo-set": sa_mad(0x02, 0x03, data=inform),
        "short": pr_get[:40], "pr-get-resp-short": sa_mad(0x81, 0x35, attr_offset=8, size=56),
        "getresp-rmpp-liar": sa_mad(0x92, 0x35, attr_offset=8, rmpp=rmpp_hdr(0xFFFFFFFF),
                                    data=recs),
    }
    for name, mad in samples.items():
        for sel in range(4):
            write("codec", f"{name}-{sel}", bytes([sel]) + mad)
    # masked_path_record: mask then record
    write("codec", "masked-defined", bytes([1]) + struct.pack(">Q", (1 << 23) - 1) + path_record())
    # response_records: record size then response
    write("codec", "records-64", bytes([2, 64]) + pr_table)
    # make_*_response: status, record size / 8, records length, records, request
    write("codec", "responses", bytes([3]) + struct.pack(">HBB", 0x300, 8, 64) + recs[:64] + pr_get)


# dispatch input: flags, limits, then operations (see dispatch_fuzz.cpp)
ALL_LIMITS = 0xFF  # 4 outstanding, 7 queued, 7 cache entries


def req(who, which, arg=5, tid=(0, 1), flags=0, patches=(), length=0):
    out = [0, who, which, arg, tid[0], tid[1], flags, len(patches)]
    for off, val in patches:
        out += [off, val]
    return out + [length]


def resp(index, status=0, records=1, rmpp=0, frm=0, patches=(), length=0):
    out = [2, index, status, records, rmpp, frm, len(patches)]
    for off, val in patches:
        out += [off, val]
    return out + [length]


def raw(who, data):
    return [4, who, len(data) >> 8, len(data) & 0xFF] + list(data)


POLL, FAILED, STATS = [5], [6], [9]


def port(v):
    return [7, v]


def refresh(limit=7):
    return [8, limit]


def dispatch():
    seqs = {
        "pr-miss-then-hit": [0, ALL_LIMITS] + req(0, 0) + resp(0) + req(0, 0, tid=(0, 2)) + STATS,
        "pr-coalesce": [0, ALL_LIMITS] + req(0, 0) + req(1, 0, tid=(0, 2)) + req(0, 0) + resp(0),
        "pr-gettable": [0, ALL_LIMITS] + req(0, 1) + resp(0, records=3, rmpp=1) + req(0, 1, tid=(1, 1)),
        "pr-gettable-truncated": [0, ALL_LIMITS] + req(0, 2) + resp(0, records=5, rmpp=1, length=100),
        "pr-foreign": [0, ALL_LIMITS] + req(2, 0) + resp(0) + req(2, 0, tid=(0, 9)) + resp(1),
        "pr-sm-key": [0, ALL_LIMITS] + req(0, 0, flags=1) + resp(0),
        "pr-no-records": [16, ALL_LIMITS] + req(0, 0) + resp(0, status=4, records=0) + req(0, 0),
        "pr-local-errors": [0, ALL_LIMITS] + req(0, 0, arg=0x25) + req(0, 0, arg=0x45,
                                                                        patches=[(56 + 54, 0x87)]),
        "node-record": [0, ALL_LIMITS] + req(2, 3, arg=7) + resp(0, records=0x81),
        "cpi": [64, ALL_LIMITS] + resp(0, records=0x89) + req(0, 4) + req(2, 4, tid=(0, 3)),
        "report": [0, ALL_LIMITS] + req(0, 0) + resp(0) + req(3, 7, arg=1) + req(0, 0, tid=(0, 4)),
        "sminfo": [4, ALL_LIMITS] + req(3, 8) + req(3, 9, tid=(0, 2)) + req(3, 8, length=100),
        "timeouts": [1, ALL_LIMITS] + req(0, 0) + req(2, 3) + POLL + POLL + POLL + resp(0),
        "busy": [0, ALL_LIMITS] + req(0, 0) + resp(0, status=3) + POLL + resp(1) + POLL,
        "busy-timeout0": [1, ALL_LIMITS] + req(0, 0) + resp(0, status=3) + POLL + resp(1),
        "overflow": [0, 0x00] + req(0, 0, arg=1) + req(0, 0, arg=2) + req(2, 3) + req(0, 5) + resp(0),
        "refresh": [8, ALL_LIMITS] + req(0, 0) + resp(0) + refresh() + resp(1, records=1),
        "no-master": [0, ALL_LIMITS] + port(6) + req(0, 0) + port(0) + req(0, 0) + resp(0),
        "port-down": [0, ALL_LIMITS] + port(1) + req(0, 0) + resp(0) + port(0) + req(0, 0),
        "proxied": [0, ALL_LIMITS] + req(0, 5) + req(0, 6) + req(2, 10) + req(0, 11) + req(0, 12) +
                   resp(0, records=0x80) + resp(1) + resp(2, records=0x82) + resp(3) + FAILED,
        "malformed": [0, ALL_LIMITS] + raw(0, b"\x01\x03" + b"\0" * 8) +
                     req(0, 0, patches=[(0, 2)]) + req(0, 0, patches=[(2, 1)]) +
                     req(0, 0, patches=[(3, 9)]) + req(0, 0, flags=2) + req(0, 0, length=40) +
                     req(0, 13, arg=0x55) + raw(3, sa_mad(0x81, 0x35, size=56)),
        "lmc": [32, ALL_LIMITS] + req(4, 0) + resp(0) + req(4, 0, tid=(0, 7)),
        # Found by the dispatcher's invariants: the SM LID becomes 0 (the SM is gone) while a
        # query is in flight; its retry must not be sent to LID 0.
        "regress-retry-to-lid0": [1, ALL_LIMITS] + req(0, 0) + port(6) + POLL,
    }
    for name, ops in seqs.items():
        write("dispatch", name, bytes(ops))
    events()


# Client event subscriptions (dispatch flag 128: a Coherence on the LocalSa, then one more
# configuration byte). Traps by index: 0-5 = 64 65 66 67 144 145, 6 = 128; 11 = 0xFFFF (Sets).
EVENTS = 0x80


def cset(who=0, trap=1, filt=0, sub=0):
    """A client's InformInfo Set: who 0 = LID 5 QPN 0x48, 1 = QPN 0x49, 2 = QP1, 5 = LID 9;
    sub 0 = subscribe, 1 = unsubscribe, 3 = Subscribe 2, 0xC0 = unsubscribe the held one."""
    return [10, who, trap, filt, sub]


def report(trap=1, notice=0, tid=0):
    """A Report from the master; tid 0x80 = the master resends the last one."""
    return [12, trap, notice, tid]


def ack(index=0, how=0):
    """A client's ReportResp: how 0 = right, 1 = wrong TID, 2 = wrong LID, 3 = wrong QPN."""
    return [13, index, how]


def inform_answer(index, status=0):
    """The master answers localsad's index-th InformInfo Set: status 0 OK, 3 BUSY, 4 REQ_INVALID."""
    return [14, index, status]


RESYNC = [15]
# The master confirms localsad's six own subscriptions (sent at start, 3 of them queued).
OWN_CONFIRMED = sum((inform_answer(i) for i in range(6)), [])


def events():
    seqs = {
        "events-own-trap": [EVENTS, ALL_LIMITS, 0] + OWN_CONFIRMED + cset(trap=1) + report(1) +
                           report(1, tid=0x80) + ack() + report(1) + ack(1, 1) + ack(1, 2) +
                           ack(1, 3) + cset(trap=1, sub=1) + report(1) + STATS,
        "events-extra-trap": [EVENTS, ALL_LIMITS, 0] + OWN_CONFIRMED + cset(trap=6) +
                             inform_answer(6) + report(6) + ack() + cset(who=1, trap=6) +
                             cset(trap=6, sub=1) + cset(who=1, trap=6, sub=1) + STATS,
        "events-refused": [EVENTS, ALL_LIMITS, 0] + OWN_CONFIRMED + cset(trap=6) +
                          inform_answer(6, 4) + cset(trap=6) + inform_answer(7, 3) + POLL,
        "events-timeout": [EVENTS | 1, ALL_LIMITS, 0] + cset(trap=6) + POLL + POLL + POLL,
        "events-undelivered": [EVENTS, ALL_LIMITS, 0x40] + OWN_CONFIRMED + cset(trap=1) +
                              report(1) + POLL + report(1) + POLL + report(1) + POLL + STATS,
        "events-denied": [EVENTS, ALL_LIMITS, 0] + OWN_CONFIRMED + cset(who=2) +
                         cset(trap=0x31) + cset(trap=11) + cset(sub=3) + cset(who=5) +
                         cset(sub=1),
        "events-full": [EVENTS, ALL_LIMITS, 0x04 | 0x10] + OWN_CONFIRMED + cset() + cset(who=1) +
                       cset(who=4) + report(1) + report(1),
        "events-no-subscribe": [EVENTS, ALL_LIMITS, 0x01] + cset(trap=1) + inform_answer(0) +
                               report(1) + cset(sub=0xC0),
        "events-resync": [EVENTS, ALL_LIMITS, 0] + OWN_CONFIRMED + cset(trap=6) +
                         inform_answer(6) + port(4) + report(6) + port(0) + POLL,
        "events-leave-then-resync": [EVENTS, ALL_LIMITS, 0] + OWN_CONFIRMED + cset(trap=6) +
                                    cset(trap=6, sub=1) + RESYNC,
        "events-resync-queue-full": [EVENTS, 0x00, 0] + resp(0) + cset(trap=6) + RESYNC,
    }
    for name, ops in seqs.items():
        write("dispatch", name, bytes(ops))


def nl_attr(kind, data, length=None, mandatory=True):
    head = struct.pack("<HH", 4 + len(data) if length is None else length,
                       kind | (1 << 13 if mandatory else 0))
    return head + data + b"\0" * (-len(data) % 4)


def nl_resolve(seq=1, device=b"fake0", port=1, use=0, attrs=b"", flags=1, op=0):
    body = device.ljust(64, b"\0") + bytes([port, use, 0, 0]) + attrs
    return struct.pack("<IHHII", 16 + len(body), (4 << 10) + op, flags, seq, 0) + body


def netlink():
    """Datagrams of the kernel's netlink local path service (netlink_fuzz.cpp)."""
    dgid = nl_attr(4, gid(0x100005))
    sgid = nl_attr(5, gid(0x100003))
    sid = nl_attr(3, struct.pack("<Q", 0x1060000))
    pkey = nl_attr(7, struct.pack("<H", 0xFFFF))
    rdma_cm = sid + dgid + sgid + pkey
    seeds = {
        "rdma-cm-route": nl_resolve(attrs=rdma_cm),
        "ipoib-path": nl_resolve(use=1, attrs=dgid + sgid + nl_attr(6, b"\0") + pkey),
        "qos-class": nl_resolve(attrs=dgid + sgid + nl_attr(8, struct.pack("<H", 0x12))),
        "two-in-one": nl_resolve(seq=1, attrs=rdma_cm) + nl_resolve(seq=2, attrs=rdma_cm),
        "other-port": nl_resolve(port=2, attrs=rdma_cm),
        "other-device": nl_resolve(device=b"other0", attrs=rdma_cm),
        "unknown-attr": nl_resolve(attrs=dgid + nl_attr(9, b"\1\2\3\4") + nl_attr(0x1FF, b"")),
        "gid-short": nl_resolve(attrs=nl_attr(4, gid(5)[:12])),
        "attr-oversized": nl_resolve(attrs=nl_attr(4, gid(5), length=200)),
        "attr-truncated": nl_resolve(attrs=dgid + b"\x08\0"),
        "set-timeout": nl_resolve(op=1, attrs=nl_attr(2, struct.pack("<I", 800), mandatory=False)),
        "reply-not-request": nl_resolve(flags=0x100, attrs=rdma_cm),
        "use-gmp": nl_resolve(use=2, attrs=dgid),
        # NLMSG_ERROR whose error is INT32_MIN: once negated into overflow (UBSan)
        "error-int-min": struct.pack("<IHHIIi", 20, 2, 0, 1, 0, -2**31),
    }
    for name, data in seeds.items():
        write("netlink", name, data)


codec()
dispatch()
netlink()
