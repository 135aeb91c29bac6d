#include "ib/notice.hpp"

#include <algorithm>

namespace localsa::sa {

using namespace mad;

Gid Notice::subject_gid() const {
    Gid g;
    std::copy_n(data_details.begin() + 6, 16, g.raw.begin());
    return g;
}

Notice Notice::unpack(Bytes b) {
    Notice n;
    const auto w0 = load_be32(b, 0);
    n.is_generic = (w0 >> 31) & 1;
    n.type = (w0 >> 24) & 0x7f;
    n.producer_type = w0 & 0xffffff;
    n.trap_number = load_be16(b, 4);
    n.issuer_lid = load_be16(b, 6);
    const auto w8 = load_be16(b, 8);
    n.toggle = (w8 >> 15) & 1;
    n.count = w8 & 0x7fff;
    std::copy_n(b.begin() + 10, 54, n.data_details.begin());
    std::copy_n(b.begin() + 64, 16, n.issuer_gid.raw.begin());
    return n;
}

void Notice::pack(MutableBytes b) const {
    store_be32(b, 0,
               std::uint32_t{is_generic} << 31 | std::uint32_t(type & 0x7f) << 24 |
                   (producer_type & 0xffffff));
    store_be16(b, 4, trap_number);
    store_be16(b, 6, issuer_lid);
    store_be16(b, 8, static_cast<std::uint16_t>(toggle << 15 | (count & 0x7fff)));
    std::copy(data_details.begin(), data_details.end(), b.begin() + 10);
    std::copy(issuer_gid.raw.begin(), issuer_gid.raw.end(), b.begin() + 64);
}

} // namespace localsa::sa
