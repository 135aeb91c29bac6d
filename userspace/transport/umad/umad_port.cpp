#include "transport/umad/umad_port.hpp"

#include <infiniband/umad.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

namespace localsa::transport {

namespace {

// One sysfs file, whole. Through open() and read(), as libibumad reads it: ibsim's umad2sim
// redirects those to its own files.
std::string read_sysfs_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw TransportError("cannot read " + path + ": " + std::strerror(errno));
    std::string text;
    char buf[128];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
        text.append(buf, static_cast<std::size_t>(n));
    const int read_errno = errno;
    ::close(fd);
    if (n < 0)
        throw TransportError("cannot read " + path + ": " + std::strerror(read_errno));
    return text;
}

// A number at the start of a sysfs file: "0x5", "0", "4: ACTIVE".
unsigned long sysfs_number(const std::string& path) {
    const auto text = read_sysfs_file(path);
    char* end = nullptr;
    const auto value = std::strtoul(text.c_str(), &end, 0);
    if (end == text.c_str())
        throw TransportError("unexpected contents of " + path + ": '" + text + "'");
    return value;
}

} // namespace

PortReading read_port_attributes(const std::string& ca, int port_num) {
    const auto dir = "/sys/class/infiniband/" + ca + "/ports/" + std::to_string(port_num) + "/";
    PortReading r;
    auto& s = r.port;
    s.ca = ca;
    s.port = port_num;
    s.state = static_cast<std::uint8_t>(sysfs_number(dir + "state"));
    s.lid = static_cast<std::uint16_t>(sysfs_number(dir + "lid"));
    s.lmc = static_cast<std::uint8_t>(sysfs_number(dir + "lid_mask_count"));
    s.sm_lid = static_cast<std::uint16_t>(sysfs_number(dir + "sm_lid"));
    s.sm_sl = static_cast<std::uint8_t>(sysfs_number(dir + "sm_sl"));
    r.cap_mask = static_cast<std::uint32_t>(sysfs_number(dir + "cap_mask"));
    auto gid_text = read_sysfs_file(dir + "gids/0");
    gid_text.erase(gid_text.find_last_not_of(" \n") + 1);
    const auto gid = sa::Gid::parse(gid_text);
    if (!gid)
        throw TransportError("unexpected contents of " + dir + "gids/0: '" + gid_text + "'");
    s.gid = *gid;
    return r;
}

PortReading read_umad_port_with_cap_mask(const std::string& ca, int port_num) {
    umad_port_t p{};
    if (umad_get_port(ca.empty() ? nullptr : ca.c_str(), port_num, &p) < 0)
        throw TransportError("cannot read port " + std::to_string(port_num) + " of CA '" +
                             (ca.empty() ? std::string("(first)") : ca) + "'");
    PortReading r;
    r.cap_mask = be32toh(p.capmask);
    auto& s = r.port;
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
    return r;
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
