// What libibumad says about a port and about a received MAD's sender, in the transport's terms;
// shared by the transport and the plain SA client of the tools.
#pragma once

#include "transport/transport.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

struct ib_mad_addr;

namespace localsa::transport {

class TransportError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The port with its PortInfo:CapabilityMask (host order; IsSM is in it).
struct PortReading {
    PortState port;
    std::uint32_t cap_mask = 0;
};

// The port's attributes and PKey table (`ca` empty: the first CA), as umad_get_port reads them:
// a sysfs file per PKey entry, each a query of the HCA. Throws TransportError when it cannot be
// read.
PortReading read_umad_port_with_cap_mask(const std::string& ca, int port);
inline PortState read_umad_port(const std::string& ca, int port) {
    return read_umad_port_with_cap_mask(ca, port).port;
}
// The port's attributes without its PKey table (`pkeys` left empty): state, LID, LMC, SM LID
// and SL, GID, capability mask, a sysfs file each. `ca` is a CA's name. Throws TransportError.
PortReading read_port_attributes(const std::string& ca, int port);

// The sender of a received MAD (ib_mad_addr is in network byte order).
MadAddress decode_umad_address(const ib_mad_addr& addr);

} // namespace localsa::transport
