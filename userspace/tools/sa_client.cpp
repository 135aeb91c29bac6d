#include "tools/sa_client.hpp"

#include "transport/umad/umad_port.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"

#include <infiniband/umad.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace localsa::tools {

SaClient::SaClient(const std::string& ca, int port_num) {
    if (umad_init() < 0)
        throw std::runtime_error("umad_init failed: is ib_umad loaded?");
    port_ = transport::read_umad_port(ca, port_num);
    fd_ = umad_open_port(port_.ca.c_str(), port_.port);
    if (fd_ < 0)
        throw std::runtime_error("cannot open the umad device of " + port_.ca + ": " +
                                 std::strerror(-fd_));
    agent_ = umad_register(fd_, mad::mgmt_class::kSubnAdm, mad::kSaClassVersion,
                           mad::rmpp::kVersion, nullptr);
    if (agent_ < 0)
        throw std::runtime_error("cannot register an SA client agent");
    buf_.resize(umad_size() + 64 * 1024);
}

SaClient::~SaClient() {
    if (fd_ >= 0)
        umad_close_port(fd_);
}

bool SaClient::send(mad::Bytes request, std::uint16_t lid, std::chrono::milliseconds timeout) {
    std::vector<std::uint8_t> buf(umad_size() + request.size());
    auto* umad = reinterpret_cast<ib_user_mad*>(buf.data());
    umad_set_addr(umad, lid, 1, port_.sm_sl, static_cast<int>(mad::kQp1Qkey));
    umad_set_pkey(umad, 0);
    std::memcpy(umad_get_mad(umad), request.data(), request.size());
    return umad_send(fd_, agent_, umad, static_cast<int>(request.size()),
                     static_cast<int>(timeout.count()), 0) == 0;
}

std::optional<transport::InboundMad> SaClient::receive(std::chrono::milliseconds timeout) {
    const int capacity = static_cast<int>(buf_.size() - umad_size());
    int len = capacity;
    const int rc = umad_recv(fd_, buf_.data(), &len, static_cast<int>(timeout.count()));
    if (rc < 0)
        return std::nullopt;
    auto* umad = reinterpret_cast<ib_user_mad*>(buf_.data());
    transport::InboundMad in;
    in.status = umad_status(umad);
    in.from = transport::decode_umad_address(*umad_get_mad_addr(umad));
    const auto* data = static_cast<const std::uint8_t*>(umad_get_mad(umad));
    in.bytes.assign(data, data + std::min(len, capacity));
    if (in.bytes.size() < mad::kMadSize)
        in.bytes.resize(mad::kMadSize, 0); // umad2sim keeps the sender's shorter length
    return in;
}

std::optional<std::vector<std::uint8_t>> SaClient::query(mad::Bytes request, std::uint16_t lid,
                                                         std::chrono::milliseconds timeout) {
    if (!send(request, lid, timeout))
        return std::nullopt;
    const auto want = mad::tid_of(request) & mad::kTidLowMask;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        auto in = receive(std::max(left, std::chrono::milliseconds{1}));
        if (!in)
            continue;
        if (in->bytes.size() >= mad::kMadHeaderSize &&
            (mad::tid_of(in->bytes) & mad::kTidLowMask) == want) {
            if (in->status != 0)
                return std::nullopt; // the send itself failed (timeout, no route)
            return in->bytes;
        }
    }
    return std::nullopt;
}

} // namespace localsa::tools
