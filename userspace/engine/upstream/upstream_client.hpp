// The daemon's client of the master SA: fresh TIDs (low 32 bits only), a bounded number of
// queries in flight with a bounded queue behind them, a timeout per try with retries, back-off
// on BUSY. Queries go straight to the SM LID read from the port, never through a redirect.
#pragma once

#include "engine/counters.hpp"
#include "ib/tid.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace localsa::upstream {

struct UpstreamConfig {
    // ipoib and srp give an SA query 1000 ms in all: 3 tries of 200 ms leave room for the rest.
    std::chrono::milliseconds try_timeout{200};
    int retries = 2;
    std::size_t max_outstanding = 32;
    std::size_t max_queued = 4096;
    std::chrono::milliseconds busy_backoff{25};
};

enum class Outcome { Response, Timeout, Overloaded, NoMaster };

struct Reply {
    Outcome outcome = Outcome::Timeout;
    std::vector<std::uint8_t> response; // the master's MAD, with our TID
};

using ReplyHandler = std::function<void(Reply)>;

class UpstreamClient {
public:
    UpstreamClient(boost::asio::any_io_executor executor, transport::MadTransport& transport,
                   Counters& counters, UpstreamConfig config);
    ~UpstreamClient();
    UpstreamClient(const UpstreamClient&) = delete;
    UpstreamClient& operator=(const UpstreamClient&) = delete;

    // Sends `request` (any SA request MAD) to the master; `done` runs exactly once.
    void submit(std::vector<std::uint8_t> request, ReplyHandler done);
    // Offers a response MAD; true when it answered one of our queries (or a retired try of one).
    bool handle_response(const transport::InboundMad& response);

    std::size_t outstanding() const { return in_flight_.size(); }
    std::size_t queued() const { return queue_.size(); }
    const UpstreamConfig& config() const { return config_; }
    // New limits and timeouts apply from the next try; queries in flight keep their tries left.
    void set_config(const UpstreamConfig& config);

private:
    struct Query {
        std::vector<std::uint8_t> request;
        ReplyHandler done;
        int tries_left = 0;
        std::uint32_t tid = 0;
        std::unique_ptr<boost::asio::steady_timer> timer;
        std::uint16_t sent_to = 0; // the SM LID of the try under this TID
    };

    void launch(std::unique_ptr<Query> query);
    void transmit(Query& query);
    void on_timer(std::uint32_t tid);
    void finish(std::uint32_t tid, Reply reply);
    void pump_queue();
    std::uint32_t next_tid();

    boost::asio::any_io_executor executor_;
    transport::MadTransport& transport_;
    Counters& counters_;
    UpstreamConfig config_;
    mad::TidAllocator tids_;
    std::unordered_map<std::uint32_t, std::unique_ptr<Query>> in_flight_;
    std::deque<std::unique_ptr<Query>> queue_;
};

} // namespace localsa::upstream
