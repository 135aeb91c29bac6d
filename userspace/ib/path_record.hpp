// PathRecord (SA attribute 0x0035, 64 bytes) and its component mask.
#pragma once

#include "ib/bytes.hpp"
#include "ib/gid.hpp"

#include <array>
#include <cstdint>

namespace localsa::sa {

// P_Key (IBA 10.9.1): the top bit says full member, the other 15 name the partition.
inline constexpr std::uint16_t kPKeyFullMember = 0x8000;
inline constexpr std::uint16_t kPKeyPartition = 0x7fff;
inline constexpr std::uint16_t kDefaultPKey = 0xffff; // the default partition, full member

namespace pr_mask {
inline constexpr std::uint64_t kServiceIdHigh = 1ULL << 0;
inline constexpr std::uint64_t kServiceIdLow = 1ULL << 1;
inline constexpr std::uint64_t kServiceId = kServiceIdHigh | kServiceIdLow;
inline constexpr std::uint64_t kDgid = 1ULL << 2;
inline constexpr std::uint64_t kSgid = 1ULL << 3;
inline constexpr std::uint64_t kDlid = 1ULL << 4;
inline constexpr std::uint64_t kSlid = 1ULL << 5;
inline constexpr std::uint64_t kRawTraffic = 1ULL << 6;
inline constexpr std::uint64_t kFlowLabel = 1ULL << 8;
inline constexpr std::uint64_t kHopLimit = 1ULL << 9;
inline constexpr std::uint64_t kTClass = 1ULL << 10;
inline constexpr std::uint64_t kReversible = 1ULL << 11;
inline constexpr std::uint64_t kNumbPath = 1ULL << 12;
inline constexpr std::uint64_t kPKey = 1ULL << 13;
inline constexpr std::uint64_t kQosClass = 1ULL << 14;
inline constexpr std::uint64_t kSl = 1ULL << 15;
inline constexpr std::uint64_t kMtuSelector = 1ULL << 16;
inline constexpr std::uint64_t kMtu = 1ULL << 17;
inline constexpr std::uint64_t kRateSelector = 1ULL << 18;
inline constexpr std::uint64_t kRate = 1ULL << 19;
inline constexpr std::uint64_t kPacketLifeSelector = 1ULL << 20;
inline constexpr std::uint64_t kPacketLife = 1ULL << 21;
inline constexpr std::uint64_t kPreference = 1ULL << 22;
inline constexpr std::uint64_t kDefined = (1ULL << 23) - 1 - (1ULL << 7);
} // namespace pr_mask

// Byte offsets of the fields in a PathRecord's 64-byte wire form (IBA 15.2.5.16), for code that
// reads records in place; the bit fields share the words named after their first field.
namespace pr_offset {
inline constexpr std::size_t kServiceId = 0;
inline constexpr std::size_t kDgid = 8;
inline constexpr std::size_t kDgidInterfaceId = 16; // the DGID's lower half (the GUID)
inline constexpr std::size_t kSgid = 24;
inline constexpr std::size_t kDlid = 40;
inline constexpr std::size_t kSlid = 42;
inline constexpr std::size_t kRawTrafficFlowLabelHopLimit = 44; // 32 bits
inline constexpr std::size_t kTClass = 48;
inline constexpr std::size_t kReversibleNumbPath = 49;
inline constexpr std::size_t kPKey = 50;
inline constexpr std::size_t kQosClassSl = 52; // 16 bits
inline constexpr std::size_t kMtu = 54;        // with its selector
inline constexpr std::size_t kRate = 55;
inline constexpr std::size_t kPacketLife = 56;
inline constexpr std::size_t kPreference = 57;
} // namespace pr_offset

struct PathRecord {
    static constexpr std::size_t kSize = 64;

    std::uint64_t service_id = 0;
    Gid dgid;
    Gid sgid;
    std::uint16_t dlid = 0;
    std::uint16_t slid = 0;
    bool raw_traffic = false;
    std::uint32_t flow_label = 0; // 20 bits
    std::uint8_t hop_limit = 0;
    std::uint8_t tclass = 0;
    bool reversible = false;
    std::uint8_t numb_path = 0; // 7 bits
    std::uint16_t pkey = 0;
    std::uint16_t qos_class = 0; // 12 bits
    std::uint8_t sl = 0;         // 4 bits
    std::uint8_t mtu_selector = 0;
    std::uint8_t mtu = 0;
    std::uint8_t rate_selector = 0;
    std::uint8_t rate = 0;
    std::uint8_t packet_life_selector = 0;
    std::uint8_t packet_life = 0;
    std::uint8_t preference = 0;
    std::array<std::uint8_t, 6> reserved{};

    static PathRecord unpack(mad::Bytes b); // b.size() >= kSize
    void pack(mad::MutableBytes b) const;
    std::array<std::uint8_t, kSize> bytes() const;
    bool operator==(const PathRecord&) const = default;
};

// The record with every field the component mask does not constrain zeroed: two requests with the
// same mask and the same masked record ask the master the same question.
std::array<std::uint8_t, PathRecord::kSize> masked_path_record(mad::Bytes record,
                                                               std::uint64_t comp_mask);

} // namespace localsa::sa
