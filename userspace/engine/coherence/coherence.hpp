// Keeps the local SA's cache coherent with the master. Coherence runs four jobs, one file each:
//  - subscriptions.hpp: the event subscriptions at the master (this port's traps and its
//    clients'), confirmed, retried and audited;
//  - refresher.hpp: refresh of the cached answers in use (re-routes raise no trap);
//  - preloader.hpp: this port's paths as the master's tables, at start and after a resync;
//  - port_watch.hpp: the port's LID, SM, PKeys and state, read on port events and polled;
// and itself acts on the master's Reports (answers dropped) and resyncs (flush, then the jobs
// again after a random delay) when the port watch or the subscription audit says so.
#pragma once

#include "engine/coherence/jitter.hpp"
#include "engine/coherence/parts.hpp"
#include "engine/coherence/port_watch.hpp"
#include "engine/coherence/preloader.hpp"
#include "engine/coherence/refresher.hpp"
#include "engine/coherence/routing_epoch.hpp"
#include "engine/coherence/routing_epoch_source.hpp"
#include "engine/coherence/subscriptions.hpp"
#include "ib/gid.hpp"
#include "ib/notice.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>

namespace localsa::coherence {

class Coherence : public RoutingEpochListener {
public:
    Coherence(boost::asio::any_io_executor executor, Parts parts, CoherenceConfig config);
    ~Coherence() override;
    Coherence(const Coherence&) = delete;
    Coherence& operator=(const Coherence&) = delete;

    void start();
    // Unsubscribes (best effort) and calls `done` once the master answered or after a bound.
    void shutdown(std::function<void()> done);
    // Handles one Report (the LocalSa already acknowledged it).
    void on_report(const sa::Notice& notice, std::uint64_t tid);
    // Flushes the cache and re-subscribes (SM change, LID change, client re-register, ...).
    void resync(const std::string& why);
    void add_stats(nlohmann::json& stats) const;
    // The preload's state (Preloader::state(): idle, disabled, waiting, loading, done, partial).
    const std::string& preload_state() const { return preloader_.state(); }
    // One port poll, as the poll timer runs it: a resync when the port came back active or its
    // SM, LID, PKeys or GID changed.
    void poll_port() { port_watch_.poll(); }
    // Applies a new refresh rate, port poll period and preload period (from the next timer
    // run); subscribing and preloading on or off are fixed at start.
    void reconfigure(const CoherenceConfig& config);

    void on_routing_epoch(const RoutingEpoch& epoch) override;
    void on_routing_epoch_lost(std::string_view why) override;
    bool epoch_trusted() const { return trusted_; }
    // The spread window of a renewal after an epoch change: what this node renews (its table's
    // records, else a Get per answer in use) times the nodes (the fabric's ports as known),
    // over the master's capacity in records or transactions; 1 s to 1 h.
    std::chrono::milliseconds renewal_window() const;
    // The window a start spreads its subscriptions and the epoch's first read over: the
    // queries a start costs the master, times the fabric's ports as known, over
    // --master-transactions (0 while the fabric's size is unknown; at most 10 min). A fabric
    // powered on at once must not reach the master with all its Sets in the same seconds.
    std::chrono::milliseconds start_window() const;
    // How often the subscriptions are audited: --subscription-check-s, longer on a large
    // fabric (audits take at most kAuditShare of --master-transactions); 0: never.
    std::chrono::milliseconds audit_period() const;
    static constexpr double kAuditShare = 0.05;
    // The master's ClassPortInfo is read later on purpose, by this start's spread (a large
    // fabric): LocalSa::start() must not read it now. The local SA relays meanwhile, as it does
    // until it knows the master.
    bool class_port_info_deferred() const { return class_port_info_deferred_; }

private:
    // Subscribes, and starts the audit the first time.
    void start_subscriptions();
    void trust(bool changed);
    void resync_background(std::uint64_t generation);
    std::size_t invalidate_gid(const sa::Gid& gid);
    bool is_stale(const cache::PathQueryKey& key, const cache::PathAnswer& answer) const;

    Parts parts_;
    CoherenceConfig config_;
    // GIDs the master reported out of service and not back yet (the preloader reads it).
    std::unordered_set<sa::Gid, sa::GidHash> out_of_service_;
    Subscriptions subscriptions_;
    Preloader preloader_;
    Refresher refresher_;
    PortWatch port_watch_;
    RoutingEpochSource epoch_source_;
    std::optional<RoutingEpoch> epoch_;
    bool trusted_ = false;
    Clock::time_point epoch_changed_at_{};
    std::uint64_t epoch_changes_ = 0;
    std::string epoch_lost_why_;
    Timer resync_timer_;
    Timer start_timer_;
    Timer class_port_info_timer_; // a start's ClassPortInfo read, at its own point of the window
    bool class_port_info_deferred_ = false;
    bool subscriptions_started_ = false; // their audit runs
    Jitter jitter_;
    bool resync_waits_for_port_ = false; // a resync found the port down: the poll finishes it
    std::uint64_t generation_ = 0;       // bumps on resync; a delayed older one is dropped
};

} // namespace localsa::coherence
