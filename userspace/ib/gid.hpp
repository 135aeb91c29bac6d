// A 128-bit InfiniBand GID (subnet prefix + interface ID), printed as IPv6.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace localsa::sa {

struct Gid {
    std::array<std::uint8_t, 16> raw{};

    static Gid from_parts(std::uint64_t prefix, std::uint64_t guid);
    static std::optional<Gid> parse(std::string_view text); // "fe80::2:c903:0:1"
    std::uint64_t prefix() const;
    std::uint64_t guid() const;
    bool is_zero() const;
    std::string str() const;
    auto operator<=>(const Gid&) const = default;
};

// For unordered containers of GIDs.
struct GidHash {
    std::size_t operator()(const Gid& g) const noexcept;
};

} // namespace localsa::sa
