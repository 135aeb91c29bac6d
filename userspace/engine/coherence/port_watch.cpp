#include "engine/coherence/port_watch.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace localsa::coherence {

using transport::PortEvent;
using transport::PortRead;

PortWatch::PortWatch(boost::asio::any_io_executor executor, Clock& clock,
                     transport::MadTransport& transport, transport::PortEventSource* events,
                     std::chrono::milliseconds period,
                     std::function<void(const std::string& why)> changed,
                     std::function<void()> unchanged)
    : clock_(clock), transport_(transport), events_(events), configured_period_(period),
      changed_(std::move(changed)), unchanged_(std::move(unchanged)), timer_(clock, executor),
      last_(transport.port()) {}

std::chrono::milliseconds PortWatch::period() const {
    if (configured_period_.count() > 0)
        return configured_period_;
    return follows_events() ? kSafetyPoll : kPollWithoutEvents;
}

void PortWatch::start() {
    // The transport read the whole port, PKeys too, when it opened it.
    last_ = transport_.port();
    pkeys_read_at_ = clock_.now();
    running_ = true;
    if (follows_events())
        events_->start([this](const auto& events) { on_events(events); },
                       [this](const std::string& why) { on_events_lost(why); });
    if (follows_events())
        spdlog::info("{} port {}: read on its events ({}), polled every {} ms besides", last_.ca,
                     last_.port, events_->name(), period().count());
    else
        spdlog::info("{} port {}: polled every {} ms (no port events)", last_.ca, last_.port,
                     period().count());
    schedule();
}

void PortWatch::stop() {
    running_ = false;
    timer_.cancel();
    if (follows_events())
        events_->stop();
}

void PortWatch::schedule() {
    timer_.expires_after(period());
    timer_.async_wait([this](auto ec) {
        if (ec)
            return;
        poll();
        schedule();
    });
}

void PortWatch::poll() {
    // The safety net for a PKey change whose event never came (or that no source reports).
    const bool pkeys_due = clock_.now() - pkeys_read_at_ >= kPkeyRecheck;
    check(pkeys_due ? PortRead::kWithPkeys : PortRead::kAttributes, false);
}

void PortWatch::on_events(const std::vector<PortEvent>& events) {
    const auto has = [&](PortEvent e) {
        return std::find(events.begin(), events.end(), e) != events.end();
    };
    // A port that came up may carry another PKey table: one read takes both.
    const bool pkeys = has(PortEvent::kPkeyChange) || has(PortEvent::kActive);
    check(pkeys ? PortRead::kWithPkeys : PortRead::kAttributes, has(PortEvent::kClientReregister));
}

void PortWatch::on_events_lost(const std::string& why) {
    events_lost_ = true;
    spdlog::warn("port events lost ({}): the port is polled every {} ms from now on", why,
                 period().count());
    if (running_)
        schedule(); // at the period without events
}

bool PortWatch::read(PortRead what, transport::PortState& into) {
    try {
        into = transport_.refresh_port(what);
    } catch (const std::exception& e) {
        spdlog::warn("cannot read the port: {}", e.what());
        return false;
    }
    if (what == PortRead::kWithPkeys)
        pkeys_read_at_ = clock_.now();
    return true;
}

void PortWatch::check(PortRead what, bool reregister) {
    transport::PortState now;
    if (!read(what, now))
        return;
    // Back active: the resync preloads per PKey, and the table may be another one now.
    if (what == PortRead::kAttributes && now.active() && !last_.active() &&
        !read(PortRead::kWithPkeys, now))
        return;
    const auto before = last_;
    last_ = now;
    if (!now.active()) {
        if (before.active())
            spdlog::warn("port {} not active (state {}): answering nothing from the cache",
                         now.port, now.state);
        return;
    }
    std::string why;
    if (!before.active())
        why = "port active again";
    else if (now.sm_lid != before.sm_lid || now.sm_sl != before.sm_sl)
        why = "SM moved from LID " + std::to_string(before.sm_lid) + " to " +
              std::to_string(now.sm_lid);
    else if (now.lid != before.lid || now.lmc != before.lmc)
        why = "LID changed from " + std::to_string(before.lid) + " to " + std::to_string(now.lid);
    else if (now.pkeys != before.pkeys)
        why = "PKey table changed";
    else if (now.gid != before.gid)
        why = "GID changed";
    else if (reregister)
        // An SM that restarted or took over holds none of this port's subscriptions.
        why = "the SM asked for client re-registration";
    if (!why.empty())
        changed_(why);
    else
        unchanged_();
}

} // namespace localsa::coherence
