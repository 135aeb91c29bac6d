#include "ib/gid.hpp"

#include "ib/bytes.hpp"

#include <algorithm>
#include <arpa/inet.h>

namespace localsa::sa {

Gid Gid::from_parts(std::uint64_t prefix, std::uint64_t guid) {
    Gid g;
    mad::store_be64(g.raw, 0, prefix);
    mad::store_be64(g.raw, 8, guid);
    return g;
}

std::optional<Gid> Gid::parse(std::string_view text) {
    std::string s{text};
    Gid g;
    if (inet_pton(AF_INET6, s.c_str(), g.raw.data()) != 1)
        return std::nullopt;
    return g;
}

std::uint64_t Gid::prefix() const {
    return mad::load_be64(raw, 0);
}
std::uint64_t Gid::guid() const {
    return mad::load_be64(raw, 8);
}
std::size_t GidHash::operator()(const Gid& g) const noexcept {
    // The GIDs of a subnet share the prefix and differ in the interface ID: both halves mixed.
    std::uint64_t h = g.prefix() * 0x9e3779b97f4a7c15ULL ^ g.guid();
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return static_cast<std::size_t>(h);
}

bool Gid::is_zero() const {
    return std::all_of(raw.begin(), raw.end(), [](auto b) { return b == 0; });
}

std::string Gid::str() const {
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, raw.data(), buf, sizeof buf);
    return buf;
}

} // namespace localsa::sa
