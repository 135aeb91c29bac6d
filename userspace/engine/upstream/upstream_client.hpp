// The daemon's client of the master SA: fresh TIDs (low 32 bits only), a bounded number of
// queries in flight with bounded queues behind them, a timeout per try with retries. Queries go
// straight to the SM LID read from the port, never through a redirect.
// The master's load from this node is bounded: every background query (refresh, preload,
// subscriptions, checks) and each of its tries takes a token from one bucket; client queries go
// first (and take a token when there is one, so background work yields to them). A query that
// carries its requester's deadline is dropped unsent once the deadline has passed, and no try
// starts after it. BUSY from the master holds back the whole node (exponential, jittered).
#pragma once

#include "engine/clock.hpp"
#include "engine/counters.hpp"
#include "ib/tid.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace localsa::upstream {

struct UpstreamConfig {
    // ipoib and srp give an SA query 1000 ms in all: 3 tries of 200 ms leave room for the rest.
    std::chrono::milliseconds try_timeout{200};
    int retries = 2;
    std::size_t max_outstanding = 32;
    std::size_t max_queued = 4096;
    // The first hold-back after BUSY; it doubles with each BUSY in a row up to busy_backoff_max
    // (each drawn at random between half and the whole of it, so that nodes do not come back
    // together).
    std::chrono::milliseconds busy_backoff{25};
    std::chrono::milliseconds busy_backoff_max{std::chrono::seconds{5}};
    // The background budget: tokens per second and bucket size (see docs/localsad.md).
    unsigned background_rate = 20;
    unsigned background_burst = 40;

    // How long a query may wait for the master in all: every try's wait.
    std::chrono::milliseconds patience() const { return try_timeout * (retries + 1); }
};

enum class Priority { Client, Background };

struct SubmitOptions {
    Priority priority = Priority::Client;
    // When the requester stops waiting (on the engine's Clock): queued past it, the query is
    // dropped unsent; no try starts after it.
    std::optional<Clock::time_point> deadline;
    // The wait per try, if not the configured one (a GetTable sized by its transfer).
    std::optional<std::chrono::milliseconds> try_timeout;
    // One try, waiting what all the tries would have (patience): for a relayed request whose
    // requester retries on its own (the master sees each of its retries once, as without
    // localsad); a BUSY answer is then the requester's, as from the master.
    bool single_try = false;
};

// The wait of one try for a table answer: its whole RMPP transfer must fit, a window of 32
// segments (200 bytes of records each) per `per_window`. Unknown sizes are taken as a fabric of
// 4,096 PathRecords (as the preloader's first table).
inline constexpr std::size_t kUnknownTableBytes = 4096 * 64;
inline std::chrono::milliseconds table_try_timeout(std::chrono::milliseconds per_window,
                                                   std::size_t record_bytes) {
    const auto segments = record_bytes / 200 + 1;
    return per_window * static_cast<long>(1 + segments / 32);
}

enum class Outcome { Response, Timeout, Overloaded, NoMaster };

// Why a query ended without the master's answer, for the log.
constexpr const char* outcome_reason(Outcome o) {
    switch (o) {
    case Outcome::Response:
        return "answered";
    case Outcome::Timeout:
        return "no answer in time, or the requester's deadline passed before it could be sent";
    case Outcome::Overloaded:
        return "the queue to the master is full";
    case Outcome::NoMaster:
        return "no master (SM LID 0)";
    }
    return "?";
}

struct Reply {
    Outcome outcome = Outcome::Timeout;
    std::vector<std::uint8_t> response; // the master's MAD, with our TID
};

using ReplyHandler = std::function<void(Reply)>;

class UpstreamClient {
public:
    UpstreamClient(boost::asio::any_io_executor executor, Clock& clock,
                   transport::MadTransport& transport, Counters& counters, UpstreamConfig config);
    ~UpstreamClient();
    UpstreamClient(const UpstreamClient&) = delete;
    UpstreamClient& operator=(const UpstreamClient&) = delete;

    // Sends `request` (any SA request MAD) to the master; `done` runs exactly once.
    void submit(std::vector<std::uint8_t> request, ReplyHandler done, SubmitOptions options = {});
    // How many background queries could be sent now without waiting for the budget.
    std::size_t background_room();
    // Offers a response MAD; true when it answered one of our queries (or a retired try of one).
    bool handle_response(const transport::InboundMad& response);

    std::size_t outstanding() const { return in_flight_.size(); }
    std::size_t queued() const { return queue_.size() + background_queue_.size(); }
    // True while a BUSY from the master holds every query of the node back.
    bool held_back() const { return clock_.now() < held_until_; }
    const UpstreamConfig& config() const { return config_; }
    // New limits and timeouts apply from the next try; queries in flight keep their tries left.
    void set_config(const UpstreamConfig& config);

private:
    struct Query {
        std::vector<std::uint8_t> request;
        ReplyHandler done;
        int tries_left = 0;
        std::uint32_t tid = 0;
        std::optional<Timer> timer;
        std::uint16_t sent_to = 0; // the SM LID of the try under this TID
        SubmitOptions options;
    };
    bool expired(const Query& q, Clock::time_point now) const {
        return q.options.deadline && now >= *q.options.deadline;
    }
    // Puts a query whose try ended back at the front of its queue for another try.
    void requeue(std::uint32_t tid);
    void refill(Clock::time_point now);
    void arm_pump(Clock::time_point at);
    void launch(std::unique_ptr<Query> query);
    void transmit(Query& query);
    void on_timer(std::uint32_t tid);
    void finish(std::uint32_t tid, Reply reply);
    void pump_queue();
    std::uint32_t next_tid();

    boost::asio::any_io_executor executor_;
    Clock& clock_;
    transport::MadTransport& transport_;
    Counters& counters_;
    UpstreamConfig config_;
    mad::TidAllocator tids_;
    std::unordered_map<std::uint32_t, std::unique_ptr<Query>> in_flight_;
    std::deque<std::unique_ptr<Query>> queue_;            // client queries
    std::deque<std::unique_ptr<Query>> background_queue_; // waiting for the budget
    double tokens_;
    Clock::time_point refilled_;
    Clock::time_point held_until_{}; // BUSY: nothing is sent before
    unsigned busy_in_a_row_ = 0;
    std::uint64_t jitter_state_;
    Timer pump_timer_;
    bool pump_armed_ = false;
    Clock::time_point pump_at_{};
};

} // namespace localsa::upstream
