// The port's attributes as ibsim has them, in the driver's struct simhca_port.
#pragma once

#include "simhca_abi.h"

#include <array>
#include <cstdint>
#include <string>

namespace simhca_relay {

struct PortSnapshot {
    simhca_port port{};
    bool client_rereg = false; // PortInfo:ClientReregister
};

// node_info / port_info: the 64-byte attribute data of NodeInfo and PortInfo.
PortSnapshot make_snapshot(const std::array<std::uint8_t, 64>& node_info,
                           const std::array<std::uint8_t, 64>& port_info,
                           const std::array<std::uint16_t, 32>& pkeys);

bool same_port(const simhca_port& a, const simhca_port& b);
std::string describe(const simhca_port& p);

} // namespace simhca_relay
