// Keeps the local SA's cache coherent with the master: event subscriptions (InformInfo) and
// the Reports they bring, periodic refresh of cached answers (re-routes raise no trap), and a
// resync (flush, re-subscribe) when the port's LID, SM, PKeys or state change.
#pragma once

#include "engine/cache/path_cache.hpp"
#include "engine/cache/preload_table.hpp"
#include "engine/clock.hpp"
#include "engine/counters.hpp"
#include "engine/events/master_subscriptions.hpp"
#include "engine/handlers/class_port_info_service.hpp"
#include "engine/handlers/inform_info_service.hpp"
#include "engine/handlers/path_record_service.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/gid.hpp"
#include "ib/notice.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace localsa::coherence {

struct CoherenceConfig {
    bool subscribe = true;
    // How often the port's attributes are read (LID, SM LID, state, PKeys).
    std::chrono::milliseconds port_poll{1000};
    // Refresh queries sent to the master per second at most, so a refresh never bursts.
    unsigned refresh_rate = 200;
    // Subscriptions the master did not confirm are tried again after this long.
    std::chrono::milliseconds resubscribe_retry{std::chrono::seconds{5}};
    // How often the master is asked whether it still holds this port's subscriptions
    // (Get(InformInfoRecord, SubscriberGID = own)). A restarted or failed-over SM forgets them
    // and, on the same LID, leaves nothing the port poll could see. Zero: never.
    std::chrono::milliseconds subscription_check{std::chrono::seconds{60}};
    // Preload: GetTable(PathRecord, SGID = own port, PKey) at start and after this port's own
    // resync; a table is used for `validity` after it arrived (what it answered stays cached
    // while used). A table that answered since it came (a hit, or an answer refreshed from it)
    // is asked again once 0.8 TTL old, before the answers taken from it fall due: they are
    // then refreshed from the new table, without a query each; an unused table is left to
    // expire. Needs RMPP (not under umad2sim).
    bool preload = true;
    std::chrono::milliseconds preload_validity{std::chrono::minutes{10}};
    // The preload at start and the background part of a resync (re-subscribe, preload) wait a
    // random delay up to this long, so that the nodes of a fabric, which see an SM change or a
    // reboot at the same moment, do not reach the new master together.
    std::chrono::milliseconds spread{std::chrono::seconds{30}};
    // An answer not used for this long is dropped at its refresh time instead of refreshed;
    // zero: one not used since it was stored or last refreshed (one TTL).
    std::chrono::milliseconds idle_window{0};
    // The per-try wait of a preload GetTable: its RMPP transfer takes longer with every record
    // (a fabric of thousands of ports sends hundreds of segments), so it is sized by the table.
    std::chrono::milliseconds try_timeout{200};
};

// The traps the local SA subscribes to (sa-facts: 64-67 from the SM, 144/145 forwarded).
inline constexpr std::uint16_t kSubscribedTraps[] = {
    sa::trap::kGidInService,   sa::trap::kGidOutOfService,      sa::trap::kMcGroupCreated,
    sa::trap::kMcGroupDeleted, sa::trap::kCapabilityMaskChange, sa::trap::kSystemImageGuidChange};

// The parts of one local SA that coherence acts on (LocalSa::coherence_parts() hands them out),
// rather than the whole LocalSa: what it may touch is written here.
struct Parts {
    // The local SA's clock: coherence reads the time and arms its timers on it too.
    Clock& clock;
    transport::MadTransport& transport;
    Counters& counters;
    cache::PathCache& cache;
    cache::PreloadTable& preload;
    upstream::UpstreamClient& upstream;
    sa::PathRecordService& path_records;
    sa::ClassPortInfoService& class_port_info;
    // Where clients' subscriptions are held at the master (set_master).
    sa::InformInfoService& inform_info;
    // Registers the handler of the master's Reports (after they were acknowledged).
    std::function<void(std::function<void(const sa::Notice&, std::uint64_t tid)>)> on_report;
};

class Coherence : public events::MasterSubscriptions {
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
    // Traps clients of this port subscribed to, held at the master besides our own.
    void hold(std::uint16_t trap, std::function<void(std::uint16_t status)> done) override;
    void release(std::uint16_t trap) override;
    // Flushes the cache and re-subscribes (SM change, LID change, client re-register, ...).
    void resync(const std::string& why);
    void add_stats(nlohmann::json& stats) const;
    // One port poll, as the poll timer runs it: a resync when the port came back active or its
    // SM, LID, PKeys or GID changed.
    void poll_port();
    // Applies a new refresh rate, port poll period and preload period (from the next timer
    // run); subscribing and preloading on or off are fixed at start.
    void reconfigure(const CoherenceConfig& config);

private:
    void subscribe_all(bool subscribe);
    void send_subscription(std::uint16_t trap, bool subscribe);
    void on_subscribed(std::uint16_t trap, const upstream::Reply& reply);
    bool own_trap(std::uint16_t trap) const;
    void schedule_subscription_check();
    void check_subscriptions();
    // Preloads after a random delay in the spread window.
    void schedule_preload();
    void start_preload();
    std::chrono::milliseconds random_delay(std::chrono::milliseconds window);
    void resync_background(std::uint64_t generation);
    void preload_step(std::vector<std::optional<std::uint16_t>> pkeys, std::size_t index,
                      std::uint64_t generation);
    // After a preload: renews the tables once they were used and are 0.8 TTL old; gives up
    // once none answers any more.
    void schedule_renewal();
    void schedule_refresh();
    void schedule_port_poll();
    std::size_t invalidate_gid(const sa::Gid& gid);
    bool is_stale(const cache::PathQueryKey& key, const cache::PathAnswer& answer) const;

    boost::asio::any_io_executor executor_;
    Parts parts_;
    CoherenceConfig config_;
    Timer refresh_timer_;
    double refresh_credit_ = 0; // refreshes allowed but not yet sent (rates below 10/s)
    Timer port_timer_;
    Timer resubscribe_timer_;
    Timer preload_timer_;
    Timer check_timer_;
    Timer resync_timer_;
    Timer renew_timer_;
    Clock::time_point preloaded_at_{}; // when the last preload ended
    std::uint64_t random_state_;
    std::string preload_state_ = "idle";
    bool preload_running_ = false;
    bool resync_waits_for_port_ = false; // a resync found the port down: the poll finishes it
    transport::PortState last_port_;
    // Traps held at the master: our own (when subscribing) and those clients asked for.
    std::set<std::uint16_t> wanted_;
    std::set<std::uint16_t> subscribed_; // confirmed by the master
    std::set<std::uint16_t> in_flight_;  // Set sent, answer awaited
    // Clients' Sets waiting for the master to confirm a trap.
    std::map<std::uint16_t, std::vector<std::function<void(std::uint16_t)>>> waiting_;
    // GIDs the master reported out of service and not back yet.
    std::set<sa::Gid> out_of_service_;
    std::uint64_t generation_ = 0; // bumps on resync; late answers of an older one are ignored
};

} // namespace localsa::coherence
