#include "ib/mc_member_record.hpp"

#include <algorithm>

namespace localsa::sa {

using namespace mad;

McMemberRecord McMemberRecord::unpack(Bytes b) {
    McMemberRecord r;
    std::copy_n(b.begin(), 16, r.mgid.raw.begin());
    std::copy_n(b.begin() + 16, 16, r.port_gid.raw.begin());
    r.qkey = load_be32(b, 32);
    r.mlid = load_be16(b, 36);
    r.mtu_selector = b[38] >> 6;
    r.mtu = b[38] & 0x3f;
    r.tclass = b[39];
    r.pkey = load_be16(b, 40);
    r.rate_selector = b[42] >> 6;
    r.rate = b[42] & 0x3f;
    r.packet_life_selector = b[43] >> 6;
    r.packet_life = b[43] & 0x3f;
    const auto w44 = load_be32(b, 44);
    r.sl = w44 >> 28;
    r.flow_label = (w44 >> 8) & 0xfffff;
    r.hop_limit = w44 & 0xff;
    r.scope = b[48] >> 4;
    r.join_state = b[48] & 0xf;
    r.proxy_join = (b[49] >> 7) & 1;
    return r;
}

void McMemberRecord::pack(MutableBytes b) const {
    std::copy(mgid.raw.begin(), mgid.raw.end(), b.begin());
    std::copy(port_gid.raw.begin(), port_gid.raw.end(), b.begin() + 16);
    store_be32(b, 32, qkey);
    store_be16(b, 36, mlid);
    b[38] = static_cast<std::uint8_t>(mtu_selector << 6 | (mtu & 0x3f));
    b[39] = tclass;
    store_be16(b, 40, pkey);
    b[42] = static_cast<std::uint8_t>(rate_selector << 6 | (rate & 0x3f));
    b[43] = static_cast<std::uint8_t>(packet_life_selector << 6 | (packet_life & 0x3f));
    store_be32(b, 44, std::uint32_t(sl & 0xf) << 28 | (flow_label & 0xfffff) << 8 | hop_limit);
    b[48] = static_cast<std::uint8_t>(scope << 4 | (join_state & 0xf));
    b[49] = static_cast<std::uint8_t>(proxy_join << 7);
    b[50] = 0;
    b[51] = 0;
}

} // namespace localsa::sa
