// Coherence's preload: this port's paths as the master's tables (GetTable(PathRecord,
// SGID = own port, PKey) per partition), at start and after this port's own resync, after a
// random delay in the spread window, one transaction at a time; a table in use is renewed
// before the answers taken from it fall due.
#pragma once

#include "engine/cache/preload_table.hpp"
#include "engine/clock.hpp"
#include "engine/coherence/jitter.hpp"
#include "engine/counters.hpp"
#include "engine/handlers/path_record_service.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/gid.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace localsa::coherence {

struct PreloaderConfig {
    bool enabled = true;
    std::chrono::milliseconds validity{std::chrono::minutes{10}};
    std::chrono::milliseconds spread{std::chrono::seconds{30}};
    std::chrono::milliseconds try_timeout{200}; // per RMPP window of a table, see preload_step
};

class Preloader {
public:
    // `out_of_service`: GIDs the master reported gone; a table that arrives later drops them.
    Preloader(boost::asio::any_io_executor executor, Clock& clock,
              transport::MadTransport& transport, upstream::UpstreamClient& upstream,
              cache::PreloadTable& table, sa::PathRecordService& path_records, Counters& counters,
              const std::unordered_set<sa::Gid, sa::GidHash>& out_of_service,
              PreloaderConfig config);

    bool enabled() const { return config_.enabled; }
    // Preloads after a random delay in the spread window (the start).
    void schedule();
    // Preloads now (a resync's background part), unless one runs or the port is down.
    void start();
    // Forgets the tables and stops what is under way (a resync); answers to it are ignored.
    void reset();
    void stop();
    void set_config(const PreloaderConfig& config) { config_ = config; }
    // A trusted routing epoch: tables are kept until it changes, not renewed on age.
    void set_trusted(bool trusted);
    // The epoch changed: a table in use is renewed at a random moment within `window`, an
    // unused one is dropped (its paths read through when asked).
    void renew_within(std::chrono::milliseconds window);
    // Without an epoch: how long after a renewal the next one may come (0.8 TTL, doubled after
    // each renewal that found nothing changed, up to --max-staleness-s).
    Clock::duration renew_interval() const;
    // idle, disabled, waiting, loading, done or partial.
    const std::string& state() const { return state_; }

private:
    void step(std::vector<std::optional<std::uint16_t>> pkeys, std::size_t index,
              std::uint64_t generation);
    // After a preload: renews the tables once they were used and are 0.8 TTL old; gives up
    // once none answers any more.
    void schedule_renewal();

    Clock& clock_;
    transport::MadTransport& transport_;
    upstream::UpstreamClient& upstream_;
    cache::PreloadTable& table_;
    sa::PathRecordService& path_records_;
    Counters& counters_;
    const std::unordered_set<sa::Gid, sa::GidHash>& out_of_service_;
    PreloaderConfig config_;
    Timer timer_;
    Timer renew_timer_;
    Jitter jitter_;
    std::uint64_t generation_ = 0; // bumps on reset()
    bool running_ = false;
    std::string state_ = "idle";
    Clock::time_point preloaded_at_{}; // when the last preload ended
    bool trusted_ = false;
    bool renewal_ = false;     // the preload under way renews tables that were there
    bool any_changed_ = false; // one of its tables differed from the one it replaced
    int unchanged_renewals_ = 0;
};

} // namespace localsa::coherence
