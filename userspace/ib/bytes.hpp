// Big-endian field access for MAD buffers. MADs are network byte order on the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace localsa::mad {

using Bytes = std::span<const std::uint8_t>;
using MutableBytes = std::span<std::uint8_t>;

inline std::uint16_t load_be16(Bytes b, std::size_t off) {
    return static_cast<std::uint16_t>(b[off] << 8 | b[off + 1]);
}
inline std::uint32_t load_be32(Bytes b, std::size_t off) {
    return std::uint32_t{b[off]} << 24 | std::uint32_t{b[off + 1]} << 16 |
           std::uint32_t{b[off + 2]} << 8 | std::uint32_t{b[off + 3]};
}
inline std::uint64_t load_be64(Bytes b, std::size_t off) {
    return std::uint64_t{load_be32(b, off)} << 32 | load_be32(b, off + 4);
}
inline void store_be16(MutableBytes b, std::size_t off, std::uint16_t v) {
    b[off] = static_cast<std::uint8_t>(v >> 8);
    b[off + 1] = static_cast<std::uint8_t>(v);
}
inline void store_be32(MutableBytes b, std::size_t off, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        b[off + i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
inline void store_be64(MutableBytes b, std::size_t off, std::uint64_t v) {
    store_be32(b, off, static_cast<std::uint32_t>(v >> 32));
    store_be32(b, off + 4, static_cast<std::uint32_t>(v));
}

} // namespace localsa::mad
