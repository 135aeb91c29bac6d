// A plain SA client over libibumad for tools and benchmarks: send SA requests to any LID and
// receive the responses. Synchronous; no event loop, no server registration.
#pragma once

#include "ib/bytes.hpp"
#include "transport/transport.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace localsa::tools {

class SaClient {
public:
    // Throws std::runtime_error with a clear message when the port cannot be opened.
    SaClient(const std::string& ca, int port);
    ~SaClient();
    SaClient(const SaClient&) = delete;
    SaClient& operator=(const SaClient&) = delete;

    const transport::PortState& port() const { return port_; }
    // Sends a request to `lid` (QP1). The response timeout is handed to the MAD layer.
    bool send(mad::Bytes request, std::uint16_t lid, std::chrono::milliseconds timeout);
    // The next response (nullopt on timeout). Failed sends come back with a non-zero status.
    std::optional<transport::InboundMad> receive(std::chrono::milliseconds timeout);
    // send + receive until the response with the request's TID (low 32 bits) arrives.
    std::optional<std::vector<std::uint8_t>> query(mad::Bytes request, std::uint16_t lid,
                                                   std::chrono::milliseconds timeout);

private:
    int fd_ = -1;
    int agent_ = -1;
    transport::PortState port_;
    std::vector<std::uint8_t> buf_;
};

} // namespace localsa::tools
