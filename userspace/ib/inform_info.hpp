// InformInfo (attribute 0x0003, 36 bytes): an event subscription.
#pragma once

#include "ib/bytes.hpp"
#include "ib/gid.hpp"

#include <cstdint>

namespace localsa::sa {

struct InformInfo {
    static constexpr std::size_t kSize = 36;

    Gid gid;
    std::uint16_t lid_range_begin = 0;
    std::uint16_t lid_range_end = 0;
    std::uint16_t reserved = 0;
    std::uint8_t is_generic = 0;
    std::uint8_t subscribe = 0;
    std::uint16_t type = 0;
    std::uint16_t trap_number = 0; // device ID for vendor traps
    std::uint32_t qpn = 0;         // 24 bits
    std::uint8_t resp_time_value = 0;
    std::uint32_t producer_type = 0; // 24 bits; vendor ID for vendor traps

    static InformInfo unpack(mad::Bytes b);
    void pack(mad::MutableBytes b) const;
    bool operator==(const InformInfo&) const = default;
};

} // namespace localsa::sa
