// Value types for the common MAD header, the RMPP header and the SA header, and a whole SA MAD.
// unpack() of a buffer followed by pack() reproduces it byte for byte (reserved fields are kept),
// which is what lets the proxy relay a MAD changing nothing but its TID.
#pragma once

#include "ib/bytes.hpp"
#include "ib/constants.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace localsa::mad {

struct MadHeader {
    std::uint8_t base_version = kBaseVersion;
    std::uint8_t mgmt_class = mgmt_class::kSubnAdm;
    std::uint8_t class_version = kSaClassVersion;
    std::uint8_t method = method::kGet;
    std::uint16_t status = 0;
    std::uint16_t class_specific = 0;
    std::uint64_t tid = 0;
    std::uint16_t attr_id = 0;
    std::uint16_t reserved = 0;
    std::uint32_t attr_mod = 0;

    static MadHeader unpack(Bytes b); // b.size() >= kMadHeaderSize
    void pack(MutableBytes b) const;
    bool operator==(const MadHeader&) const = default;
};

struct RmppHeader {
    std::uint8_t version = 0;
    std::uint8_t type = 0;
    std::uint8_t resp_time = 0; // 5 bits
    std::uint8_t flags = 0;     // 3 bits: active, first, last
    std::uint8_t status = 0;
    std::uint32_t segment = 0;
    std::uint32_t paylen_newwin = 0;

    bool active() const { return (flags & rmpp::kFlagActive) != 0; }
    static RmppHeader unpack(Bytes b); // at kRmppHeaderOffset
    void pack(MutableBytes b) const;
    bool operator==(const RmppHeader&) const = default;
};

// An SA MAD: headers plus the data area. For a response reassembled from RMPP segments the data
// holds every record; otherwise it is the 200-byte data area.
struct SaMad {
    MadHeader header;
    RmppHeader rmpp;
    std::uint64_t sm_key = 0;
    std::uint16_t attr_offset = 0; // in 8-byte units
    std::uint16_t reserved = 0;
    std::uint64_t comp_mask = 0;
    std::vector<std::uint8_t> data = std::vector<std::uint8_t>(kSaDataSize);

    // nullopt when the buffer is shorter than the SA header.
    static std::optional<SaMad> unpack(Bytes b);
    // At least kMadSize bytes; longer when data is longer than one MAD's data area.
    std::vector<std::uint8_t> pack() const;

    // Records of a response, each attr_offset * 8 bytes (empty when attr_offset is 0).
    std::vector<Bytes> records() const;
};

// In-place TID access, for relaying MADs without a full decode.
std::uint64_t tid_of(Bytes mad);
void set_tid(MutableBytes mad, std::uint64_t tid);

// Only the low 32 bits of a TID are ours: the MAD layer (ib_umad, umad2sim, ibsim) owns the rest.
inline constexpr std::uint64_t kTidLowMask = 0xffffffffULL;

std::string method_name(std::uint8_t method);
std::string attr_name(std::uint16_t attr_id);
std::string status_name(std::uint16_t status);

} // namespace localsa::mad
