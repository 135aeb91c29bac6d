// PortEventSource over libibverbs: the async events of the port's verbs device (LID, SM, PKey,
// GID changes, port up and down, client reregister), read in the event loop from the device's
// async event file. Needs a verbs device of the umad CA's name: none under ibsim's umad2sim,
// none for a driver without user verbs (the vm tier's simhca); the port is polled there.
#pragma once

#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct ibv_context;

namespace localsa::transport {

// There is no verbs device to read the port's events from; what() says why.
class VerbsUnavailable : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The port event of a libibverbs async event type (enum ibv_event_type); nullopt for the others
// (QP, CQ, SRQ events, the device's fatal error).
std::optional<PortEvent> port_event_of(int ibv_event_type);

class VerbsPortEvents final : public PortEventSource {
public:
    // Opens the verbs device named `ca` for the events of port `port`; throws VerbsUnavailable.
    VerbsPortEvents(boost::asio::any_io_executor executor, const std::string& ca, int port);
    ~VerbsPortEvents() override;
    VerbsPortEvents(const VerbsPortEvents&) = delete;
    VerbsPortEvents& operator=(const VerbsPortEvents&) = delete;

    void start(EventsHandler on_events, LostHandler on_lost) override;
    void stop() override;
    std::string name() const override { return "verbs device " + ca_; }

private:
    struct CloseDevice {
        void operator()(ibv_context* context) const;
    };
    enum class Drained { kAll, kLost };

    // Waits (in the event loop) until the event file is readable, then drains it.
    void wait_readable();
    // Reads every event there without blocking, acknowledging each; this port's go to
    // `events_`. kLost after the device's fatal error or a read error: no more will come.
    Drained drain();
    void lose(const std::string& why);

    std::string ca_;
    int port_;
    std::unique_ptr<ibv_context, CloseDevice> context_;
    // The context's async_fd, not owned (released before the device is closed).
    boost::asio::posix::stream_descriptor descriptor_;
    EventsHandler on_events_;
    LostHandler on_lost_;
    bool running_ = false;
    std::string lost_why_;
    std::vector<PortEvent> events_;
};

} // namespace localsa::transport
