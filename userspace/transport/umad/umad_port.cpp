#include "transport/umad/umad_port.hpp"

#include <infiniband/umad.h>

#include <arpa/inet.h>
#include <cstring>
#include <endian.h>

namespace localsa::transport {

PortState read_umad_port(const std::string& ca, int port_num) {
    umad_port_t p{};
    if (umad_get_port(ca.empty() ? nullptr : ca.c_str(), port_num, &p) < 0)
        throw TransportError("cannot read port " + std::to_string(port_num) + " of CA '" +
                             (ca.empty() ? std::string("(first)") : ca) + "'");
    PortState s;
    s.ca = p.ca_name;
    s.port = p.portnum;
    s.lid = static_cast<std::uint16_t>(p.base_lid);
    s.lmc = static_cast<std::uint8_t>(p.lmc);
    s.sm_lid = static_cast<std::uint16_t>(p.sm_lid);
    s.sm_sl = static_cast<std::uint8_t>(p.sm_sl);
    s.state = static_cast<std::uint8_t>(p.state);
    s.gid = sa::Gid::from_parts(be64toh(p.gid_prefix), be64toh(p.port_guid));
    for (unsigned i = 0; i < static_cast<unsigned>(p.pkeys_size); ++i)
        if (p.pkeys[i] != 0)
            s.pkeys.push_back(p.pkeys[i]);
    umad_release_port(&p);
    return s;
}

MadAddress decode_umad_address(const ib_mad_addr& a) {
    MadAddress from;
    from.lid = ntohs(a.lid);
    from.qpn = ntohl(a.qpn);
    from.qkey = ntohl(a.qkey);
    from.sl = a.sl;
    from.path_bits = a.path_bits;
    from.pkey_index = a.pkey_index;
    from.has_grh = a.grh_present;
    if (a.grh_present) {
        std::memcpy(from.gid.raw.data(), a.gid, 16);
        from.gid_index = a.gid_index;
        from.hop_limit = a.hop_limit;
        from.traffic_class = a.traffic_class;
        from.flow_label = ntohl(a.flow_label);
    }
    return from;
}

} // namespace localsa::transport
