#include "sim/fleet/query_engine.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace localsa::fleet {

using SteadyClock = std::chrono::steady_clock;

EngineResult QueryEngine::run(std::uint64_t total, Submit submit, Check check) {
    total_ = total;
    next_ = done_ = 0;
    submit_ = std::move(submit);
    check_ = std::move(check);
    outstanding_.clear();
    latencies_us_.clear();
    latencies_us_.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(total, 1u << 24)));
    result_ = {};
    result_.queries = total;
    const auto t0 = SteadyClock::now();
    auto guard = boost::asio::make_work_guard(io_);
    io_.restart();
    pump();
    arm_timer();
    while (done_ < total_)
        io_.run_one_for(std::chrono::milliseconds{100});
    timer_.cancel();
    result_.seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    if (!latencies_us_.empty()) {
        auto pct = [this](double p) {
            const auto k =
                static_cast<std::size_t>(p * static_cast<double>(latencies_us_.size() - 1));
            std::nth_element(latencies_us_.begin(), latencies_us_.begin() + static_cast<long>(k),
                             latencies_us_.end());
            return static_cast<double>(latencies_us_[k]);
        };
        result_.lat_p50_us = pct(0.50);
        result_.lat_p99_us = pct(0.99);
        result_.lat_max_us = *std::max_element(latencies_us_.begin(), latencies_us_.end());
    }
    // Late answers of this run must not be taken for the next run's.
    outstanding_.clear();
    return result_;
}

void QueryEngine::pump() {
    in_pump_ = true;
    while (next_ < total_ && outstanding_.size() < depth_) {
        const auto q = next_++;
        do {
            ++tid_;
        } while (tid_ == 0 || outstanding_.contains(tid_));
        const auto tid = tid_;
        outstanding_.emplace(tid, Outstanding{q, SteadyClock::now()});
        if (!submit_(q, tid)) {
            if (outstanding_.erase(tid)) {
                ++result_.timeouts;
                finish_one();
            }
        }
    }
    in_pump_ = false;
}

void QueryEngine::schedule_pump() {
    if (in_pump_ || pump_posted_)
        return;
    pump_posted_ = true;
    boost::asio::post(io_, [this] {
        pump_posted_ = false;
        pump();
    });
}

void QueryEngine::finish_one() {
    ++done_;
    schedule_pump();
}

void QueryEngine::on_response(mad::Bytes resp) {
    if (resp.size() < mad::kSaHeaderSize)
        return;
    const auto tid = static_cast<std::uint32_t>(mad::tid_of(resp) & mad::kTidLowMask);
    auto it = outstanding_.find(tid);
    if (it == outstanding_.end())
        return;
    const auto o = it->second;
    outstanding_.erase(it);
    latencies_us_.push_back(static_cast<float>(
        std::chrono::duration<double, std::micro>(SteadyClock::now() - o.sent).count()));
    ++result_.answered;
    const auto status = mad::load_be16(resp, mad::offset::kStatus);
    if (status != 0) {
        if (!result_.bad_status)
            result_.first_bad_status = status;
        ++result_.bad_status;
    } else if (check_(o.q, resp)) {
        ++result_.ok;
    } else {
        ++result_.wrong;
    }
    finish_one();
}

void QueryEngine::arm_timer() {
    timer_.expires_after(std::chrono::milliseconds{50});
    timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec)
            return;
        const auto cutoff = SteadyClock::now() - timeout_;
        for (auto it = outstanding_.begin(); it != outstanding_.end();) {
            if (it->second.sent <= cutoff) {
                it = outstanding_.erase(it);
                ++result_.timeouts;
                finish_one();
            } else {
                ++it;
            }
        }
        if (done_ < total_)
            arm_timer();
    });
}

} // namespace localsa::fleet
