// Relays an SA request the local SA does not answer itself to the master: a fresh upstream TID,
// and the master's response returned to the requester with the requester's TID and address,
// status and payload unchanged.
#pragma once

#include "engine/counters.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "transport/transport.hpp"

#include <functional>

namespace localsa::proxy {

class Proxy {
public:
    Proxy(upstream::UpstreamClient& upstream, transport::MadTransport& transport,
          Counters& counters)
        : upstream_(upstream), transport_(transport), counters_(counters) {}

    // `observe` sees the master's answer before it is relayed (e.g. to learn from it).
    using Observer = std::function<void(const std::vector<std::uint8_t>& response)>;
    void forward(const transport::InboundMad& request, Observer observe = {});

private:
    upstream::UpstreamClient& upstream_;
    transport::MadTransport& transport_;
    Counters& counters_;
};

// The master's response re-addressed to a requester: only the TID changes.
std::vector<std::uint8_t> relay_response(std::vector<std::uint8_t> response,
                                         std::uint64_t requester_tid);

} // namespace localsa::proxy
