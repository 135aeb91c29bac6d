#include "transport/netlink/ls_message.hpp"

#include <algorithm>
#include <cstring>

namespace localsa::netlink {

namespace {

// Netlink's alignment of messages and attributes (NLMSG_ALIGNTO, NLA_ALIGNTO).
constexpr std::size_t align4(std::size_t n) {
    return (n + 3) & ~std::size_t{3};
}
constexpr std::size_t kAttrHeaderSize = 4;

// Netlink headers and the kernel's numbers are in host order.
template <typename T> T load(Bytes b, std::size_t at) {
    T v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}
template <typename T> void append(std::vector<std::uint8_t>& out, T v) {
    const auto at = out.size();
    out.resize(at + sizeof v);
    std::memcpy(out.data() + at, &v, sizeof v);
}

void append_header(std::vector<std::uint8_t>& out, LsOp op, std::uint16_t flags,
                   std::uint32_t seq) {
    append<std::uint32_t>(out, 0); // nlmsg_len, set by finish()
    append<std::uint16_t>(out, ls_type(op));
    append<std::uint16_t>(out, flags);
    append<std::uint32_t>(out, seq);
    append<std::uint32_t>(out, 0); // nlmsg_pid
}

void append_attr(std::vector<std::uint8_t>& out, std::uint16_t type, const void* data,
                 std::size_t len) {
    append<std::uint16_t>(out, static_cast<std::uint16_t>(kAttrHeaderSize + len));
    append<std::uint16_t>(out, type);
    const auto at = out.size();
    out.resize(at + align4(len), 0);
    std::memcpy(out.data() + at, data, len);
}

std::vector<std::uint8_t> finish(std::vector<std::uint8_t> out) {
    const auto len = static_cast<std::uint32_t>(out.size());
    std::memcpy(out.data(), &len, sizeof len);
    return out;
}

} // namespace

SplitResult split_messages(Bytes datagram) {
    SplitResult r;
    std::size_t at = 0;
    while (at < datagram.size()) {
        if (datagram.size() - at < kHeaderSize) {
            r.error = "truncated netlink header";
            break;
        }
        const auto len = load<std::uint32_t>(datagram, at);
        if (len < kHeaderSize || len > datagram.size() - at) {
            r.error = "netlink message length out of range";
            break;
        }
        Message m;
        m.type = load<std::uint16_t>(datagram, at + 4);
        m.flags = load<std::uint16_t>(datagram, at + 6);
        m.seq = load<std::uint32_t>(datagram, at + 8);
        m.pid = load<std::uint32_t>(datagram, at + 12);
        m.payload = datagram.subspan(at + kHeaderSize, len - kHeaderSize);
        r.messages.push_back(m);
        at += std::min<std::size_t>(align4(len), datagram.size() - at);
    }
    return r;
}

ResolveDecode decode_resolve(const Message& m) {
    ResolveDecode d;
    if (m.type != ls_type(LsOp::Resolve)) {
        d.error = "not a RESOLVE";
        return d;
    }
    if (!(m.flags & flag::kRequest)) {
        d.error = "RESOLVE without NLM_F_REQUEST (a reply, not the kernel's request)";
        return d;
    }
    if (m.payload.size() < kResolveHeaderSize) {
        d.error = "RESOLVE shorter than its family header";
        return d;
    }
    ResolveRequest req;
    req.seq = m.seq;
    const auto name = m.payload.first(kDeviceNameMax);
    const auto end = std::find(name.begin(), name.end(), std::uint8_t{0});
    if (end == name.end()) {
        d.error = "device name not terminated";
        return d;
    }
    req.device.assign(name.begin(), end);
    req.port = m.payload[kDeviceNameMax];
    const auto use = m.payload[kDeviceNameMax + 1];
    if (use > static_cast<std::uint8_t>(PathUse::Gmp)) {
        d.error = "path_use out of range";
        return d;
    }
    req.path_use = static_cast<PathUse>(use);

    auto attrs = m.payload.subspan(kResolveHeaderSize);
    bool any = false;
    while (!attrs.empty()) {
        if (attrs.size() < kAttrHeaderSize) {
            d.error = "truncated attribute header";
            return d;
        }
        const auto len = load<std::uint16_t>(attrs, 0);
        const auto raw_type = load<std::uint16_t>(attrs, 2);
        const auto type = static_cast<std::uint16_t>(raw_type & attr::kTypeMask);
        if (len < kAttrHeaderSize || len > attrs.size()) {
            d.error = "attribute length out of range";
            return d;
        }
        const auto data = attrs.subspan(kAttrHeaderSize, len - kAttrHeaderSize);
        const auto need = [&](std::size_t size) {
            if (data.size() == size)
                return true;
            d.error = "attribute of the wrong length";
            return false;
        };
        switch (type) {
        case attr::kServiceId:
            if (!need(8))
                return d;
            req.service_id = load<std::uint64_t>(data, 0);
            break;
        case attr::kDgid:
        case attr::kSgid: {
            if (!need(16))
                return d;
            GidBytes g;
            std::copy(data.begin(), data.end(), g.begin());
            (type == attr::kDgid ? req.dgid : req.sgid) = g;
            break;
        }
        case attr::kTclass:
            if (!need(1))
                return d;
            req.tclass = data[0];
            break;
        case attr::kPkey:
        case attr::kQosClass:
            if (!need(2))
                return d;
            (type == attr::kPkey ? req.pkey : req.qos_class) = load<std::uint16_t>(data, 0);
            break;
        default:
            // ib_sa marks every attribute of a RESOLVE mandatory: one this code does not know
            // (a newer kernel's) may constrain the path, and answering without it could give
            // the wrong path; the SA then answers it. Optional ones are skipped.
            if (raw_type & attr::kMandatory) {
                d.error = "unknown mandatory attribute";
                return d;
            }
            break;
        }
        if (type >= attr::kServiceId && type <= attr::kQosClass)
            any = true;
        attrs = attrs.subspan(std::min<std::size_t>(align4(len), attrs.size()));
    }
    if (!any) {
        d.error = "RESOLVE without path attributes";
        return d;
    }
    d.request = std::move(req);
    return d;
}

std::uint32_t path_flags(PathUse use, bool reversible) {
    (void)use;
    // The master's answer to a Get is the primary path. A reversible record serves GMPs and
    // both directions (what rdma_cm takes as its one path); one that is not, outbound only.
    return reversible ? path_flag::kPrimary | path_flag::kGmp | path_flag::kBidirectional
                      : path_flag::kPrimary | path_flag::kOutbound;
}

bool kernel_accepts(PathUse use, std::uint32_t flags) {
    std::uint32_t mask = 0;
    switch (use) {
    case PathUse::Unidirectional:
        mask = path_flag::kPrimary | path_flag::kOutbound;
        break;
    case PathUse::All:
        mask = path_flag::kPrimary;
        break;
    default:
        mask = path_flag::kPrimary | path_flag::kGmp | path_flag::kBidirectional;
        break;
    }
    return (flags & mask) == mask;
}

std::vector<std::uint8_t> encode_resolve_reply(std::uint32_t seq,
                                               std::span<const PathRecordData> records) {
    std::vector<std::uint8_t> out;
    out.reserve(kHeaderSize + kMaxRecordsPerReply * (kAttrHeaderSize + kPathRecordDataSize));
    append_header(out, LsOp::Resolve, 0, seq);
    const auto n = std::min(records.size(), kMaxRecordsPerReply);
    for (std::size_t i = 0; i < n; ++i) {
        std::array<std::uint8_t, kPathRecordDataSize> data{};
        std::memcpy(data.data(), &records[i].flags, sizeof records[i].flags);
        std::copy(records[i].record.begin(), records[i].record.end(), data.begin() + 8);
        // No RDMA_NLA_F_MANDATORY: the kernel compares the raw type with PATH_RECORD.
        append_attr(out, attr::kPathRecord, data.data(), data.size());
    }
    return finish(std::move(out));
}

std::vector<std::uint8_t> encode_resolve_error(std::uint32_t seq) {
    std::vector<std::uint8_t> out;
    append_header(out, LsOp::Resolve, flag::kLsErr, seq);
    return finish(std::move(out));
}

std::vector<std::uint8_t> encode_set_timeout(std::uint32_t seq, std::uint32_t timeout_ms) {
    std::vector<std::uint8_t> out;
    append_header(out, LsOp::SetTimeout, flag::kRequest, seq);
    // No RDMA_NLA_F_MANDATORY: the kernel's nla_parse would take the type as unknown.
    append_attr(out, attr::kTimeout, &timeout_ms, sizeof timeout_ms);
    return finish(std::move(out));
}

} // namespace localsa::netlink
