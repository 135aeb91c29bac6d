#include "ib/mad.hpp"

#include <algorithm>
#include <cstdio>

namespace localsa::mad {

MadHeader MadHeader::unpack(Bytes b) {
    MadHeader h;
    h.base_version = b[0];
    h.mgmt_class = b[1];
    h.class_version = b[2];
    h.method = b[3];
    h.status = load_be16(b, 4);
    h.class_specific = load_be16(b, 6);
    h.tid = load_be64(b, 8);
    h.attr_id = load_be16(b, 16);
    h.reserved = load_be16(b, 18);
    h.attr_mod = load_be32(b, 20);
    return h;
}

void MadHeader::pack(MutableBytes b) const {
    b[0] = base_version;
    b[1] = mgmt_class;
    b[2] = class_version;
    b[3] = method;
    store_be16(b, 4, status);
    store_be16(b, 6, class_specific);
    store_be64(b, 8, tid);
    store_be16(b, 16, attr_id);
    store_be16(b, 18, reserved);
    store_be32(b, 20, attr_mod);
}

RmppHeader RmppHeader::unpack(Bytes b) {
    RmppHeader r;
    const auto o = kRmppHeaderOffset;
    r.version = b[o];
    r.type = b[o + 1];
    r.resp_time = b[o + 2] >> 3;
    r.flags = b[o + 2] & 0x7;
    r.status = b[o + 3];
    r.segment = load_be32(b, o + 4);
    r.paylen_newwin = load_be32(b, o + 8);
    return r;
}

void RmppHeader::pack(MutableBytes b) const {
    const auto o = kRmppHeaderOffset;
    b[o] = version;
    b[o + 1] = type;
    b[o + 2] = static_cast<std::uint8_t>((resp_time & 0x1f) << 3 | (flags & 0x7));
    b[o + 3] = status;
    store_be32(b, o + 4, segment);
    store_be32(b, o + 8, paylen_newwin);
}

std::optional<SaMad> SaMad::unpack(Bytes b) {
    if (b.size() < kSaHeaderSize)
        return std::nullopt;
    SaMad m;
    m.header = MadHeader::unpack(b);
    m.rmpp = RmppHeader::unpack(b);
    m.sm_key = load_be64(b, 36);
    m.attr_offset = load_be16(b, 44);
    m.reserved = load_be16(b, 46);
    m.comp_mask = load_be64(b, 48);
    m.data.assign(b.begin() + kSaHeaderSize, b.end());
    return m;
}

std::vector<std::uint8_t> SaMad::pack() const {
    std::vector<std::uint8_t> out(std::max(kMadSize, kSaHeaderSize + data.size()));
    MutableBytes b{out};
    header.pack(b);
    rmpp.pack(b);
    store_be64(b, 36, sm_key);
    store_be16(b, 44, attr_offset);
    store_be16(b, 46, reserved);
    store_be64(b, 48, comp_mask);
    std::copy(data.begin(), data.end(), out.begin() + kSaHeaderSize);
    return out;
}

std::vector<Bytes> SaMad::records() const {
    std::vector<Bytes> out;
    const std::size_t size = std::size_t{attr_offset} * 8;
    if (size == 0)
        return out;
    for (std::size_t off = 0; off + size <= data.size(); off += size)
        out.emplace_back(data.data() + off, size);
    return out;
}

std::uint64_t tid_of(Bytes mad) {
    return load_be64(mad, 8);
}
void set_tid(MutableBytes mad, std::uint64_t tid) {
    store_be64(mad, 8, tid);
}

std::string method_name(std::uint8_t m) {
    switch (m) {
    case method::kGet:
        return "Get";
    case method::kSet:
        return "Set";
    case method::kSend:
        return "Send";
    case method::kTrap:
        return "Trap";
    case method::kReport:
        return "Report";
    case method::kTrapRepress:
        return "TrapRepress";
    case method::kGetTable:
        return "GetTable";
    case method::kGetTraceTable:
        return "GetTraceTable";
    case method::kGetMulti:
        return "GetMulti";
    case method::kDelete:
        return "Delete";
    default:
        break;
    }
    if (method::is_response(m))
        return method_name(m & ~method::kResponseBit) + "Resp";
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%02x", m);
    return buf;
}

std::string attr_name(std::uint16_t a) {
    switch (a) {
    case attr::kClassPortInfo:
        return "ClassPortInfo";
    case attr::kNotice:
        return "Notice";
    case attr::kInformInfo:
        return "InformInfo";
    case attr::kNodeRecord:
        return "NodeRecord";
    case attr::kPortInfoRecord:
        return "PortInfoRecord";
    case attr::kSmInfo:
        return "SMInfo";
    case attr::kServiceRecord:
        return "ServiceRecord";
    case attr::kPathRecord:
        return "PathRecord";
    case attr::kMcMemberRecord:
        return "MCMemberRecord";
    case attr::kMultiPathRecord:
        return "MultiPathRecord";
    default:
        break;
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%04x", a);
    return buf;
}

std::string status_name(std::uint16_t s) {
    switch (s) {
    case status::kOk:
        return "OK";
    case status::kBusy:
        return "BUSY";
    case status::kRedirect:
        return "REDIRECT";
    case status::kBadVersion:
        return "BAD_VERSION";
    case status::kUnsupportedMethod:
        return "UNSUP_METHOD";
    case status::kUnsupportedMethodAttr:
        return "UNSUP_METHOD_ATTR";
    case status::kInvalidField:
        return "INVALID_FIELD";
    case status::kSaNoResources:
        return "NO_RESOURCES";
    case status::kSaReqInvalid:
        return "REQ_INVALID";
    case status::kSaNoRecords:
        return "NO_RECORDS";
    case status::kSaTooManyRecords:
        return "TOO_MANY_RECORDS";
    case status::kSaInvalidGid:
        return "REQ_INVALID_GID";
    case status::kSaInsufficientComponents:
        return "INSUF_COMPS";
    case status::kSaDenied:
        return "REQ_DENIED";
    default:
        break;
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%04x", s);
    return buf;
}

} // namespace localsa::mad
