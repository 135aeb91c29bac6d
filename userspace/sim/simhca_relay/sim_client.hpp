// A client of ibsim attached to one node: control queries and the MAD data socket.
#pragma once

#include "ibsim_protocol.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace simhca_relay {

// ibsim did not answer a control request in time (it is busy: a large fabric in a slow
// guest). Not fatal: the request may be made again.
class CtlTimeout : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

class SimClient {
public:
    // Connects to ibsim (socket name space `basename`, default "sim") as client `sock_id`
    // at `node`. issm: take the node's SM slot (unsolicited requests for the port).
    // qp: 0 (QP0/QP1 traffic: responses by TID, requests only with issm), or a UD QP number
    // above 1: ibsim then also delivers the MADs sent to that QP of the port to this client.
    // Waits up to connect_timeout_ms for ibsim to appear. Throws std::runtime_error.
    SimClient(std::string basename, std::uint32_t sock_id, const std::string& node, bool issm,
              int connect_timeout_ms, std::uint32_t qp = 0);
    ~SimClient();
    SimClient(const SimClient&) = delete;
    SimClient& operator=(const SimClient&) = delete;

    int id() const { return client_id_; }
    std::uint32_t qp() const { return qp_; }
    int data_fd() const { return data_fd_; }
    const std::string& node() const { return node_; }

    std::array<std::uint8_t, 64> node_info();
    std::array<std::uint8_t, 64> port_info();
    std::array<std::uint16_t, 32> pkeys(); // host order
    void set_issm(bool on);

    // Control answers that came after their request timed out, dropped.
    std::uint64_t late_answers() const { return late_answers_; }

    // Blocks while ibsim's queue for this client is full.
    bool send(const ibsim::Packet& p);
    enum class SendResult { sent, busy, failed };
    // Never blocks: busy when ibsim's queue for this client is full (poll data_fd() for
    // POLLOUT). ibsim writes to a client until the client reads, so a client that receives
    // while it sends must not block here.
    SendResult try_send(const ibsim::Packet& p);
    // Non-blocking; nullopt when nothing is pending.
    std::optional<ibsim::Packet> receive();

private:
    void ctl(std::uint32_t type, void* data, std::uint32_t len);

    std::uint64_t late_answers_ = 0;

    std::string basename_;
    std::string node_;
    int ctl_fd_ = -1;
    int data_fd_ = -1;
    int client_id_ = -1;
    std::uint32_t qp_ = 0;
};

} // namespace simhca_relay
