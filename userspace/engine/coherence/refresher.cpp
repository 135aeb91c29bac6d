#include "engine/coherence/refresher.hpp"

#include <algorithm>

namespace localsa::coherence {

using namespace std::chrono_literals;

Refresher::Refresher(boost::asio::any_io_executor executor, Clock& clock, cache::PathCache& cache,
                     sa::PathRecordService& path_records, upstream::UpstreamClient& upstream,
                     unsigned rate, std::chrono::milliseconds idle_window)
    : clock_(clock), cache_(cache), path_records_(path_records), upstream_(upstream), rate_(rate),
      idle_window_(idle_window), timer_(clock, executor) {}

void Refresher::schedule() {
    // Ten slices a second keep the refresh load smooth.
    timer_.expires_after(100ms);
    timer_.async_wait([this](auto ec) {
        if (ec)
            return;
        // A tenth of the rate per slice (below 10 a second the fraction carries over), and only
        // what the node's budget lets go now: the rest waits in the queue, in refresh-time order.
        const double per_slice = rate_ / 10.0;
        credit_ = std::min(credit_ + per_slice, std::max(per_slice, 1.0));
        const auto budget =
            std::min<std::size_t>(static_cast<std::size_t>(credit_), upstream_.background_room());
        credit_ -= static_cast<double>(budget);
        for (const auto& key : cache_.due_for_refresh(clock_.now(), budget, idle_window_))
            path_records_.refresh(key);
        schedule();
    });
}

} // namespace localsa::coherence
