// InformInfo Set from clients of this port: denied (REQ_DENIED), never relayed.
//
// The master sends a subscriber's Reports to the address the Set came from. Relayed, that is
// localsad's port (LID, QP1): the very address a client of this port has, so the master cannot
// tell a client's subscription from localsad's own. The MAD layer hands every Report arriving at
// the port to the one agent registered for SA Reports, localsad, so a client never receives
// them; and a client's unsubscribe relayed with localsad's parameters (GID 0, every LID, a trap
// localsad uses) removes localsad's own subscription at the master, which then stops sending it
// that trap: measured on the sim tier (trap 65 never arrived after a client's relayed
// unsubscribe), tests/sim/security. Until Reports are fanned out to clients by other means, a
// client is told plainly that the local SA does not take subscriptions.
#pragma once

#include "daemon/counters.hpp"
#include "transport/transport.hpp"

namespace localsa::sa {

class InformInfoService {
public:
    InformInfoService(transport::MadTransport& transport, Counters& counters)
        : transport_(transport), counters_(counters) {}

    // True when it handled the request (a Set); other methods are the caller's to relay.
    bool handle(const transport::InboundMad& request);

private:
    transport::MadTransport& transport_;
    Counters& counters_;
};

} // namespace localsa::sa
