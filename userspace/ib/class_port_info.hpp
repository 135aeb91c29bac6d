// ClassPortInfo (attribute 0x0001, 72 bytes).
#pragma once

#include "ib/bytes.hpp"
#include "ib/gid.hpp"

#include <cstdint>

namespace localsa::sa {

struct ClassPortInfo {
    static constexpr std::size_t kSize = 72;

    std::uint8_t base_version = 1;
    std::uint8_t class_version = 2;
    std::uint16_t capability_mask = 0;
    std::uint32_t capability_mask2 = 0; // 27 bits
    std::uint8_t resp_time_value = 0;   // 5 bits
    Gid redirect_gid;
    std::uint32_t redirect_tc_sl_fl = 0;
    std::uint16_t redirect_lid = 0;
    std::uint16_t redirect_pkey = 0;
    std::uint32_t redirect_qp = 0; // 24 bits
    std::uint32_t redirect_qkey = 0;
    Gid trap_gid;
    std::uint32_t trap_tc_sl_fl = 0;
    std::uint16_t trap_lid = 0;
    std::uint16_t trap_pkey = 0;
    std::uint32_t trap_hl_qp = 0;
    std::uint32_t trap_qkey = 0;

    static ClassPortInfo unpack(mad::Bytes b);
    void pack(mad::MutableBytes b) const;
    bool operator==(const ClassPortInfo&) const = default;
};

namespace cap_mask2 {
// IsQoSSupported: the SA applies a QoS policy to its PathRecord answers (by ServiceID, QoSClass,
// PKey, ports); OpenSM sets it when started with QoS on (osm_sa_class_port_info.c).
inline constexpr std::uint32_t kIsQosSupported = 1u << 1;
} // namespace cap_mask2

// RespTimeValue encodes 4.096 us * 2^value; the smallest value that covers `ms`.
std::uint8_t resp_time_value_for_ms(unsigned ms);

} // namespace localsa::sa
