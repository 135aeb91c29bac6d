// Coherence's refresh: asks the master again for the cached answers that fall due and were used
// since their last refresh (idle ones leave the cache), smoothly, within the refresh rate and
// the node's master budget.
#pragma once

#include "engine/cache/path_cache.hpp"
#include "engine/clock.hpp"
#include "engine/handlers/path_record_service.hpp"
#include "engine/upstream/upstream_client.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>

namespace localsa::coherence {

class Refresher {
public:
    Refresher(boost::asio::any_io_executor executor, Clock& clock, cache::PathCache& cache,
              sa::PathRecordService& path_records, upstream::UpstreamClient& upstream,
              unsigned rate, std::chrono::milliseconds idle_window);

    void start() { schedule(); }
    void stop() { timer_.cancel(); }
    // From the next slice on.
    void set_limits(unsigned rate, std::chrono::milliseconds idle_window) {
        rate_ = rate;
        idle_window_ = idle_window;
    }

private:
    void schedule();

    Clock& clock_;
    cache::PathCache& cache_;
    sa::PathRecordService& path_records_;
    upstream::UpstreamClient& upstream_;
    unsigned rate_;
    std::chrono::milliseconds idle_window_;
    Timer timer_;
    double credit_ = 0; // refreshes allowed but not yet sent (rates below 10/s)
};

} // namespace localsa::coherence
