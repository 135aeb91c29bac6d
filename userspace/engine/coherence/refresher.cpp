#include "engine/coherence/refresher.hpp"

#include <algorithm>

namespace localsa::coherence {

using namespace std::chrono_literals;

namespace {
// Ten slices a second keep the refresh load smooth while answers are due.
constexpr auto kSlice = 100ms;
} // namespace

Refresher::Refresher(boost::asio::any_io_executor executor, Clock& clock, cache::PathCache& cache,
                     sa::PathRecordService& path_records, upstream::UpstreamClient& upstream,
                     unsigned rate, std::chrono::milliseconds idle_window)
    : clock_(clock), cache_(cache), path_records_(path_records), upstream_(upstream), rate_(rate),
      idle_window_(idle_window), timer_(clock, executor) {}

void Refresher::start() {
    running_ = true;
    credited_at_ = clock_.now();
    cache_.on_earlier_refresh([this](Clock::time_point at) {
        if (running_ && (!armed_at_ || at < *armed_at_))
            arm(std::max(at, clock_.now()));
    });
    if (const auto next = cache_.next_refresh())
        arm(std::max(*next, clock_.now()));
}

void Refresher::stop() {
    running_ = false;
    armed_at_.reset();
    cache_.on_earlier_refresh({});
    timer_.cancel();
}

void Refresher::arm(Clock::time_point at) {
    armed_at_ = at;
    timer_.expires_at(at);
    timer_.async_wait([this](auto ec) {
        if (!ec)
            wake();
    });
}

void Refresher::wake() {
    ++wakeups_;
    armed_at_.reset();
    const auto now = clock_.now();
    // The rate's share of the time since the last wake (below 10 a second the fraction carries
    // over, at most one slice's worth is saved up), and only what the node's budget lets go
    // now: the rest waits in the queue, in refresh-time order.
    const double per_slice = rate_ / 10.0;
    const double earned = rate_ * std::chrono::duration<double>(now - credited_at_).count();
    credited_at_ = now;
    credit_ = std::min(credit_ + earned, std::max(per_slice, 1.0));
    const auto budget =
        std::min<std::size_t>(static_cast<std::size_t>(credit_), upstream_.background_room());
    credit_ -= static_cast<double>(budget);
    const auto due = cache_.due_for_refresh(now, budget, idle_window_);
    for (const auto& key : due)
        path_records_.refresh(key);
    if (!running_ || armed_at_)
        return; // stopped, or a store during the refreshes armed the timer already
    const auto next = cache_.next_refresh();
    if (!next)
        return; // nothing queued: a store wakes us
    // Something may still be due (the budget ran out): the next slice. Otherwise sleep until
    // the next refresh time.
    arm(std::max(*next, now + (*next <= now ? kSlice : Clock::duration::zero())));
}

} // namespace localsa::coherence
