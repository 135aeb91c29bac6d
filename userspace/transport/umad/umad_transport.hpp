// MadTransport over libibumad: one umad port, agents for the SA class (and, where the port
// claims IsSM under ibsim, the SMP classes). The event loop waits on the umad file itself and
// reads, on each wake-up, every MAD that is there (non-blocking), into buffers it keeps: no
// thread hop and no allocation per MAD. umad2sim's "file" is no kernel file (a number its
// LD_PRELOAD wrappers know, waited on by a condition variable in its poll()): there a thread
// only waits in poll() and wakes the loop once per batch, which then reads as above.
#pragma once

#include "transport/transport.hpp"
#include "transport/umad/umad_port.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

    // Starts receiving. Separate from the constructor so that the owner is complete before the
    // first MAD arrives.
    void start();
    // True when the event loop waits on the umad file itself (false: umad2sim's, watched by a
    // thread).
    bool waits_in_event_loop() const { return descriptor_.has_value(); }

    bool send(mad::Bytes mad, const MadAddress& to,
              std::chrono::milliseconds response_timeout) override;
    // Both on the event loop's thread only (the receive thread never reads the port).
    const PortState& port() const override { return port_; }
    // Re-reads the port's attributes (LID, SM LID, state, GID; the PKeys when asked) and logs
    // an SM that started on the port. Returns the new state.
    const PortState& refresh_port(PortRead what) override;

private:
    // Waits (in the event loop) until the umad file is readable, then drains it.
    void wait_readable();
    // umad2sim: waits in poll() on a thread of its own and has the loop drain once per wake-up.
    void watch_loop();
    // Reads and hands on what is there without blocking, at most one batch: true when all is
    // read, false when a full batch was. Throws TransportError once the device is gone.
    bool drain();
    // Drains, a batch per turn of the event loop, until all is read; then runs `next`.
    void drain_then(std::function<void()> next);

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
    std::optional<boost::asio::posix::stream_descriptor> descriptor_;
    // Receive: the umad buffer (header + MAD), the MAD handed on; both keep their capacity.
    int recv_capacity_ = 0;
    std::vector<std::uint8_t> recv_buf_;
    InboundMad inbound_;
    int eio_run_ = 0;
    std::vector<std::uint8_t> send_buf_;
    // umad2sim only: the thread in poll() and the batch it asked the loop to drain.
    std::atomic<bool> stopping_{false};
    std::atomic<bool> drain_pending_{false};
    std::thread watcher_;
};

} // namespace localsa::transport
