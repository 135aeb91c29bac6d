#include "engine/upstream/upstream_client.hpp"

#include "engine/send.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

namespace localsa::upstream {

UpstreamClient::UpstreamClient(boost::asio::any_io_executor executor, Clock& clock,
                               transport::MadTransport& transport, Counters& counters,
                               UpstreamConfig config)
    : executor_(std::move(executor)), clock_(clock), transport_(transport), counters_(counters),
      config_(config), tids_(std::random_device{}()), tokens_(config.background_burst),
      refilled_(clock_.now()), jitter_state_(std::random_device{}() | 1ULL << 40),
      pump_timer_(clock_, executor_) {}

UpstreamClient::~UpstreamClient() {
    for (auto& [tid, q] : in_flight_)
        q->timer->cancel();
    pump_timer_.cancel();
}

void UpstreamClient::set_config(const UpstreamConfig& config) {
    config_ = config;
    tokens_ = std::min<double>(tokens_, config_.background_burst);
    pump_queue(); // a higher max_outstanding lets queued queries go now
}

std::uint32_t UpstreamClient::next_tid() {
    return tids_.next(in_flight_);
}

void UpstreamClient::refill(Clock::time_point now) {
    if (now > refilled_) {
        const std::chrono::duration<double> dt = now - refilled_;
        tokens_ = std::min<double>(config_.background_burst,
                                   tokens_ + dt.count() * config_.background_rate);
    }
    refilled_ = now;
}

std::size_t UpstreamClient::background_room() {
    refill(clock_.now());
    const auto tokens = static_cast<std::size_t>(tokens_);
    return tokens > background_queue_.size() ? tokens - background_queue_.size() : 0;
}

void UpstreamClient::submit(std::vector<std::uint8_t> request, ReplyHandler done,
                            SubmitOptions options) {
    auto q = std::make_unique<Query>();
    q->request = std::move(request);
    q->done = std::move(done);
    q->tries_left = options.single_try ? 1 : config_.retries + 1;
    q->options = options;
    if (transport_.port().sm_lid == 0) {
        q->done({Outcome::NoMaster, {}});
        return;
    }
    auto& queue = options.priority == Priority::Client ? queue_ : background_queue_;
    queue.push_back(std::move(q));
    pump_queue();
    if (queue.size() > config_.max_queued) {
        // It could not go at once and no room is left behind the others.
        auto last = std::move(queue.back());
        queue.pop_back();
        ++counters_.upstream_overflow;
        last->done({Outcome::Overloaded, {}});
    }
}

void UpstreamClient::arm_pump(Clock::time_point at) {
    if (pump_armed_ && pump_at_ <= at)
        return;
    pump_armed_ = true;
    pump_at_ = at;
    pump_timer_.expires_at(at);
    pump_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec)
            return;
        pump_armed_ = false;
        pump_queue();
    });
}

void UpstreamClient::pump_queue() {
    const auto now = clock_.now();
    if (now < held_until_) {
        if (!queue_.empty() || !background_queue_.empty())
            arm_pump(held_until_);
        return;
    }
    refill(now);
    while (in_flight_.size() < config_.max_outstanding) {
        if (!queue_.empty()) {
            auto q = std::move(queue_.front());
            queue_.pop_front();
            if (expired(*q, now)) {
                ++counters_.upstream_expired; // its requester has given up: not sent
                q->done({Outcome::Timeout, {}});
                continue;
            }
            tokens_ = std::max(0.0, tokens_ - 1); // background work yields to clients
            launch(std::move(q));
            continue;
        }
        if (background_queue_.empty())
            break;
        if (expired(*background_queue_.front(), now)) {
            auto q = std::move(background_queue_.front());
            background_queue_.pop_front();
            ++counters_.upstream_expired;
            q->done({Outcome::Timeout, {}});
            continue;
        }
        if (tokens_ < 1) {
            const auto wait = std::chrono::duration<double>((1 - tokens_) /
                                                            std::max(1u, config_.background_rate));
            arm_pump(now + std::chrono::duration_cast<Clock::duration>(wait) +
                     std::chrono::milliseconds{1});
            break;
        }
        tokens_ -= 1;
        auto q = std::move(background_queue_.front());
        background_queue_.pop_front();
        launch(std::move(q));
    }
}

void UpstreamClient::launch(std::unique_ptr<Query> q) {
    q->tid = next_tid();
    if (!q->timer)
        q->timer.emplace(clock_, executor_);
    auto& ref = *q;
    in_flight_.emplace(q->tid, std::move(q));
    transmit(ref);
}

void UpstreamClient::transmit(Query& q) {
    --q.tries_left;
    const auto old = mad::tid_of(q.request);
    mad::set_tid(q.request, (old & ~mad::kTidLowMask) | q.tid);
    const auto port = transport_.port();
    transport::MadAddress master;
    master.lid = port.sm_lid;
    master.sl = port.sm_sl;
    ++counters_.upstream_requests;
    if (q.options.priority == Priority::Background)
        ++counters_.upstream_background_requests;
    q.sent_to = port.sm_lid;
    auto timeout = q.options.try_timeout.value_or(config_.try_timeout);
    if (q.options.single_try)
        timeout = std::max(timeout, config_.patience());
    // A try that ends past the requester's deadline is the last one (no try starts after it):
    // it waits what the tries left would have, so that the answer of a master slower than one
    // try still lands in the cache for the next requester, and is not thrown away as late.
    // (A BUSY answer within the deadline still gets its retry: tries_left is kept.)
    if (q.options.deadline && q.tries_left > 0 && clock_.now() + timeout >= *q.options.deadline)
        timeout *= q.tries_left + 1;
    // No master right now (SM LID 0 after a port event): the try expires like a lost MAD and a
    // later try may reach the new master.
    if (port.sm_lid == 0)
        ++counters_.send_errors;
    else
        send_counted(transport_, counters_, q.request, master, timeout);
    const auto tid = q.tid;
    q.timer->expires_after(timeout);
    q.timer->async_wait([this, tid](const boost::system::error_code& ec) {
        if (!ec)
            on_timer(tid);
    });
}

void UpstreamClient::on_timer(std::uint32_t tid) {
    auto it = in_flight_.find(tid);
    if (it == in_flight_.end())
        return;
    auto& q = *it->second;
    // Retries never outlast the requester: past its deadline nobody waits for the answer.
    if (q.tries_left <= 0 || expired(q, clock_.now())) {
        ++counters_.upstream_timeouts;
        finish(tid, {Outcome::Timeout, {}});
        return;
    }
    ++counters_.upstream_retries;
    requeue(tid);
}

void UpstreamClient::requeue(std::uint32_t tid) {
    // A fresh TID per try (launch): a late answer to an earlier try is then told apart and
    // counted. A retry waits its turn like any query, a background one for a token.
    auto node = in_flight_.extract(tid);
    auto q = std::move(node.mapped());
    q->timer->cancel();
    auto& queue = q->options.priority == Priority::Client ? queue_ : background_queue_;
    queue.push_front(std::move(q));
    pump_queue();
}

bool UpstreamClient::handle_response(const transport::InboundMad& in) {
    const auto tid = static_cast<std::uint32_t>(mad::tid_of(in.bytes) & mad::kTidLowMask);
    auto it = in_flight_.find(tid);
    if (it == in_flight_.end()) {
        ++counters_.upstream_late_responses;
        return false;
    }
    // Only the SM this try went to answers it: TIDs are sequential after a random start, so
    // another port could otherwise guess one and answer for the master.
    if (in.from.lid != it->second->sent_to) {
        ++counters_.upstream_wrong_source;
        return false;
    }
    ++counters_.upstream_responses;
    const auto status = mad::load_be16(in.bytes, mad::offset::kStatus);
    if (status & mad::status::kBusy) {
        // BUSY: the master asks this node to back off. Everything waits, not only this query,
        // exponentially longer while BUSY comes in a row, jittered so nodes do not return at once.
        ++counters_.upstream_busy;
        const auto now = clock_.now();
        const std::chrono::milliseconds ceiling = std::min<std::chrono::milliseconds>(
            config_.busy_backoff * (std::int64_t{1} << std::min(busy_in_a_row_, 16u)),
            std::max(config_.busy_backoff, config_.busy_backoff_max));
        ++busy_in_a_row_;
        jitter_state_ ^= jitter_state_ << 13;
        jitter_state_ ^= jitter_state_ >> 7;
        jitter_state_ ^= jitter_state_ << 17;
        const auto half = ceiling.count() / 2;
        const auto hold = std::chrono::milliseconds{
            half + (half ? static_cast<std::int64_t>(jitter_state_ % (half + 1)) : 0)};
        held_until_ = std::max(held_until_, now + hold);
        auto& q = *it->second;
        if (q.tries_left > 0 && !expired(q, now)) {
            requeue(tid);
            return true;
        }
    } else {
        busy_in_a_row_ = 0;
    }
    finish(tid, {Outcome::Response, in.bytes});
    return true;
}

void UpstreamClient::finish(std::uint32_t tid, Reply reply) {
    auto it = in_flight_.find(tid);
    if (it == in_flight_.end())
        return;
    auto q = std::move(it->second);
    in_flight_.erase(it);
    q->timer->cancel();
    q->done(std::move(reply)); // the requester first: its answer is what the waiting is for
    pump_queue();
}

} // namespace localsa::upstream
