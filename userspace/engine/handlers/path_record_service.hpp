// SubnAdmGet/GetTable(PathRecord): answered from the cache where the cache knows the master's
// answer to this requester; otherwise one upstream query (identical misses in flight share it),
// whose answer is relayed and cached.
#pragma once

#include "engine/cache/path_cache.hpp"
#include "engine/cache/preload_table.hpp"
#include "engine/cache/warm_set.hpp"
#include "engine/clock.hpp"
#include "engine/counters.hpp"
#include "engine/proxy/proxy.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/class_port_info.hpp"
#include "ib/constants.hpp"
#include "transport/transport.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace localsa::sa {

struct PathRecordConfig {
    // How long an answer is served before the master is asked again (routing changes raise no
    // trap); spread by +-10% so that answers stored together are not refreshed together.
    std::chrono::milliseconds positive_ttl{std::chrono::minutes{5}};
    // How much longer an answer is served while the master cannot be asked.
    std::chrono::milliseconds max_staleness{std::chrono::minutes{5}};
    // How long "no such path" is remembered.
    std::chrono::milliseconds negative_ttl{std::chrono::seconds{1}};
    // A failed refresh is tried again this long after (the master may be back by then).
    std::chrono::milliseconds refresh_retry{std::chrono::seconds{5}};
    // How long a due refresh may take (the scheduler's slice plus the upstream budget); an
    // answer served later than that past its refresh time counts as `stale_served`.
    std::chrono::milliseconds refresh_grace{std::chrono::seconds{1}};
    // How long a requester waits for localsad before it asks the master itself (the kernel's
    // sa_redirect_timeout_ms; since patch 8 of the series, the caller's timeout): a miss not
    // sent by then is dropped, and not tried again after.
    std::chrono::milliseconds requester_deadline{200};
};

// A burst of cold misses (above the preload threshold, where no table is kept): a port that
// asks a large share of the fabric at once, as every rank of an all-to-all job start does,
// costs the master one GetTable of the partition instead of a Get per destination (issue 25).
struct MissBurstConfig {
    // Distinct misses to one partition within `window` that make the table worth asking: a
    // share of the fabric's ports (Preloader::burst_threshold()); 0: never.
    std::size_t threshold = 0;
    // How long a cold miss waits for others before it goes alone.
    std::chrono::milliseconds coalesce{5};
    std::chrono::milliseconds window{1000};
};

// What the preloader does for a burst (Coherence owns the timers and the tables).
struct MissBurstHooks {
    // Calls PathRecordService::burst_closed(pkey) after `delay`.
    std::function<void(std::chrono::milliseconds delay, std::optional<std::uint16_t> pkey)>
        call_after;
    // Asks the table of `pkey` from this port, for a burst of `misses` distinct destinations;
    // PathRecordService::burst_table_arrived follows.
    std::function<void(std::optional<std::uint16_t> pkey, std::size_t misses)> ask_table;
    // Whether the table for a burst of `misses` comes after their requesters give up (the
    // fabric's burst is more than the master answers in that time; a larger burst's comes later
    // still): the burst's misses are then answered BUSY until it comes.
    std::function<bool(std::size_t misses)> table_late;
};

class PathRecordService {
public:
    static constexpr std::size_t kMaxWaitersPerQuestion = 256;

    PathRecordService(Clock& clock, cache::PathCache& cache, cache::PreloadTable& preload,
                      upstream::UpstreamClient& upstream, proxy::Proxy& proxy,
                      transport::MadTransport& transport, Counters& counters,
                      PathRecordConfig config)
        : clock_(clock), cache_(cache), preload_(preload), upstream_(upstream), proxy_(proxy),
          transport_(transport), counters_(counters), config_(config) {}

    // Applies to answers stored from now on; cached answers keep their expiry.
    void set_config(const PathRecordConfig& config) { config_ = config; }
    const PathRecordConfig& config() const { return config_; }

    void handle(const transport::InboundMad& request);
    // Asks the master again for a cached question; the answer replaces the cached one. A Get
    // the preload table answers, from a table younger than 0.9 TTL (a used table is renewed at
    // 0.8 TTL, see Coherence), is refreshed from it: no query (refreshes_from_preload).
    void refresh(const cache::PathQueryKey& key);
    // Asks the master in the background for a question not cached (a warm set or an admin's
    // destination at start): the answer is stored unused, and dropped at its refresh time
    // unless a requester used it (warm_queries).
    void warm(const cache::PathQueryKey& key);
    // Where the Gets in use are noted (a miss, a preload hit, a refresh of an answer used;
    // not each cache hit, which the refresh of its answer stands for); nullptr: nowhere.
    void set_warm_set(cache::WarmSet* set) { warm_set_ = set; }
    // A veto on serving a cached answer (coherence knows of GIDs reported out of service).
    using StaleCheck = std::function<bool(const cache::PathQueryKey&, const cache::PathAnswer&)>;
    void set_stale_check(StaleCheck check) { stale_check_ = std::move(check); }

    // What the master's ClassPortInfo says about its answers (nullopt: not known, or forgotten
    // at a resync). Without QoS support advertised (CapabilityMask2.IsQoSSupported), a master's
    // PathRecord answer cannot depend on the ServiceID or QoSClass asked: OpenSM reads them only
    // to pick a level of its QoS policy (osm_sa_path_record.c, pr_rcv_get_path_parms), which it
    // applies only with QoS on, and then advertises IsQoSSupported (osm_sa_class_port_info.c).
    // Such questions then share one cached answer whatever ServiceID (rdma_cm: one per
    // listening port) and QoSClass they carry.
    void set_master_capabilities(const std::optional<ClassPortInfo>& master);
    // The component mask bits left out of the cache key (see set_master_capabilities).
    std::uint64_t key_ignores() const { return key_ignores_; }
    // Questions remembered as asked while the master's capabilities were unknown (tests).
    std::size_t asked_while_unknown() const { return asked_unknown_.size(); }
    // The cache key of a request: its method, its mask less key_ignores() and the fields left.
    cache::PathQueryKey key_of(mad::Bytes request) const;

    // A trusted routing epoch (Coherence): positive answers stored from now on stay valid
    // until the epoch changes instead of for a TTL, and an answer is refreshed from the preload
    // table only when the table came at or after `since` (the last change of the epoch).
    void set_epoch_trust(bool trusted, Clock::time_point since) {
        epoch_trusted_ = trusted;
        epoch_since_ = since;
    }
    bool epoch_trusted() const { return epoch_trusted_; }
    // The last renewal of the preload table failed (the master unreachable, BUSY): without the
    // epoch, the table answers past its freshness up to its expiry, counted as stale_served.
    void set_table_renewal_failed(bool failed) { table_renewal_failed_ = failed; }
    // How long after it came a preload table refreshes answers without the epoch: 0.9 TTL,
    // or longer once its renewals found nothing changed (the Preloader's back-off).
    void set_table_fresh_for(Clock::duration d) { table_fresh_for_ = d; }
    Clock::duration table_fresh_for() const {
        return table_fresh_for_ ? *table_fresh_for_
                                : Clock::duration{config_.positive_ttl * 9 / 10};
    }
    // How long "until the epoch changes" is written in an answer's refresh time.
    // Within the cache refresh queue's 32-bit millisecond range (24 days), with room: a week,
    // after which a used answer is asked again even on an unchanged epoch.
    static constexpr Clock::duration kTrustedHorizon = std::chrono::hours{24 * 7};

    // Cold misses in a burst (MissBurstConfig): held for the coalescing window, then asked
    // one by one, or answered from the partition's table once it arrives.
    void set_miss_burst(const MissBurstConfig& config);
    void set_miss_burst_hooks(MissBurstHooks hooks) { burst_hooks_ = std::move(hooks); }
    const MissBurstConfig& miss_burst() const { return burst_config_; }
    // The coalescing window of `pkey`'s held misses ended: one table, or a Get each.
    void burst_closed(std::optional<std::uint16_t> pkey);
    // The table asked for a burst arrived (`ok`) or not: the held misses are served again,
    // from the table where it answers them, else each by its own Get.
    void burst_table_arrived(std::optional<std::uint16_t> pkey, bool ok);
    // Misses held for a burst now, for stats and tests.
    std::size_t burst_held() const;

    // Misses waiting for the master, for stats and tests (those asked before a resync too).
    std::size_t pending() const;
    // A resync: answers to questions asked before it are relayed to their requesters but never
    // stored (they may come from the former master, or about the former port state), and no
    // miss after it joins them: it is a question of its own, to the master of now.
    void new_generation();
    // Trap 64 for `gid`: the answers to questions in flight now were computed while the port
    // may have been away. Each is relayed, but stored only if trap 64 would have kept it had it
    // been stored already (Coherence::on_report): not a GetTable, not a "no such path" by LID,
    // nothing that names `gid`.
    void on_gid_in_service(const sa::Gid& gid);

private:
    struct Waiter {
        transport::MadAddress from;
        std::vector<std::uint8_t> request;
    };

    // After the checks: from the cache, the preload table, a held burst or the master.
    // `asked`: when the request came (a miss released from a burst is not held again, and
    // is not sent once its requester stopped waiting).
    void serve(const transport::InboundMad& request, const cache::PathQueryKey& key,
               std::size_t hash, std::optional<Clock::time_point> asked = std::nullopt);
    // Holds a cold Get for a burst; false when it goes to the master now.
    bool hold_for_burst(const transport::InboundMad& request, const cache::PathQueryKey& key,
                        Clock::time_point now);
    // Serves the misses held for `pkey`'s burst again, none held any more.
    void release_burst(std::optional<std::uint16_t> pkey);
    // Why a request may not be answered from the cache (nullptr: it may).
    const char* uncacheable_reason(const transport::InboundMad& request) const;
    // Relays the request to the master uncached, the answer back unchanged.
    void forward(const transport::InboundMad& request, const char* why);
    // Keeps a cached answer whose refresh failed and asks again later, until it expires.
    void retry_refresh_later(const cache::PathQueryKey& key);
    // The answer to `request` (status and records of the master's answer), sent to `to`.
    void answer(const transport::MadAddress& to, mad::Bytes request, std::uint16_t answer_status,
                mad::Bytes records);
    bool is_stale(const cache::PathQueryKey& key, const cache::CachedAnswer& hit);
    void on_upstream(const cache::PathQueryKey& key, std::uint64_t generation,
                     upstream::Reply reply);
    Clock::duration jittered_ttl();
    // One try's wait for a GetTable answer: its whole RMPP transfer must fit.
    std::chrono::milliseconds table_try_timeout(const cache::PathQueryKey& key);
    // Stores the answer to a Get from a young preload table (refreshes_from_preload); false
    // when the table cannot answer it.
    bool refresh_from_table(const cache::PathQueryKey& key);
    // Sends the question as a background query; its answer goes to on_upstream.
    void ask_background(const cache::PathQueryKey& key);
    void respond(const transport::MadAddress& to, mad::Bytes bytes);

    Clock& clock_;
    cache::PathCache& cache_;
    cache::PreloadTable& preload_;
    upstream::UpstreamClient& upstream_;
    proxy::Proxy& proxy_;
    transport::MadTransport& transport_;
    Counters& counters_;
    PathRecordConfig config_;
    using PendingMap =
        std::unordered_map<cache::PathQueryKey, std::vector<Waiter>, cache::PathQueryKeyHash>;
    PendingMap pending_; // asked in this generation
    // Asked before a resync, by generation: their answers go to their waiters only.
    std::map<std::uint64_t, PendingMap> retired_;
    // The GIDs that came into service while a question of this generation was in flight
    // (on_gid_in_service); `many`: more than are kept, and its answer is not stored.
    struct CameBack {
        static constexpr std::size_t kMaxGids = 16;
        std::vector<sa::Gid> gids;
        bool many = false;
    };
    std::unordered_map<cache::PathQueryKey, CameBack, cache::PathQueryKeyHash> came_back_;
    // Cold misses per partition (MissBurstConfig).
    struct Burst {
        // A held Get without the MAD's reserved tail (a job start holds up to 4 x threshold +
        // 256 of them per partition: 120 bytes in place instead of 256 on the heap each).
        struct Held {
            std::array<std::uint8_t, mad::kSaHeaderSize + sa::PathRecord::kSize> head;
            transport::MadAddress from;
            Clock::time_point asked;
            // The Get as it came: the tail after the record is reserved (zero).
            transport::InboundMad request() const;
        };
        std::deque<Held> held;                // waiting for the window's end or the table
        std::deque<Clock::time_point> recent; // distinct misses within the window
        bool table_asked = false;
        bool busy = false;               // the table comes after its requesters give up
        Clock::time_point quiet_until{}; // after a table: no other before
    };
    void note_burst_miss(Burst& burst, Clock::time_point now);
    void refuse_busy(const transport::MadAddress& to, mad::Bytes request);
    // The burst's table comes after its requesters give up: the held misses, and the later
    // ones until it comes, are answered BUSY.
    void answer_busy(Burst& burst, std::optional<std::uint16_t> pkey);
    MissBurstConfig burst_config_;
    MissBurstHooks burst_hooks_;
    std::map<std::optional<std::uint16_t>, Burst> bursts_;
    // Questions asked by warm() and not answered yet.
    std::unordered_set<cache::PathQueryKey, cache::PathQueryKeyHash> warming_;
    // Questions asked in this generation while the master's capabilities were unknown (after a
    // resync, or a large fabric's start), without ServiceID and QoSClass: stored under the
    // whole mask, warm() would not find them and ask them again.
    std::unordered_set<cache::PathQueryKey, cache::PathQueryKeyHash> asked_unknown_;
    static constexpr std::size_t kMaxAskedUnknown = 65536;
    StaleCheck stale_check_;
    cache::WarmSet* warm_set_ = nullptr;
    cache::PathAnswer stale_scratch_;
    std::vector<std::uint8_t> out_; // the answer being sent (its capacity is kept)
    bool out_busy_ = false;
    std::uint64_t jitter_state_ = 0x9e3779b97f4a7c15ULL;
    std::uint64_t generation_ = 0;
    std::uint64_t key_ignores_ = 0;
    bool master_known_ = false; // its ClassPortInfo learned (set_master_capabilities)
    bool epoch_trusted_ = false;
    bool table_renewal_failed_ = false;
    Clock::time_point epoch_since_{};
    std::optional<Clock::duration> table_fresh_for_;
};

// OpenSM's own checks of a PathRecord Get/GetTable, done locally (osm_sa_path_record.c); a non-zero
// status is the error the master would answer.
std::uint16_t validate_path_request(mad::Bytes request);

} // namespace localsa::sa
