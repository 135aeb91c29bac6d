// The seam between client subscriptions and the subscriptions this port holds at the master.
// Coherence implements it: it holds traps 64-67, 144 and 145 for the cache anyway and adds, for
// as long as a client needs one, any other generic trap, renewing them all after a resync.
#pragma once

#include <cstdint>
#include <functional>

namespace localsa::events {

class MasterSubscriptions {
public:
    virtual ~MasterSubscriptions() = default;
    // Makes sure the master sends this port the Reports of generic trap `trap`; `done` runs once
    // with the master's status (0: held) or a local one when the master did not answer.
    virtual void hold(std::uint16_t trap, std::function<void(std::uint16_t status)> done) = 0;
    // No client needs `trap` any more.
    virtual void release(std::uint16_t trap) = 0;
};

} // namespace localsa::events
