// What libibumad says about a port and about a received MAD's sender, in the transport's terms;
// shared by the transport and the plain SA client of the tools.
#pragma once

#include "transport/transport.hpp"

#include <stdexcept>
#include <string>

struct ib_mad_addr;

namespace localsa::transport {

class TransportError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The port's attributes (`ca` empty: the first CA); throws TransportError when it cannot be read.
PortState read_umad_port(const std::string& ca, int port);

// The sender of a received MAD (ib_mad_addr is in network byte order).
MadAddress decode_umad_address(const ib_mad_addr& addr);

} // namespace localsa::transport
