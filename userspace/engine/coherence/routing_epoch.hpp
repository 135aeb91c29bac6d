// The master's routing epoch: a number the SM's event plugin (userspace/opensm) changes
// whenever its PathRecord answers may change (routing done with changed LFTs, a port's MTU
// or rate, SL/QoS or partition configuration, a new master). While the epoch holds, what the
// master answered stays what it would answer: no timer needs to renew it.
#pragma once

#include <cstdint>
#include <string_view>

namespace localsa::coherence {

struct RoutingEpoch {
    std::uint64_t value = 0;
    // The SM port that published it: an epoch is only comparable with one of the same master.
    std::uint64_t sm_port_guid = 0;

    friend bool operator==(const RoutingEpoch&, const RoutingEpoch&) = default;
};

// Told by the epoch source (routing_epoch_source.hpp) what it learns from the master.
class RoutingEpochListener {
public:
    virtual ~RoutingEpochListener() = default;
    // Every observation (a Report, a read at start or after a resync); an unchanged epoch is
    // reported too and must cost nothing.
    virtual void on_routing_epoch(const RoutingEpoch& epoch) = 0;
    // No epoch source any more (plugin not loaded at the master, a new master without it,
    // the subscription lost): validity falls back to the TTL rules.
    virtual void on_routing_epoch_lost(std::string_view why) = 0;
};

} // namespace localsa::coherence
