#include "engine/upstream/upstream_client.hpp"

#include "engine/send.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"

#include <spdlog/spdlog.h>

#include <random>

namespace localsa::upstream {

UpstreamClient::UpstreamClient(boost::asio::any_io_executor executor,
                               transport::MadTransport& transport, Counters& counters,
                               UpstreamConfig config)
    : executor_(std::move(executor)), transport_(transport), counters_(counters), config_(config),
      tids_(std::random_device{}()) {}

UpstreamClient::~UpstreamClient() {
    for (auto& [tid, q] : in_flight_)
        q->timer->cancel();
}

void UpstreamClient::set_config(const UpstreamConfig& config) {
    config_ = config;
    pump_queue(); // a higher max_outstanding lets queued queries go now
}

std::uint32_t UpstreamClient::next_tid() {
    return tids_.next(in_flight_);
}

void UpstreamClient::submit(std::vector<std::uint8_t> request, ReplyHandler done) {
    auto q = std::make_unique<Query>();
    q->request = std::move(request);
    q->done = std::move(done);
    q->tries_left = config_.retries + 1;
    if (transport_.port().sm_lid == 0) {
        q->done({Outcome::NoMaster, {}});
        return;
    }
    if (in_flight_.size() < config_.max_outstanding) {
        launch(std::move(q));
        return;
    }
    if (queue_.size() >= config_.max_queued) {
        ++counters_.upstream_overflow;
        q->done({Outcome::Overloaded, {}});
        return;
    }
    queue_.push_back(std::move(q));
}

void UpstreamClient::launch(std::unique_ptr<Query> q) {
    q->tid = next_tid();
    q->timer = std::make_unique<boost::asio::steady_timer>(executor_);
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
    q.sent_to = port.sm_lid;
    // No master right now (SM LID 0 after a port event): the try expires like a lost MAD and a
    // later try may reach the new master.
    if (port.sm_lid == 0)
        ++counters_.send_errors;
    else
        send_counted(transport_, counters_, q.request, master, config_.try_timeout);
    const auto tid = q.tid;
    q.timer->expires_after(config_.try_timeout);
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
    if (q.tries_left <= 0) {
        ++counters_.upstream_timeouts;
        finish(tid, {Outcome::Timeout, {}});
        return;
    }
    // A fresh TID per try: a late answer to an earlier try is then told apart and counted.
    ++counters_.upstream_retries;
    auto node = in_flight_.extract(it);
    node.key() = next_tid();
    node.mapped()->tid = node.key();
    auto& again = *node.mapped();
    in_flight_.insert(std::move(node));
    transmit(again);
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
    if ((status & mad::status::kBusy) && it->second->tries_left > 0) {
        // BUSY: the master asks us to back off; the retry reuses the remaining tries.
        ++counters_.upstream_busy;
        auto& q = *it->second;
        q.timer->cancel();
        q.timer->expires_after(config_.busy_backoff);
        q.timer->async_wait([this, tid](const boost::system::error_code& ec) {
            if (ec)
                return;
            auto again = in_flight_.find(tid);
            if (again != in_flight_.end())
                transmit(*again->second);
        });
        return true;
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

void UpstreamClient::pump_queue() {
    while (!queue_.empty() && in_flight_.size() < config_.max_outstanding) {
        auto q = std::move(queue_.front());
        queue_.pop_front();
        launch(std::move(q));
    }
}

} // namespace localsa::upstream
