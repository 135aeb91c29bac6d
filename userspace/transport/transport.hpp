// The seam between the daemon's logic and MAD I/O. The daemon talks to a MadTransport; the real
// one is libibumad (UmadTransport), unit tests use a fake that records what was sent.
#pragma once

#include "ib/bytes.hpp"
#include "ib/gid.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace localsa::transport {

// Where a MAD came from or goes to (an ib_mad_addr without the kernel's layout).
struct MadAddress {
    std::uint16_t lid = 0;
    std::uint32_t qpn = 1;
    std::uint32_t qkey = 0x80000000;
    std::uint16_t pkey_index = 0;
    std::uint8_t sl = 0;
    std::uint8_t path_bits = 0;
    bool has_grh = false;
    sa::Gid gid;
    std::uint8_t gid_index = 0;
    std::uint8_t hop_limit = 0;
    std::uint8_t traffic_class = 0;
    std::uint32_t flow_label = 0;

    bool operator==(const MadAddress&) const = default;
};

struct InboundMad {
    std::vector<std::uint8_t> bytes;
    MadAddress from;
    // Non-zero: the MAD layer hands back one of our sends that failed (e.g. ETIMEDOUT).
    int status = 0;
};

// PortInfo:PortState ACTIVE (IBA 14.2.5.6), as umad_port_t::state reports it.
inline constexpr std::uint8_t kPortActive = 4;

// The port as the MAD layer reports it; refreshed on port events.
struct PortState {
    std::string ca;
    int port = 1;
    std::uint16_t lid = 0;
    std::uint8_t lmc = 0;
    std::uint16_t sm_lid = 0;
    std::uint8_t sm_sl = 0;
    std::uint8_t state = 0; // kPortActive when it can carry MADs
    sa::Gid gid;
    std::vector<std::uint16_t> pkeys;

    bool active() const { return state == kPortActive; }
    // True when `lid` is one of this port's LIDs (base LID plus LMC path bits).
    bool owns_lid(std::uint16_t l) const { return lid != 0 && l >= lid && l < lid + (1u << lmc); }
    bool operator==(const PortState&) const = default;
};

// What refresh_port() reads. The PKey table costs a query per entry on a real HCA (a firmware
// command each, up to 128 of them), the other attributes a few reads: it is read only when asked.
enum class PortRead { kAttributes, kWithPkeys };

// Called with each received MAD; valid only during the call (the transport reuses it).
using InboundHandler = std::function<void(const InboundMad&)>;

class MadTransport {
public:
    virtual ~MadTransport() = default;
    // Sends one MAD. `response_timeout` > 0 marks a request that expects a response: the kernel
    // MAD layer delivers a response only to a request sent with a timeout.
    virtual bool send(mad::Bytes mad, const MadAddress& to,
                      std::chrono::milliseconds response_timeout) = 0;
    // The port as last read; valid until the next refresh_port(). Called on the hot path: no copy.
    virtual const PortState& port() const = 0;
    // Reads the port's attributes again (they change on port events) and returns them;
    // kAttributes keeps the PKey table as last read.
    virtual const PortState& refresh_port(PortRead /*what*/) { return port(); }
    // The engine gives up on a request from `to` (TID `tid`) and will send it nothing: no query
    // possible, no room to wait, its requester's deadline passed. A MAD requester retries as it
    // would with the master, so nothing happens by default; a transport whose requester would
    // wait out a timeout of its own instead (the netlink service) tells it now.
    virtual void no_answer(const MadAddress& /*to*/, std::uint64_t /*tid*/, const char* /*why*/) {}
};

// The events a port's driver raises when the port changes (libibverbs' port async events).
enum class PortEvent {
    kActive,
    kError,
    kLidChange,
    kPkeyChange,
    kSmChange,
    kClientReregister,
    kGidChange
};

constexpr std::string_view port_event_name(PortEvent e) {
    switch (e) {
    case PortEvent::kActive:
        return "port active";
    case PortEvent::kError:
        return "port error";
    case PortEvent::kLidChange:
        return "LID change";
    case PortEvent::kPkeyChange:
        return "PKey change";
    case PortEvent::kSmChange:
        return "SM change";
    case PortEvent::kClientReregister:
        return "client reregister";
    case PortEvent::kGidChange:
        return "GID change";
    }
    return "?";
}

// Says when the port changed, so that it is read then instead of polled often. The real one
// reads libibverbs' async events (transport/verbs); unit tests use a fake.
class PortEventSource {
public:
    using EventsHandler = std::function<void(const std::vector<PortEvent>& events)>;
    using LostHandler = std::function<void(const std::string& why)>;
    virtual ~PortEventSource() = default;
    // Drops the events that came before, then hands on this port's events, on the event loop,
    // those that arrived together in one call, until stop(); `on_lost` once when no more can
    // come (the device failed).
    virtual void start(EventsHandler on_events, LostHandler on_lost) = 0;
    virtual void stop() = 0;
    // Where the events come from, for the log ("verbs device mlx5_0").
    virtual std::string name() const = 0;
};

} // namespace localsa::transport
