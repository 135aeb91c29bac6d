// Coherence's preload: this port's paths as the master's tables (GetTable(PathRecord,
// SGID = own port, PKey) per partition), at start and after this port's own resync, after a
// random delay in the spread window, one transaction at a time; a table in use is renewed
// before the answers taken from it fall due.
#pragma once

#include "engine/cache/path_cache.hpp"
#include "engine/cache/preload_table.hpp"
#include "engine/cache/warm_set.hpp"
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
#include <filesystem>
#include <functional>
#include <map>
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
    // Full tables only while the fabric has at most this many ports (0: never): a table is N
    // records, N nodes ask it, N^2 in all (CoherenceConfig::preload_max_ports). Above it the
    // warm set and `destinations` are asked instead, one Get each.
    std::size_t max_ports = 774;
    // The fabric's size if known otherwise (0: from the warm file, else from the first table).
    std::size_t fabric_ports = 0;
    // Where the warm set is kept across restarts (empty: not kept).
    std::filesystem::path warm_file;
    std::size_t warm_max = 1024;
    std::chrono::milliseconds warm_save{std::chrono::minutes{5}};
    // The admin's destinations (--preload-dest), asked at start in either mode.
    std::vector<cache::Destination> destinations;
    // Above the threshold: cold misses to this share of the fabric's ports within a second
    // ask the partition's table instead (percent; 0: never), each miss waiting `burst_coalesce`
    // for others (sa::MissBurstConfig).
    std::size_t burst_share_percent = 50;
    std::chrono::milliseconds burst_coalesce{5};
    // The master's transactions a second for what the fabric's nodes ask together (a start,
    // a resync), and the queries a start costs besides its warm-up (CoherenceConfig).
    unsigned master_transactions = 1000;
    std::size_t start_queries = 9;
    // The PathRecords a second the master computes for what the nodes ask together
    // (--master-capacity): paces the tables asked for bursts of cold misses.
    unsigned master_capacity = 20000;
};

class Preloader {
public:
    // `out_of_service`: GIDs the master reported gone; a table that arrives later drops them.
    Preloader(boost::asio::any_io_executor executor, Clock& clock,
              transport::MadTransport& transport, upstream::UpstreamClient& upstream,
              cache::PreloadTable& table, sa::PathRecordService& path_records, Counters& counters,
              const std::unordered_set<sa::Gid, sa::GidHash>& out_of_service,
              PreloaderConfig config);
    ~Preloader();
    Preloader(const Preloader&) = delete;
    Preloader& operator=(const Preloader&) = delete;

    bool enabled() const { return config_.enabled; }
    // Preloads after a random delay in the spread window (the start).
    void schedule();
    // Preloads now (a resync's background part), unless one runs or the port is down.
    void start();
    // Forgets the tables and stops what is under way (a resync); answers to it are ignored.
    void reset();
    void stop();
    // Stops, and writes the warm set (the daemon's exit).
    void shutdown();
    void set_config(const PreloaderConfig& config);
    // Whether a preload now asks full tables (the fabric is small, or its size not known yet:
    // the first table tells it) rather than the warm set.
    bool full_tables() const;
    // The fabric's size as known (0: not known).
    std::size_t fabric_ports() const;
    // The Gets a warm-up asks: the admin's destinations, then the warm set's most recent
    // (none with full tables), at most what fits beside a start's queries in kMaxStartWindow.
    std::size_t warm_up_size() const;
    // The window a start or resync spreads its queries over, warm-up included: they, times
    // the fabric's ports, over master_transactions (0 while the size is unknown).
    std::chrono::milliseconds start_window() const;
    static constexpr std::chrono::minutes kMaxStartWindow{10};
    const cache::WarmSet& warm_set() const { return warm_; }
    // Writes the warm set to its file now; false (and a log line) if it could not.
    bool save_warm_set();
    // A trusted routing epoch: tables are kept until it changes, not renewed on age.
    void set_trusted(bool trusted);
    // The epoch changed: a table in use is renewed at a random moment within `window`, an
    // unused one is dropped (its paths read through when asked).
    void renew_within(std::chrono::milliseconds window);
    // Without an epoch: how long after a renewal the next one may come (0.8 TTL, doubled after
    // each renewal that found nothing changed, up to --max-staleness-s).
    Clock::duration renew_interval() const;
    // How long after it came a table refreshes answers without the epoch (renewed by then).
    Clock::duration table_freshness() const;
    // Distinct cold misses to a partition within a second that ask its table (0: never):
    // above the threshold, burst_share_percent of the fabric's ports, at least 32.
    std::size_t burst_threshold() const;
    // How long after its burst this port asks the table, for a burst of `misses` destinations
    // (0: at once). A job that makes this port miss that many makes about as many ports ask a
    // table of the fabric's ports at the same moment: they are spread over the window the
    // master's capacity needs for all of them, each port at its own slot (its LID).
    std::chrono::milliseconds burst_table_delay(std::size_t misses) const;
    // A table asked `delay` after its burst comes after the held misses' requesters give up
    // (half of --requester-deadline-ms left for the master's answer): they are answered BUSY.
    bool burst_table_late(std::chrono::milliseconds delay) const;
    // idle, disabled, waiting, loading, done, partial, warming or warm.
    const std::string& state() const { return state_; }

    // A table not received is asked again after 5 s, doubling up to 10 min, each wait
    // jittered (half to all of it) so that the nodes a master ignored do not come back together.
    static constexpr std::chrono::milliseconds kRetryFirst{std::chrono::seconds{5}};
    static constexpr std::chrono::milliseconds kRetryMax{std::chrono::minutes{10}};

private:
    // Asks the tables of `pkeys`, one at a time (a renewal when they replace tables in use).
    void load(std::vector<std::optional<std::uint16_t>> pkeys, bool renewal);
    // After a first preload that missed tables: those again, after the back-off.
    void schedule_retry();
    void step(std::vector<std::optional<std::uint16_t>> pkeys, std::size_t index,
              std::uint64_t generation);
    // After a preload: renews the tables once they were used and are 0.8 TTL old; gives up
    // once none answers any more.
    void schedule_renewal();
    // Above the threshold: the warm set and the admin's destinations, one background Get each,
    // paced at the master rate budget.
    void warm_up();
    void warm_step(std::vector<cache::PathQueryKey> questions, std::size_t index,
                   std::uint64_t generation);
    void schedule_save();
    // GetTable(PathRecord, SGID = this port [, PKey]) into the table; `done(ok)` after, or
    // `superseded()` when a reset came first (its answer is dropped).
    void ask_table(std::optional<std::uint16_t> pkey, upstream::Priority priority,
                   std::function<void(bool ok)> done, std::function<void()> superseded);
    // Gives PathRecordService the burst rule of the mode now (after the fabric's size is known).
    void update_miss_burst();
    void install_burst_hooks();

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
    Timer save_timer_;
    cache::WarmSet warm_;
    bool warm_loaded_ = false;
    std::string save_error_; // the last failure to write the warm set, logged once
    Jitter jitter_;
    std::uint64_t generation_ = 0; // bumps on reset()
    bool running_ = false;
    std::string state_ = "idle";
    Clock::time_point preloaded_at_{}; // when the last preload ended
    bool trusted_ = false;
    bool renewal_ = false;     // the preload under way renews tables that were there
    bool any_changed_ = false; // one of its tables differed from the one it replaced
    int unchanged_renewals_ = 0;
    // The partitions whose table the preload under way did not get, asked again after
    // retry_delay_ (doubling up to kRetryMax): a lost or BUSY answer, or OpenSM ignoring SA
    // requests during its first sweep, must not leave the preload partial until a resync.
    std::vector<std::optional<std::uint16_t>> failed_;
    std::chrono::milliseconds retry_delay_{kRetryFirst};
    boost::asio::any_io_executor executor_;
    std::map<std::optional<std::uint16_t>, Timer> burst_timers_; // coalescing windows
};

} // namespace localsa::coherence
