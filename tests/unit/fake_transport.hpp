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

// The master's answer to `request` carrying one PathRecord to `dlid`, built by OpenSM's rules
// (osm_sa_path_record.c, pr_rcv_get_lid_pair_path/pr_rcv_build_pr): a fresh record, not an echo.
// ServiceID, TClass, FlowLabel, HopLimit (no router) and QoSClass are 0 whatever was asked;
// Reversible is set when the reverse path exists (always here), NumbPath 0; SGID is the source
// port's GID, DGID the one asked; SL and PKey are the asked ones when the mask names them, else
// the partition's (SL 0, the default PKey); MTU, rate and life carry selector 2 (exactly).
inline std::vector<std::uint8_t> master_path_answer(const std::vector<std::uint8_t>& request,
                                                    std::uint16_t dlid,
                                                    std::uint8_t preference = 0) {
    auto m = *mad::SaMad::unpack(request);
    const auto asked = sa::PathRecord::unpack(m.data);
    m.header.method |= mad::method::kResponseBit;
    m.sm_key = 0;
    m.attr_offset = 8;
    sa::PathRecord pr;
    pr.sgid = sa::Gid::from_parts(0xfe80000000000000ULL, 0x100003);
    pr.dgid = asked.dgid;
    pr.dlid = dlid;
    pr.slid = kOwnLid;
    pr.reversible = true;
    pr.pkey = (m.comp_mask & sa::pr_mask::kPKey) ? asked.pkey : std::uint16_t{0xffff};
    pr.sl = (m.comp_mask & sa::pr_mask::kSl) ? asked.sl : std::uint8_t{0};
    pr.mtu_selector = 2;
    pr.mtu = 4;
    pr.rate_selector = 2;
    pr.rate = 7;
    pr.packet_life_selector = 2;
    pr.packet_life = 18;
    pr.preference = preference;
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
