#include "sim/fleet/shared_port.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"

#include <spdlog/spdlog.h>

namespace localsa::fleet {

SharedPort::SharedPort(boost::asio::any_io_executor executor, transport::MadTransport& wire,
                       std::size_t max_in_flight, std::chrono::milliseconds slot_timeout)
    : executor_(executor), wire_(wire), max_in_flight_(max_in_flight ? max_in_flight : 1),
      slot_timeout_(slot_timeout), sweep_timer_(executor) {}

std::size_t SharedPort::add_owner(OwnerHandler handler) {
    owners_.push_back(std::move(handler));
    return owners_.size() - 1;
}

std::uint32_t SharedPort::next_tid() {
    return tids_.next(in_flight_);
}

bool SharedPort::send(std::size_t owner, mad::Bytes bytes, const transport::MadAddress& to,
                      std::chrono::milliseconds response_timeout) {
    if (bytes.size() < mad::kMadHeaderSize)
        return false;
    if (mad::method::is_response(bytes[mad::offset::kMethod])) {
        ++stats_.others_sent;
        return wire_.send(bytes, to, response_timeout);
    }
    Pending p{owner, {bytes.begin(), bytes.end()}, to, response_timeout};
    if (in_flight_.size() < max_in_flight_ && queue_.empty())
        return transmit(std::move(p));
    queue_.push_back(std::move(p));
    stats_.max_queued_seen = std::max(stats_.max_queued_seen, queue_.size());
    arm_sweep();
    return true;
}

bool SharedPort::transmit(Pending p) {
    const auto tid = next_tid();
    const auto owner_tid = mad::tid_of(p.mad);
    mad::set_tid(p.mad, (owner_tid & ~mad::kTidLowMask) | tid);
    in_flight_.emplace(tid, InFlight{p.owner, owner_tid, Clock::now()});
    if (!wire_.send(p.mad, p.to, p.timeout)) {
        in_flight_.erase(tid);
        ++stats_.send_failures;
        return false;
    }
    ++stats_.requests_sent;
    stats_.max_in_flight_seen = std::max(stats_.max_in_flight_seen, in_flight_.size());
    arm_sweep();
    return true;
}

void SharedPort::pump() {
    while (!queue_.empty() && in_flight_.size() < max_in_flight_) {
        auto p = std::move(queue_.front());
        queue_.pop_front();
        transmit(std::move(p)); // a failed send is the owner's timeout to notice
    }
}

void SharedPort::on_wire(transport::InboundMad in) {
    if (in.bytes.size() < mad::kMadHeaderSize)
        return;
    const auto tid = static_cast<std::uint32_t>(mad::tid_of(in.bytes) & mad::kTidLowMask);
    auto it = in_flight_.find(tid);
    if (it == in_flight_.end()) {
        ++stats_.unmatched;
        return;
    }
    const auto entry = it->second;
    in_flight_.erase(it);
    ++stats_.responses;
    mad::set_tid(in.bytes, entry.owner_tid);
    owners_[entry.owner](std::move(in));
    pump();
}

void SharedPort::arm_sweep() {
    if (sweep_armed_)
        return;
    sweep_armed_ = true;
    sweep_timer_.expires_after(std::chrono::milliseconds{100});
    sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
        sweep_armed_ = false;
        if (!ec)
            sweep();
    });
}

void SharedPort::sweep() {
    // umad2sim has no send timeouts: a request whose response never comes would hold its slot
    // for ever. The owner's own timers retry or give up; here only the slot is freed.
    const auto cutoff = Clock::now() - slot_timeout_;
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
        if (it->second.sent <= cutoff) {
            ++stats_.expired;
            it = in_flight_.erase(it);
        } else {
            ++it;
        }
    }
    pump();
    if (!in_flight_.empty() || !queue_.empty())
        arm_sweep();
}

bool NodeTransport::send(mad::Bytes bytes, const transport::MadAddress& to,
                         std::chrono::milliseconds response_timeout) {
    if (bytes.size() < mad::kMadHeaderSize)
        return false;
    // Answers to requesters on this node go back in-process; everything else (queries to the
    // master, ReportResp) goes out through the shared port. (On the SM's own node the master's
    // LID is the node's: the fleet subscribes to no Reports, so no ReportResp is sent there.)
    if (mad::method::is_response(bytes[mad::offset::kMethod]) && state_.owns_lid(to.lid)) {
        deliver_(bytes, to);
        return true;
    }
    return shared_.send(owner_, bytes, to, response_timeout);
}

} // namespace localsa::fleet
