// Sends the master's Reports on to the clients subscribed at the local SA: a Report of its own
// (fresh TID, SM_Key 0) to each matching subscriber, tried again until it answers ReportResp, the
// way the master treats its own subscribers.
#pragma once

#include "engine/clock.hpp"
#include "engine/counters.hpp"
#include "engine/events/client_subscriptions.hpp"
#include "ib/tid.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace localsa::events {

struct FanoutConfig {
    // OpenSM tries a Report 3 times, 200 ms apart (sa-facts).
    std::chrono::milliseconds try_timeout{200};
    int tries = 3;
    // Reports to subscribers waiting for their ReportResp; a Report beyond it is not sent.
    std::size_t max_in_flight = 4096;
};

class ReportFanout {
public:
    // Told once per Report and subscriber whether the subscriber acknowledged it.
    using Outcome = std::function<void(const ClientSubscription& to, bool delivered)>;

    ReportFanout(boost::asio::any_io_executor executor, Clock& clock,
                 transport::MadTransport& transport, Counters& counters,
                 ClientSubscriptions& subscriptions, FanoutConfig config = {});
    ~ReportFanout();
    ReportFanout(const ReportFanout&) = delete;
    ReportFanout& operator=(const ReportFanout&) = delete;

    void on_outcome(Outcome fn) { outcome_ = std::move(fn); }
    // `report` is the master's Report MAD, `notice` its payload.
    void deliver(mad::Bytes report, const sa::Notice& notice);
    // Offers a ReportResp; true when it acknowledged one of ours.
    bool handle_ack(const transport::InboundMad& ack);
    std::size_t in_flight() const { return in_flight_.size(); }

private:
    struct Pending {
        ClientSubscription to;
        std::vector<std::uint8_t> report;
        int tries_left = 0;
        Timer timer;
    };

    void transmit(std::uint32_t tid);
    void finish(std::uint32_t tid, bool delivered);
    std::uint32_t next_tid();

    boost::asio::any_io_executor executor_;
    Clock& clock_;
    transport::MadTransport& transport_;
    Counters& counters_;
    ClientSubscriptions& subscriptions_;
    FanoutConfig config_;
    Outcome outcome_;
    mad::TidAllocator tids_;
    std::unordered_map<std::uint32_t, Pending> in_flight_;
};

} // namespace localsa::events
