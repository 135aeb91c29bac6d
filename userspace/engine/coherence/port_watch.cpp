#include "engine/coherence/port_watch.hpp"

#include <spdlog/spdlog.h>

namespace localsa::coherence {

PortWatch::PortWatch(boost::asio::any_io_executor executor, Clock& clock,
                     transport::MadTransport& transport, std::chrono::milliseconds period,
                     std::function<void(const std::string& why)> changed,
                     std::function<void()> unchanged)
    : transport_(transport), period_(period), changed_(std::move(changed)),
      unchanged_(std::move(unchanged)), timer_(clock, executor), last_(transport.port()) {}

void PortWatch::start() {
    last_ = transport_.port();
    schedule();
}

void PortWatch::schedule() {
    timer_.expires_after(period_);
    timer_.async_wait([this](auto ec) {
        if (ec)
            return;
        poll();
        schedule();
    });
}

void PortWatch::poll() {
    transport::PortState now;
    try {
        now = transport_.refresh_port();
    } catch (const std::exception& e) {
        spdlog::warn("cannot read the port: {}", e.what());
        return;
    }
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
    if (!why.empty())
        changed_(why);
    else
        unchanged_();
}

} // namespace localsa::coherence
