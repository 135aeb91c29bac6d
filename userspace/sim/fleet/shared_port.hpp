// Fleet mode: many simulated nodes' local SAs in one process. Their upstream traffic shares one
// real umad port (one ibsim node) to the master SA. SharedPort multiplexes that port: every
// request gets a fleet-wide TID (low 32 bits), the response is handed back to the request's owner
// with the owner's TID restored; at most `max_in_flight` requests are on the wire at once (ibsim
// holds only ~256 MADs in flight in total), the rest wait in a FIFO.
#pragma once

#include "ib/tid.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

namespace localsa::fleet {

using Clock = std::chrono::steady_clock;

struct SharedPortStats {
    std::uint64_t requests_sent = 0; // requests put on the wire
    std::uint64_t responses = 0;     // matched to an owner
    std::uint64_t unmatched = 0;     // responses with an unknown (or expired) TID
    std::uint64_t expired = 0;       // requests that never got a response within the slot timeout
    std::uint64_t send_failures = 0;
    std::uint64_t others_sent = 0; // non-requests (e.g. ReportResp) sent straight through
    std::size_t max_in_flight_seen = 0;
    std::size_t max_queued_seen = 0;
};

class SharedPort {
public:
    using OwnerHandler = std::function<void(transport::InboundMad)>;

    // `wire` is the real port (UmadTransport). The owner of the SharedPort feeds every MAD the
    // wire receives to on_wire().
    SharedPort(boost::asio::any_io_executor executor, transport::MadTransport& wire,
               std::size_t max_in_flight, std::chrono::milliseconds slot_timeout);
    SharedPort(const SharedPort&) = delete;
    SharedPort& operator=(const SharedPort&) = delete;

    // Registers a receiver of responses; returns its owner id.
    std::size_t add_owner(OwnerHandler handler);
    // Sends a MAD for `owner`. Requests are remapped and may wait for a slot (true = accepted);
    // anything else goes to the wire at once.
    bool send(std::size_t owner, mad::Bytes mad, const transport::MadAddress& to,
              std::chrono::milliseconds response_timeout);
    // Every MAD the wire receives.
    void on_wire(transport::InboundMad in);

    transport::PortState port() const { return wire_.port(); }
    std::size_t in_flight() const { return in_flight_.size(); }
    std::size_t queued() const { return queue_.size(); }
    const SharedPortStats& stats() const { return stats_; }
    // Starts the peaks (max_in_flight_seen, max_queued_seen) again from what is there now: the
    // peaks of one phase, not of everything before it.
    void reset_peaks() {
        stats_.max_in_flight_seen = in_flight_.size();
        stats_.max_queued_seen = queue_.size();
    }

private:
    struct Pending {
        std::size_t owner;
        std::vector<std::uint8_t> mad;
        transport::MadAddress to;
        std::chrono::milliseconds timeout;
    };
    struct InFlight {
        std::size_t owner;
        std::uint64_t owner_tid;
        Clock::time_point sent;
    };

    bool transmit(Pending p);
    void pump();
    void arm_sweep();
    void sweep();
    std::uint32_t next_tid();

    boost::asio::any_io_executor executor_;
    transport::MadTransport& wire_;
    std::size_t max_in_flight_;
    std::chrono::milliseconds slot_timeout_;
    std::vector<OwnerHandler> owners_;
    std::unordered_map<std::uint32_t, InFlight> in_flight_;
    std::deque<Pending> queue_;
    mad::TidAllocator tids_;
    boost::asio::steady_timer sweep_timer_;
    bool sweep_armed_ = false;
    SharedPortStats stats_;
};

// The MadTransport of one simulated node's LocalSa: requests to the master go through the
// SharedPort; answers to requesters go to `deliver` (standing in for the node's kernel redirect,
// which would carry them back to the requesting consumer).
class NodeTransport final : public transport::MadTransport {
public:
    using Deliver = std::function<void(mad::Bytes mad, const transport::MadAddress& to)>;

    NodeTransport(SharedPort& shared, transport::PortState state, Deliver deliver)
        : shared_(shared), state_(std::move(state)), deliver_(std::move(deliver)) {}

    // Set once the owner (the node's LocalSa) exists.
    void set_owner(std::size_t owner) { owner_ = owner; }

    bool send(mad::Bytes mad, const transport::MadAddress& to,
              std::chrono::milliseconds response_timeout) override;
    const transport::PortState& port() const override { return state_; }

private:
    SharedPort& shared_;
    transport::PortState state_;
    Deliver deliver_;
    std::size_t owner_ = 0;
};

} // namespace localsa::fleet
