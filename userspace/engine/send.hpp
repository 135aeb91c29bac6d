// Sending one MAD from the engine: a send the transport refuses is counted in send_errors, the
// same way by every part (the MAD is lost as on the wire; timers and the requester's retries
// deal with it).
#pragma once

#include "engine/counters.hpp"
#include "ib/bytes.hpp"
#include "transport/transport.hpp"

#include <chrono>

namespace localsa {

// `response_timeout` > 0 marks a request that expects a response (MadTransport::send).
inline bool send_counted(transport::MadTransport& transport, Counters& counters, mad::Bytes mad,
                         const transport::MadAddress& to,
                         std::chrono::milliseconds response_timeout = std::chrono::milliseconds{
                             0}) {
    if (transport.send(mad, to, response_timeout))
        return true;
    ++counters.send_errors;
    return false;
}

} // namespace localsa
