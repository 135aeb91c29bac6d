#include "ib/class_port_info.hpp"

#include <algorithm>

namespace localsa::sa {

using namespace mad;

ClassPortInfo ClassPortInfo::unpack(Bytes b) {
    ClassPortInfo c;
    c.base_version = b[0];
    c.class_version = b[1];
    c.capability_mask = load_be16(b, 2);
    const auto w4 = load_be32(b, 4);
    c.capability_mask2 = w4 >> 5;
    c.resp_time_value = w4 & 0x1f;
    std::copy_n(b.begin() + 8, 16, c.redirect_gid.raw.begin());
    c.redirect_tc_sl_fl = load_be32(b, 24);
    c.redirect_lid = load_be16(b, 28);
    c.redirect_pkey = load_be16(b, 30);
    c.redirect_qp = load_be32(b, 32) & 0xffffff;
    c.redirect_qkey = load_be32(b, 36);
    std::copy_n(b.begin() + 40, 16, c.trap_gid.raw.begin());
    c.trap_tc_sl_fl = load_be32(b, 56);
    c.trap_lid = load_be16(b, 60);
    c.trap_pkey = load_be16(b, 62);
    c.trap_hl_qp = load_be32(b, 64);
    c.trap_qkey = load_be32(b, 68);
    return c;
}

void ClassPortInfo::pack(MutableBytes b) const {
    b[0] = base_version;
    b[1] = class_version;
    store_be16(b, 2, capability_mask);
    store_be32(b, 4, (capability_mask2 & 0x7ffffff) << 5 | (resp_time_value & 0x1f));
    std::copy(redirect_gid.raw.begin(), redirect_gid.raw.end(), b.begin() + 8);
    store_be32(b, 24, redirect_tc_sl_fl);
    store_be16(b, 28, redirect_lid);
    store_be16(b, 30, redirect_pkey);
    store_be32(b, 32, redirect_qp & 0xffffff);
    store_be32(b, 36, redirect_qkey);
    std::copy(trap_gid.raw.begin(), trap_gid.raw.end(), b.begin() + 40);
    store_be32(b, 56, trap_tc_sl_fl);
    store_be16(b, 60, trap_lid);
    store_be16(b, 62, trap_pkey);
    store_be32(b, 64, trap_hl_qp);
    store_be32(b, 68, trap_qkey);
}

std::uint8_t resp_time_value_for_ms(unsigned ms) {
    const double us = ms * 1000.0;
    for (std::uint8_t v = 0; v < 31; ++v)
        if (4.096 * static_cast<double>(1u << v) >= us)
            return v;
    return 31;
}

} // namespace localsa::sa
