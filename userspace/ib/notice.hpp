// Notice (attribute 0x0002, 80 bytes): the payload of a Trap or Report.
#pragma once

#include "ib/bytes.hpp"
#include "ib/gid.hpp"

#include <array>
#include <cstdint>

namespace localsa::sa {

// Generic trap numbers the SM issues or forwards (IBA 14.2.5.1).
namespace trap {
inline constexpr std::uint16_t kGidInService = 64;
inline constexpr std::uint16_t kGidOutOfService = 65;
inline constexpr std::uint16_t kMcGroupCreated = 66;
inline constexpr std::uint16_t kMcGroupDeleted = 67;
inline constexpr std::uint16_t kLinkStateChange = 128;
inline constexpr std::uint16_t kCapabilityMaskChange = 144;
inline constexpr std::uint16_t kSystemImageGuidChange = 145;
} // namespace trap

struct Notice {
    static constexpr std::size_t kSize = 80;

    bool is_generic = true;
    std::uint8_t type = 0;           // 7 bits
    std::uint32_t producer_type = 0; // 24 bits
    std::uint16_t trap_number = 0;
    std::uint16_t issuer_lid = 0;
    bool toggle = false;
    std::uint16_t count = 0; // 15 bits
    std::array<std::uint8_t, 54> data_details{};
    Gid issuer_gid;

    // Traps 64-67 carry the GID concerned at the start of DataDetails (after 6 reserved bytes).
    Gid subject_gid() const;

    static Notice unpack(mad::Bytes b);
    void pack(mad::MutableBytes b) const;
    bool operator==(const Notice&) const = default;
};

} // namespace localsa::sa
