// MadTransport over libibumad: one umad port, agents for the SA class (and, where the port
// claims IsSM under ibsim, the SMP classes), a receive thread that posts into the event loop.
#pragma once

#include "transport/transport.hpp"
#include "transport/umad/umad_port.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace localsa::transport {

struct UmadOptions {
    std::string ca;        // empty: the first CA
    int port = 0;          // 0: the first active port
    bool sa_server = true; // receive unsolicited SA requests (the local SA)
    // ibsim only: claim IsSM on the port once every agent is registered (ibsim hands unsolicited
    // requests only to a port's SM client) and answer the master's SMInfo polls.
    bool claim_issm = false;
};

// A subnet manager holds the port (IsSM set): localsad must not take the SA methods from it.
class PortHasSmError : public TransportError {
    using TransportError::TransportError;
};

// What umad_register's refusal means. libibumad returns -EPERM whatever the kernel said;
// `kernel_errno` is the errno its ioctl left (EINVAL: the methods are another agent's).
std::string register_failure_message(std::uint8_t mgmt_class, std::uint8_t version,
                                     int kernel_errno);

class UmadTransport final : public MadTransport {
public:
    // Opens the port and registers the agents; throws TransportError with a clear message.
    UmadTransport(const UmadOptions& options, boost::asio::any_io_executor executor,
                  InboundHandler handler);
    ~UmadTransport() override;
    UmadTransport(const UmadTransport&) = delete;
    UmadTransport& operator=(const UmadTransport&) = delete;

    // Starts the receive thread. Separate from the constructor so that the owner is complete
    // before the first MAD arrives.
    void start();

    bool send(mad::Bytes mad, const MadAddress& to,
              std::chrono::milliseconds response_timeout) override;
    // Both on the event loop's thread only (the receive thread never reads the port).
    const PortState& port() const override { return port_; }
    // Re-reads the port's attributes (LID, SM LID, state, PKeys) and logs an SM that started on
    // the port. Returns the new state.
    const PortState& refresh_port() override;

private:
    void receive_loop();

    boost::asio::any_io_executor executor_;
    InboundHandler handler_;
    int fd_ = -1;
    int sa_agent_ = -1;
    int smp_lid_agent_ = -1;
    int smp_dr_agent_ = -1;
    int issm_fd_ = -1;
    bool watch_for_sm_ = false; // log an SM that starts on this port (not under ibsim)
    bool sm_on_port_ = false;
    PortState port_;
    std::atomic<bool> stopping_{false};
    std::thread receiver_;
};

} // namespace localsa::transport
