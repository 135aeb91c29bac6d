// ibsim's client protocol (unix datagram sockets in the abstract name space), as spoken by
// ibsim 0.10: a control socket for connect/queries and one data socket per client.
#pragma once

#include <cstdint>

namespace simhca_relay::ibsim {

inline constexpr std::uint32_t kMagic = 0xdeadbeef;
inline constexpr int kCtlMaxData = 64;
inline constexpr int kMaxClients = 10;

// One MAD on the simulated wire. LIDs are 16-bit big-endian values in 32-bit fields (the
// first two bytes in memory), QPNs and status are big-endian 32-bit, length big-endian 64.
struct Packet {
    std::uint32_t dlid;
    std::uint32_t slid;
    std::uint32_t dqp;
    std::uint32_t sqp;
    std::uint32_t status;
    std::uint64_t length;
    std::uint8_t mad[256];
};
static_assert(sizeof(Packet) == 288);

enum CtlType : std::uint32_t {
    kCtlError = 0,
    kCtlConnect,
    kCtlDisconnect,
    kCtlGetPort,
    kCtlGetVendor,
    kCtlGetGid,
    kCtlGetGuid,
    kCtlGetNodeInfo,
    kCtlGetPortInfo,
    kCtlSetIsSm,
    kCtlGetPkeys,
};

struct Ctl {
    std::uint32_t magic;
    std::uint32_t clientid;
    std::uint32_t type;
    std::uint32_t len;
    std::uint8_t data[kCtlMaxData];
};
static_assert(sizeof(Ctl) == 80);

struct ClientInfo {
    std::uint32_t id; // our socket id in the call, the client index in the answer
    std::uint32_t qp;
    std::uint32_t issm; // 1: receive the node's unsolicited QP0/QP1 requests
    char nodeid[32];
};
static_assert(sizeof(ClientInfo) == 44);

} // namespace simhca_relay::ibsim
