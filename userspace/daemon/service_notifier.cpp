#include "daemon/service_notifier.hpp"

#include <spdlog/spdlog.h>
#ifdef LOCALSA_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include <cinttypes>
#include <cstdio>

namespace localsa {

ServiceNotifier::ServiceNotifier(boost::asio::any_io_executor executor,
                                 std::function<bool()> master_known,
                                 std::function<bool()> master_deferred,
                                 std::function<nlohmann::json()> stats, Config config)
    : timer_(std::move(executor)), master_known_(std::move(master_known)),
      master_deferred_(std::move(master_deferred)), stats_(std::move(stats)), config_(config) {}

void ServiceNotifier::start() {
    started_ = std::chrono::steady_clock::now();
    tick();
}

void ServiceNotifier::reloading() {
    notify("RELOADING=1");
}
void ServiceNotifier::reloaded() {
    notify("READY=1");
}

void ServiceNotifier::stopping() {
    timer_.cancel();
    notify("STOPPING=1");
}

std::string ServiceNotifier::status_line(const nlohmann::json& stats, bool master_known) {
    const auto count = [&](const char* name) -> std::uint64_t {
        const auto it = stats.find(name);
        return it != stats.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
    };
    const std::uint64_t requests = count("pr_requests");
    const std::uint64_t hits = count("pr_cache_hits") + count("pr_preload_hits");
    unsigned sm_lid = 0;
    if (const auto port = stats.find("port"); port != stats.end() && port->contains("sm_lid"))
        sm_lid = (*port)["sm_lid"].get<unsigned>();
    char line[256];
    if (requests == 0)
        std::snprintf(line, sizeof line,
                      "master SA at LID %u %s; no PathRecord query yet; %" PRIu64 " answers cached",
                      sm_lid, master_known ? "answered" : "not answered yet",
                      count("cache_entries"));
    else
        std::snprintf(line, sizeof line,
                      "master SA at LID %u %s; hit rate %.1f%% (%" PRIu64 " of %" PRIu64
                      " PathRecord queries); %" PRIu64 " answers cached",
                      sm_lid, master_known ? "answered" : "not answered yet",
                      100.0 * static_cast<double>(hits) / static_cast<double>(requests), hits,
                      requests, count("cache_entries"));
    return line;
}

void ServiceNotifier::tick() {
    const auto now = std::chrono::steady_clock::now();
    const bool known = master_known_();
    const bool deferred = !known && master_deferred_();
    if (!ready_ && (known || deferred || now - started_ >= config_.ready_deadline)) {
        ready_ = true;
        if (deferred)
            spdlog::info("ready: the master's ClassPortInfo is read later in the start's spread; "
                         "queries are relayed meanwhile");
        else if (!known)
            spdlog::warn("the master SA has not answered ClassPortInfo within {} ms; reporting "
                         "ready anyway (queries are relayed once it answers)",
                         config_.ready_deadline.count());
        notify("READY=1\nSTATUS=" + status_line(stats_(), known));
        last_status_ = now;
    } else if (ready_ && now - last_status_ >= config_.status_period) {
        const auto line = status_line(stats_(), known);
        if (line != last_line_)
            notify("STATUS=" + line);
        last_line_ = line;
        last_status_ = now;
    }
    timer_.expires_after(ready_ ? config_.status_period : config_.poll_period);
    timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec)
            tick();
    });
}

void ServiceNotifier::notify(const std::string& state) {
#ifdef LOCALSA_HAVE_SYSTEMD
    const int rc = sd_notify(0, state.c_str());
    if (rc < 0)
        spdlog::debug("sd_notify failed: {}", std::strerror(-rc));
#else
    (void)state;
#endif
}

} // namespace localsa
