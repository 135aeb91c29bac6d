#include "engine/events/report_fanout.hpp"

#include "engine/send.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"

#include <spdlog/spdlog.h>

#include <random>

namespace localsa::events {

ReportFanout::ReportFanout(boost::asio::any_io_executor executor, Clock& clock,
                           transport::MadTransport& transport, Counters& counters,
                           ClientSubscriptions& subscriptions, FanoutConfig config)
    : executor_(executor), clock_(clock), transport_(transport), counters_(counters),
      subscriptions_(subscriptions), config_(config), tids_(std::random_device{}()) {}

ReportFanout::~ReportFanout() {
    for (auto& [tid, p] : in_flight_)
        p.timer.cancel();
}

std::uint32_t ReportFanout::next_tid() {
    return tids_.next(in_flight_);
}

void ReportFanout::deliver(mad::Bytes report, const sa::Notice& notice) {
    for (const auto i : subscriptions_.matching(notice)) {
        const auto& sub = subscriptions_.at(i);
        if (in_flight_.size() >= config_.max_in_flight) {
            ++counters_.reports_undelivered;
            spdlog::warn("Report (trap {}) not sent to LID {} QPN {:#x}: {} Reports already wait "
                         "for their ReportResp",
                         notice.trap_number, sub.subscriber.lid, sub.subscriber.qpn,
                         in_flight_.size());
            continue;
        }
        const auto tid = next_tid();
        Pending p{sub, {report.begin(), report.end()}, config_.tries, Timer{clock_, executor_}};
        // Our own Report: our TID, and never the master's SM_Key (it is not the client's).
        mad::set_tid(p.report, tid);
        mad::store_be16(p.report, mad::offset::kStatus, 0);
        mad::store_be64(p.report, mad::offset::kSmKey, 0);
        p.to.subscriber.qkey = mad::kQp1Qkey; // what a subscriber's QP accepts SA traffic with
        in_flight_.emplace(tid, std::move(p));
        transmit(tid);
    }
}

void ReportFanout::transmit(std::uint32_t tid) {
    auto& p = in_flight_.at(tid);
    if (p.tries_left-- != config_.tries)
        ++counters_.report_retries;
    send_counted(transport_, counters_, p.report, p.to.subscriber, config_.try_timeout);
    p.timer.expires_after(config_.try_timeout);
    p.timer.async_wait([this, tid](auto ec) {
        if (ec)
            return;
        const auto it = in_flight_.find(tid);
        if (it == in_flight_.end())
            return;
        if (it->second.tries_left > 0)
            transmit(tid);
        else
            finish(tid, false);
    });
}

bool ReportFanout::handle_ack(const transport::InboundMad& ack) {
    const auto it = in_flight_.find(static_cast<std::uint32_t>(mad::tid_of(ack.bytes)));
    if (it == in_flight_.end())
        return false;
    // The subscriber's own QP acknowledges; another process on its LID cannot.
    const auto& to = it->second.to.subscriber;
    if (to.lid != ack.from.lid || to.qpn != ack.from.qpn)
        return false;
    finish(it->first, true);
    return true;
}

void ReportFanout::finish(std::uint32_t tid, bool delivered) {
    auto node = in_flight_.extract(tid);
    node.mapped().timer.cancel();
    if (delivered)
        ++counters_.reports_fanned_out;
    else
        ++counters_.reports_undelivered;
    if (outcome_)
        outcome_(node.mapped().to, delivered);
}

} // namespace localsa::events
