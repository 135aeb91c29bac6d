#include "ib/inform_info.hpp"

#include <algorithm>

namespace localsa::sa {

using namespace mad;

InformInfo InformInfo::unpack(Bytes b) {
    InformInfo i;
    std::copy_n(b.begin(), 16, i.gid.raw.begin());
    i.lid_range_begin = load_be16(b, 16);
    i.lid_range_end = load_be16(b, 18);
    i.reserved = load_be16(b, 20);
    i.is_generic = b[22];
    i.subscribe = b[23];
    i.type = load_be16(b, 24);
    i.trap_number = load_be16(b, 26);
    const auto w28 = load_be32(b, 28);
    i.qpn = w28 >> 8;
    i.resp_time_value = w28 & 0x1f;
    i.producer_type = load_be32(b, 32) & 0xffffff;
    return i;
}

void InformInfo::pack(MutableBytes b) const {
    std::copy(gid.raw.begin(), gid.raw.end(), b.begin());
    store_be16(b, 16, lid_range_begin);
    store_be16(b, 18, lid_range_end);
    store_be16(b, 20, reserved);
    b[22] = is_generic;
    b[23] = subscribe;
    store_be16(b, 24, type);
    store_be16(b, 26, trap_number);
    store_be32(b, 28, (qpn & 0xffffff) << 8 | (resp_time_value & 0x1f));
    store_be32(b, 32, producer_type & 0xffffff);
}

} // namespace localsa::sa
