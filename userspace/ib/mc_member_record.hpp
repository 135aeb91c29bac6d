// MCMemberRecord (attribute 0x0038, 52 bytes): multicast group membership.
#pragma once

#include "ib/bytes.hpp"
#include "ib/gid.hpp"

#include <cstdint>

namespace localsa::sa {

struct McMemberRecord {
    static constexpr std::size_t kSize = 52;

    Gid mgid;
    Gid port_gid;
    std::uint32_t qkey = 0;
    std::uint16_t mlid = 0;
    std::uint8_t mtu_selector = 0;
    std::uint8_t mtu = 0;
    std::uint8_t tclass = 0;
    std::uint16_t pkey = 0;
    std::uint8_t rate_selector = 0;
    std::uint8_t rate = 0;
    std::uint8_t packet_life_selector = 0;
    std::uint8_t packet_life = 0;
    std::uint8_t sl = 0;
    std::uint32_t flow_label = 0;
    std::uint8_t hop_limit = 0;
    std::uint8_t scope = 0;
    std::uint8_t join_state = 0;
    bool proxy_join = false;

    static McMemberRecord unpack(mad::Bytes b);
    void pack(mad::MutableBytes b) const;
    bool operator==(const McMemberRecord&) const = default;
};

} // namespace localsa::sa
