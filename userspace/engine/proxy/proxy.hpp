// Relays an SA request the local SA does not answer itself to the master: a fresh upstream TID,
// and the master's response returned to the requester with the requester's TID and address,
// status and payload unchanged.
#pragma once

#include "engine/counters.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "transport/transport.hpp"

#include <cstdint>
#include <functional>
#include <unordered_map>

namespace localsa::proxy {

class Proxy {
public:
    Proxy(upstream::UpstreamClient& upstream, transport::MadTransport& transport,
          Counters& counters, std::chrono::milliseconds try_timeout)
        : upstream_(upstream), transport_(transport), counters_(counters),
          try_timeout_(try_timeout) {}
    void set_try_timeout(std::chrono::milliseconds t) { try_timeout_ = t; }

    // `observe` sees the master's answer before it is relayed (e.g. to learn from it).
    using Observer = std::function<void(const std::vector<std::uint8_t>& response)>;
    void forward(const transport::InboundMad& request, Observer observe = {});

private:
    // The last answer's size per attribute of relayed tables (GetTable, GetTraceTable,
    // GetMulti): the next one's try is sized by it (upstream::table_try_timeout).
    std::unordered_map<std::uint16_t, std::size_t> table_bytes_;
    upstream::UpstreamClient& upstream_;
    transport::MadTransport& transport_;
    Counters& counters_;
    std::chrono::milliseconds try_timeout_;
};

// The master's response re-addressed to a requester: only the TID changes.
std::vector<std::uint8_t> relay_response(std::vector<std::uint8_t> response,
                                         std::uint64_t requester_tid);

} // namespace localsa::proxy
