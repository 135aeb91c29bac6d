// Tells the service manager (systemd, Type=notify) when localsad is ready and how it is doing.
// Without $NOTIFY_SOCKET every call is a no-op, as sd_notify(3) is.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace localsa {

class ServiceNotifier {
public:
    struct Config {
        // READY=1 at the latest after this long, also while the master SA has not answered:
        // the local SA is an accelerator, and a node must not wait for the SM to boot.
        std::chrono::milliseconds ready_deadline{30'000};
        std::chrono::milliseconds status_period{10'000};
        std::chrono::milliseconds poll_period{100};
    };
    // `master_known`: the master's ClassPortInfo has been received; `master_deferred`: its read
    // waits on purpose (a start spread over a large fabric): READY at once, the local SA relays
    // meanwhile; `stats`: the counters.
    ServiceNotifier(boost::asio::any_io_executor executor, std::function<bool()> master_known,
                    std::function<bool()> master_deferred, std::function<nlohmann::json()> stats,
                    Config config);

    void start();
    // RELOADING=1 / READY=1 around a SIGHUP, STOPPING=1 at shutdown.
    void reloading();
    void reloaded();
    void stopping();

    // The STATUS= line for these counters (public for tests).
    static std::string status_line(const nlohmann::json& stats, bool master_known);

private:
    void tick();
    void notify(const std::string& state);

    boost::asio::steady_timer timer_;
    std::function<bool()> master_known_;
    std::function<bool()> master_deferred_;
    std::function<nlohmann::json()> stats_;
    Config config_;
    std::chrono::steady_clock::time_point started_{};
    std::chrono::steady_clock::time_point last_status_{};
    bool ready_ = false;
    std::string last_line_;
};

} // namespace localsa
