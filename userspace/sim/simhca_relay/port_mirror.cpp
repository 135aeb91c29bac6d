#include "port_mirror.hpp"

#include <cstring>

#include <endian.h>
#include <infiniband/mad.h>
#include <spdlog/fmt/fmt.h>

namespace simhca_relay {
namespace {

std::uint32_t field(const std::array<std::uint8_t, 64>& d, MAD_FIELDS f) {
    return mad_get_field(const_cast<std::uint8_t*>(d.data()), 0, f);
}
std::uint64_t field64(const std::array<std::uint8_t, 64>& d, MAD_FIELDS f) {
    return mad_get_field64(const_cast<std::uint8_t*>(d.data()), 0, f);
}

} // namespace

PortSnapshot make_snapshot(const std::array<std::uint8_t, 64>& ni,
                           const std::array<std::uint8_t, 64>& pi,
                           const std::array<std::uint16_t, 32>& pkeys) {
    PortSnapshot s;
    simhca_port& p = s.port;
    const std::uint64_t node_guid = field64(ni, IB_NODE_GUID_F);
    // ibsim numbers a CA's port GUIDs node GUID + port number; the NodeInfo it keeps for
    // the control channel carries the node GUID in the PortGUID field
    std::uint64_t port_guid = field64(ni, IB_NODE_PORT_GUID_F);
    if (!port_guid || port_guid == node_guid)
        port_guid = node_guid + 1;
    p.node_guid = htobe64(node_guid);
    p.port_guid = htobe64(port_guid);
    p.subnet_prefix = htobe64(field64(pi, IB_PORT_GID_PREFIX_F));
    p.cap_mask = field(pi, IB_PORT_CAPMASK_F);
    p.lid = static_cast<std::uint16_t>(field(pi, IB_PORT_LID_F));
    p.sm_lid = static_cast<std::uint16_t>(field(pi, IB_PORT_SMLID_F));
    p.lmc = static_cast<std::uint8_t>(field(pi, IB_PORT_LMC_F));
    p.sm_sl = static_cast<std::uint8_t>(field(pi, IB_PORT_SMSL_F));
    p.state = static_cast<std::uint8_t>(field(pi, IB_PORT_STATE_F));
    if (p.state < 1 || p.state > 5)
        p.state = 1;
    p.phys_state = static_cast<std::uint8_t>(field(pi, IB_PORT_PHYS_STATE_F));
    p.active_width = static_cast<std::uint8_t>(field(pi, IB_PORT_LINK_WIDTH_ACTIVE_F));
    if (!p.active_width)
        p.active_width = 2; // 4x
    p.active_speed = static_cast<std::uint8_t>(field(pi, IB_PORT_LINK_SPEED_ACTIVE_F));
    if (!p.active_speed)
        p.active_speed = 1; // SDR
    p.max_mtu = static_cast<std::uint8_t>(field(pi, IB_PORT_MTU_CAP_F));
    if (p.max_mtu < 1 || p.max_mtu > 5)
        p.max_mtu = 5;
    p.active_mtu = static_cast<std::uint8_t>(field(pi, IB_PORT_NEIGHBOR_MTU_F));
    if (p.active_mtu < 1 || p.active_mtu > 5)
        p.active_mtu = p.max_mtu;
    p.subnet_timeout = static_cast<std::uint8_t>(field(pi, IB_PORT_SUBN_TIMEOUT_F));
    p.init_type_reply = static_cast<std::uint8_t>(field(pi, IB_PORT_INIT_TYPE_REPLY_F));
    p.max_vl_num = static_cast<std::uint8_t>(field(pi, IB_PORT_VL_CAP_F));
    for (std::size_t i = 0; i < pkeys.size() && i < SIMHCA_PKEY_TBL_LEN; ++i)
        p.pkeys[i] = pkeys[i];
    s.client_rereg = field(pi, IB_PORT_CLIENT_REREG_F) != 0;
    return s;
}

bool same_port(const simhca_port& a, const simhca_port& b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

std::string describe(const simhca_port& p) {
    return fmt::format(
        "state {} lid {} lmc {} sm_lid {} sm_sl {} cap 0x{:08x} guid 0x{:016x} pkey0 0x{:04x}",
        p.state, p.lid, p.lmc, p.sm_lid, p.sm_sl, p.cap_mask, be64toh(p.port_guid), p.pkeys[0]);
}

} // namespace simhca_relay
