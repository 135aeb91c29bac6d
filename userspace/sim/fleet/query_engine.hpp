// A bounded-depth query driver for the fleet's job start: `total` queries, at most `depth` of
// them outstanding, each with its own deadline. Queries are built and checked by the caller;
// where they go (the master through the shared port, or a node's LocalSa in-process) is the
// caller's `submit`.
#pragma once

#include "ib/bytes.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace localsa::fleet {

struct EngineResult {
    std::uint64_t queries = 0;
    std::uint64_t answered = 0;
    std::uint64_t ok = 0; // status 0 and the checked contents right
    std::uint64_t bad_status = 0;
    std::uint64_t wrong = 0;    // status 0 but not the answer to the question
    std::uint64_t timeouts = 0; // no answer before the deadline (or the send failed)
    double seconds = 0;
    std::uint16_t first_bad_status = 0;
    // Latency of answered queries in microseconds.
    double lat_p50_us = 0, lat_p99_us = 0, lat_max_us = 0;

    std::uint64_t errors() const { return bad_status + wrong + timeouts; }
};

class QueryEngine {
public:
    // Builds query `q` with TID `tid` (low 32 bits); returns false if it could not be sent.
    using Submit = std::function<bool(std::uint64_t q, std::uint32_t tid)>;
    // Checks the answer to query `q` (status already known to be 0): true if right.
    using Check = std::function<bool(std::uint64_t q, mad::Bytes response)>;

    QueryEngine(boost::asio::io_context& io, std::size_t depth, std::chrono::milliseconds timeout)
        : io_(io), depth_(depth ? depth : 1), timeout_(timeout), timer_(io) {}

    // Runs `total` queries to completion (or timeout) on `io`; returns the tally.
    EngineResult run(std::uint64_t total, Submit submit, Check check);
    // Every response for this engine's queries (any TID; unknown ones are ignored).
    void on_response(mad::Bytes response);

private:
    struct Outstanding {
        std::uint64_t q;
        std::chrono::steady_clock::time_point sent;
    };
    void pump();
    void schedule_pump();
    void arm_timer();
    void finish_one();

    boost::asio::io_context& io_;
    std::size_t depth_;
    std::chrono::milliseconds timeout_;
    boost::asio::steady_timer timer_;
    std::uint32_t tid_ = 0x10000;
    std::uint64_t total_ = 0, next_ = 0, done_ = 0;
    Submit submit_;
    Check check_;
    std::unordered_map<std::uint32_t, Outstanding> outstanding_;
    std::vector<float> latencies_us_;
    EngineResult result_;
    bool in_pump_ = false, pump_posted_ = false;
};

} // namespace localsa::fleet
