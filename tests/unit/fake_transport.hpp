// A MadTransport that records what the logic sends and lets a test play the master SA.
#pragma once

#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "transport/transport.hpp"

#include <chrono>
#include <utility>
#include <vector>

namespace localsa::test {

struct SentMad {
    std::vector<std::uint8_t> bytes;
    transport::MadAddress to;
    std::chrono::milliseconds timeout;
};

class FakeTransport final : public transport::MadTransport {
public:
    FakeTransport() {
        state.ca = "fake0";
        state.port = 1;
        state.lid = 5;
        state.sm_lid = 1;
        state.state = 4;
        state.gid = sa::Gid::from_parts(0xfe80000000000000ULL, 0x100003);
        state.pkeys = {0xffff};
    }
    bool send(mad::Bytes mad, const transport::MadAddress& to,
              std::chrono::milliseconds timeout) override {
        sent.push_back({{mad.begin(), mad.end()}, to, timeout});
        return true;
    }
    const transport::PortState& port() const override { return state; }

    std::vector<SentMad> take() { return std::exchange(sent, {}); }

    transport::PortState state;
    std::vector<SentMad> sent;
};

inline constexpr std::uint16_t kOwnLid = 5;
inline constexpr std::uint16_t kSmLid = 1;

inline sa::Gid gid(std::uint64_t guid) {
    return sa::Gid::from_parts(0xfe80000000000000ULL, guid);
}

// The records of a GetTable(PathRecord) answer from this port (kOwnLid, GUID 0x100003) to each
// (GUID, LID) destination, as the master's preload tables carry them.
inline std::vector<std::uint8_t>
table_records(std::initializer_list<std::pair<std::uint64_t, std::uint16_t>> dests,
              bool reversible = true) {
    std::vector<std::uint8_t> out;
    for (auto [guid, dlid] : dests) {
        sa::PathRecord r;
        r.sgid = gid(0x100003);
        r.dgid = gid(guid);
        r.slid = kOwnLid;
        r.dlid = dlid;
        r.reversible = reversible;
        r.pkey = 0xffff;
        r.mtu = 4;
        r.rate = 7;
        r.packet_life = 18;
        const auto b = r.bytes();
        out.insert(out.end(), b.begin(), b.end());
    }
    return out;
}

// A SubnAdmGet(PathRecord) for SGID -> DGID, as a kernel consumer sends it.
inline std::vector<std::uint8_t> path_request(std::uint64_t tid, std::uint64_t dguid,
                                              std::uint8_t method = mad::method::kGet,
                                              std::uint64_t extra_mask = 0, std::uint8_t sl = 0) {
    mad::SaMad m;
    m.header.method = method;
    m.header.attr_id = mad::attr::kPathRecord;
    m.header.tid = tid;
    sa::PathRecord pr;
    pr.sgid = gid(0x100003);
    pr.dgid = gid(dguid);
    pr.reversible = true;
    pr.numb_path = 1;
    pr.sl = sl;
    m.comp_mask = sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kReversible |
                  sa::pr_mask::kNumbPath | extra_mask;
    pr.pack(m.data);
    return m.pack();
}

inline transport::InboundMad from_lid(std::uint16_t lid, std::vector<std::uint8_t> bytes) {
    transport::InboundMad in;
    in.bytes = std::move(bytes);
    in.from.lid = lid;
    return in;
}

// The master's answer to `request` (as OpenSM builds it) carrying one PathRecord to `dlid`.
inline std::vector<std::uint8_t> master_path_answer(const std::vector<std::uint8_t>& request,
                                                    std::uint16_t dlid) {
    auto m = *mad::SaMad::unpack(request);
    m.header.method |= mad::method::kResponseBit;
    m.sm_key = 0;
    m.attr_offset = 8;
    auto pr = sa::PathRecord::unpack(m.data);
    pr.dlid = dlid;
    pr.slid = kOwnLid;
    pr.mtu = 4;
    pr.rate = 7;
    pr.packet_life = 18;
    pr.pkey = 0xffff;
    pr.numb_path = 0;
    std::fill(m.data.begin(), m.data.end(), 0);
    pr.pack(m.data);
    return m.pack();
}

// The master's answer to `request` that only carries a status (a Set's echo, an error).
inline std::vector<std::uint8_t> master_status_answer(const std::vector<std::uint8_t>& request,
                                                      std::uint16_t status) {
    auto m = *mad::SaMad::unpack(request);
    m.header.method = mad::method::kGetResp;
    m.header.status = status;
    return m.pack();
}

inline std::uint16_t status_of(const std::vector<std::uint8_t>& b) {
    return mad::load_be16(b, 4);
}

} // namespace localsa::test
