// Coherence's refresh: asks the master again for the cached answers that fall due and were used
// since their last refresh (idle ones leave the cache), smoothly, within the refresh rate and
// the node's master budget. It sleeps until the next refresh falls due (the cache wakes it when
// a store queues an earlier one): a cache with nothing to refresh, as under a routing epoch,
// costs the node no wake-ups.
#pragma once

#include "engine/cache/path_cache.hpp"
#include "engine/clock.hpp"
#include "engine/handlers/path_record_service.hpp"
#include "engine/upstream/upstream_client.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

namespace localsa::coherence {

class Refresher {
public:
    Refresher(boost::asio::any_io_executor executor, Clock& clock, cache::PathCache& cache,
              sa::PathRecordService& path_records, upstream::UpstreamClient& upstream,
              unsigned rate, std::chrono::milliseconds idle_window);

    ~Refresher() { cache_.on_earlier_refresh({}); }
    Refresher(const Refresher&) = delete;
    Refresher& operator=(const Refresher&) = delete;

    void start();
    void stop();
    // From the next slice on.
    void set_limits(unsigned rate, std::chrono::milliseconds idle_window) {
        rate_ = rate;
        idle_window_ = idle_window;
    }

    // Times the refresher woke, since construction (the cost of an idle node in wake-ups).
    std::uint64_t wakeups() const { return wakeups_; }

private:
    void arm(Clock::time_point at);
    void wake();

    Clock& clock_;
    cache::PathCache& cache_;
    sa::PathRecordService& path_records_;
    upstream::UpstreamClient& upstream_;
    unsigned rate_;
    std::chrono::milliseconds idle_window_;
    Timer timer_;
    double credit_ = 0; // refreshes allowed but not yet sent (rates below 10/s)
    Clock::time_point credited_at_{};
    std::optional<Clock::time_point> armed_at_; // when the timer fires; none: asleep
    bool running_ = false;
    std::uint64_t wakeups_ = 0;
};

} // namespace localsa::coherence
