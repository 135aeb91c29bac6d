#include "engine/coherence/coherence.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace localsa::coherence {

namespace {
SubscriptionsConfig subscriptions_config(const CoherenceConfig& c) {
    return {c.subscribe, c.resubscribe_retry, c.subscription_check};
}
PreloaderConfig preloader_config(const CoherenceConfig& c) {
    PreloaderConfig p;
    p.enabled = c.preload;
    p.validity = c.preload_validity;
    p.spread = c.spread;
    p.try_timeout = c.try_timeout;
    p.max_ports = c.preload_max_ports.value_or(c.preload_max_ports_auto());
    p.fabric_ports = c.fabric_ports;
    p.warm_file = c.warm_file;
    p.warm_max = c.warm_set_max;
    p.warm_save = c.warm_save;
    p.destinations = c.preload_destinations;
    p.burst_share_percent = c.burst_share_percent;
    p.burst_coalesce = c.burst_coalesce;
    p.master_transactions = c.master_transactions;
    p.master_capacity = c.master_capacity;
    return p;
}
} // namespace

Coherence::Coherence(boost::asio::any_io_executor executor, Parts parts, CoherenceConfig config)
    : parts_(std::move(parts)), config_(config),
      subscriptions_(executor, parts_.clock, parts_.transport, parts_.upstream, parts_.counters,
                     subscriptions_config(config_),
                     [this](const std::string& why) { resync(why); }),
      preloader_(executor, parts_.clock, parts_.transport, parts_.upstream, parts_.preload,
                 parts_.path_records, parts_.counters, out_of_service_, preloader_config(config_)),
      refresher_(executor, parts_.clock, parts_.cache, parts_.path_records, parts_.upstream,
                 config_.refresh_rate, config_.idle_window),
      port_watch_(
          executor, parts_.clock, parts_.transport, parts_.port_events, config_.port_poll,
          [this](const std::string& why) { resync(why); },
          [this] {
              // A resync that found the port down finishes now, also when the port came back
              // between two polls and the poll sees no change.
              if (resync_waits_for_port_)
                  resync_background(generation_);
          }),
      epoch_source_(executor, parts_.clock, parts_.transport, parts_.upstream, *this,
                    {config_.routing_epoch, config_.epoch_reread}),
      resync_timer_(parts_.clock, executor), start_timer_(parts_.clock, executor),
      class_port_info_timer_(parts_.clock, executor), jitter_(config_.jitter_seed) {
    parts_.on_report([this](const sa::Notice& n, std::uint64_t tid) { on_report(n, tid); });
    parts_.path_records.set_stale_check(
        [this](const cache::PathQueryKey& k, const cache::PathAnswer& a) {
            return is_stale(k, a);
        });
    parts_.inform_info.set_master(&subscriptions_);
}

Coherence::~Coherence() {
    parts_.inform_info.set_master(nullptr);
}

void Coherence::start() {
    subscriptions_.set_check_period(audit_period());
    refresher_.start();
    port_watch_.start();
    preloader_.schedule();
    const auto window = start_window();
    if (window.count() == 0) {
        start_subscriptions();
        epoch_source_.start();
        return;
    }
    // ClassPortInfo too, at a point of its own: read at once by every node of a fabric powered
    // on together, it alone would pass the master's capacity (16,384 in a 10 s power-on).
    class_port_info_deferred_ = true;
    class_port_info_timer_.expires_after(jitter_.up_to(window));
    class_port_info_timer_.async_wait([this](auto ec) {
        if (ec)
            return;
        class_port_info_deferred_ = false;
        parts_.class_port_info.refresh();
    });
    const auto delay = jitter_.up_to(window);
    spdlog::info("subscriptions and the routing epoch in {} ms (a start spread over {} ms: {} "
                 "ports, --master-transactions {})",
                 delay.count(), window.count(), preloader_.fabric_ports(),
                 config_.master_transactions);
    start_timer_.expires_after(delay);
    start_timer_.async_wait([this](auto ec) {
        if (ec)
            return;
        start_subscriptions();
        epoch_source_.start();
    });
}

void Coherence::start_subscriptions() {
    if (subscriptions_started_)
        return subscriptions_.subscribe();
    subscriptions_started_ = true;
    subscriptions_.start(); // this port's traps (unless --no-subscribe) and the audit
}

std::chrono::milliseconds Coherence::audit_period() const {
    if (config_.subscription_check.count() == 0)
        return config_.subscription_check;
    // OpenSM answers an audit (a GetTable of InformInfoRecord) by walking every subscription
    // of the subnet: at 16,384 ports, a check per node a minute is 273 such walks a second,
    // for good. An SM that forgot the subscriptions without telling is rare (a new master
    // re-registers the clients), so a large fabric's nodes audit less often.
    const auto ports = static_cast<double>(preloader_.fabric_ports());
    const auto floor_ms = static_cast<long>(
        ports / (std::max(config_.master_transactions, 1U) * kAuditShare) * 1000.0);
    return std::max(config_.subscription_check, std::chrono::milliseconds{floor_ms});
}

std::chrono::milliseconds Coherence::start_window() const {
    // ClassPortInfo, the epoch's ServiceRecord and its vendor Set, six trap Sets (the
    // Preloader's start_queries), and the warm-up's Gets.
    return preloader_.start_window();
}

void Coherence::shutdown(std::function<void()> done) {
    refresher_.stop();
    port_watch_.stop();
    preloader_.shutdown();
    epoch_source_.stop();
    resync_timer_.cancel();
    start_timer_.cancel();
    class_port_info_timer_.cancel();
    subscriptions_.shutdown(std::move(done));
}

bool Coherence::is_stale(const cache::PathQueryKey& key, const cache::PathAnswer& answer) const {
    if (out_of_service_.empty() || answer.negative())
        return false;
    // Each GID the answer names looked up, not each GID out of service (a leaf switch's worth).
    return cache::any_gid_named(key, answer.records,
                                [&](const sa::Gid& g) { return out_of_service_.contains(g); });
}

std::size_t Coherence::invalidate_gid(const sa::Gid& gid) {
    const auto n = parts_.cache.erase_naming_gid(gid);
    parts_.counters.invalidated_entries += n;
    return n;
}

void Coherence::on_report(const sa::Notice& notice, std::uint64_t /*tid*/) {
    if (epoch_source_.on_report(notice))
        return;
    const auto gid = notice.subject_gid();
    auto& cache = parts_.cache;
    switch (notice.trap_number) {
    case sa::trap::kGidOutOfService: {
        out_of_service_.insert(gid);
        const auto n = invalidate_gid(gid) + parts_.preload.erase_gid(gid);
        spdlog::info("GID {} out of service: {} cached answers dropped", gid.str(), n);
        break;
    }
    case sa::trap::kGidInService: {
        out_of_service_.erase(gid);
        // "No such path" answers about it are wrong now: those that name it, and those that
        // name a port by LID or not at all (it may be back on that LID); so is any table that
        // lacks it. So is a positive answer stored while it was away (a miss or refresh in
        // flight at trap 65, or trap 65 itself missed): the port may be back with another LID,
        // MTU or rate.
        const auto n = cache.erase_tables_and_open_negatives() + cache.erase_naming_gid(gid) +
                       parts_.preload.erase_gid(gid);
        parts_.counters.invalidated_entries += n;
        // The same for answers still on their way from the master.
        parts_.path_records.on_gid_in_service(gid);
        // Nothing is asked again: a port joining anywhere must not cost the master a query
        // from every node. Paths to it miss the preload table and read through when asked.
        spdlog::info("GID {} in service: {} cached answers dropped", gid.str(), n);
        break;
    }
    case sa::trap::kMcGroupCreated:
    case sa::trap::kMcGroupDeleted: {
        const auto n = invalidate_gid(gid); // paths to the group's MGID
        spdlog::debug("multicast group {} {}: {} cached answers dropped", gid.str(),
                      notice.trap_number == sa::trap::kMcGroupCreated ? "created" : "deleted", n);
        break;
    }
    case sa::trap::kCapabilityMaskChange:
    case sa::trap::kSystemImageGuidChange: {
        // The issuing port changed: answers about paths to and from it are dropped and asked
        // again when next used (refreshing them all at once would be a burst per event).
        const auto lid = notice.issuer_lid;
        const auto n = cache.erase_naming_lid(lid);
        parts_.counters.invalidated_entries += n;
        const auto p = parts_.preload.erase_lid(lid);
        spdlog::info("trap {} from LID {}: {} cached answers and {} preloaded paths dropped",
                     notice.trap_number, lid, n, p);
        break;
    }
    default:
        break;
    }
}

void Coherence::resync(const std::string& why) {
    ++parts_.counters.resyncs;
    ++generation_;
    const auto n = parts_.cache.size();
    parts_.cache.clear();
    preloader_.reset(); // its tables too
    out_of_service_.clear();
    subscriptions_.forget();
    // The epoch too: the master may be another one, and the cache is gone anyway.
    epoch_source_.reset();
    epoch_.reset();
    trusted_ = false;
    parts_.path_records.set_epoch_trust(false, {});
    preloader_.set_trusted(false);
    resync_waits_for_port_ = false;
    parts_.path_records.new_generation();
    parts_.class_port_info.forget();
    // The cache goes at once (nothing stale is served); asking the master again waits a random
    // delay in the spread window, at least as long as a start's: every node sees an SM change
    // or re-register at the same moment, and the new master must not get all of them together.
    start_timer_.cancel();           // a start still waiting subscribes with the resync
    class_port_info_timer_.cancel(); // ... and reads ClassPortInfo with it
    class_port_info_deferred_ = false;
    const auto delay = jitter_.up_to(std::max(config_.spread, start_window()));
    spdlog::info("resync ({}): {} cached answers dropped, re-subscribing in {} ms", why, n,
                 delay.count());
    resync_timer_.expires_after(delay);
    resync_timer_.async_wait([this, generation = generation_](auto ec) {
        if (!ec)
            resync_background(generation);
    });
}

void Coherence::resync_background(std::uint64_t generation) {
    if (generation != generation_)
        return; // another resync follows
    // Down now: the next port poll that finds it active runs this (PortWatch's `unchanged`).
    resync_waits_for_port_ = !parts_.transport.port().active();
    if (resync_waits_for_port_)
        return;
    parts_.class_port_info.refresh();
    // Every wanted Set again, the clients' traps too (also with --no-subscribe); and if the
    // start's spread had not ended yet, what the start would have begun.
    subscriptions_.subscribe();
    if (!subscriptions_started_) {
        subscriptions_started_ = true;
        subscriptions_.start();
    }
    epoch_source_.start();
    if (preloader_.enabled())
        preloader_.start();
}

void Coherence::reconfigure(const CoherenceConfig& config) {
    // Subscribing and preloading on or off stay as they were at start.
    const bool subscribe = config_.subscribe, preload = config_.preload;
    config_ = config;
    config_.subscribe = subscribe;
    config_.preload = preload;
    subscriptions_.set_check_period(audit_period());
    subscriptions_.set_resubscribe_retry(config_.resubscribe_retry);
    refresher_.set_limits(config_.refresh_rate, config_.idle_window);
    port_watch_.set_period(config_.port_poll);
    preloader_.set_config(preloader_config(config_));
}

void Coherence::add_stats(nlohmann::json& j) const {
    subscriptions_.add_stats(j);
    j["gids_out_of_service"] = out_of_service_.size();
    j["preload_state"] = preloader_.state();
    j["preload_mode"] = !preloader_.enabled()      ? "off"
                        : preloader_.full_tables() ? "tables"
                                                   : "warm";
    j["fabric_ports"] = preloader_.fabric_ports();
    j["warm_set"] = preloader_.warm_set().size();
    auto& e = j["routing_epoch"];
    e["value"] = epoch_ ? epoch_->value : 0;
    e["sm_port_guid"] = epoch_ ? epoch_->sm_port_guid : 0;
    e["source"] = !config_.routing_epoch ? std::string("disabled") : epoch_source_.how();
    e["trusted"] = trusted_;
    e["changes"] = epoch_changes_;
    e["seconds_since_change"] =
        epoch_ ? std::chrono::duration<double>(parts_.clock.now() - epoch_changed_at_).count()
               : -1.0;
    if (!trusted_ && !epoch_lost_why_.empty())
        e["lost"] = epoch_lost_why_;
}

std::chrono::milliseconds Coherence::renewal_window() const {
    // What this node renews: its table (its records, one transaction; the answers taken from
    // it are refreshed from the new one), else a Get per answer in use. Every node renews as
    // much: the fabric's ports, known from the table, the warm file or the configuration.
    const auto table = parts_.preload.size();
    const double seconds_per_node =
        table > 0
            ? static_cast<double>(table) / std::max(config_.master_capacity, 1U) +
                  1.0 / std::max(config_.master_transactions, 1U)
            : static_cast<double>(parts_.cache.size()) / std::max(config_.master_transactions, 1U);
    const double nodes =
        static_cast<double>(std::max<std::size_t>({table, preloader_.fabric_ports(), 1}));
    const auto ms = static_cast<long>(seconds_per_node * nodes * 1000.0);
    return std::clamp(std::chrono::milliseconds{ms}, std::chrono::milliseconds{1000},
                      std::chrono::milliseconds{std::chrono::hours{1}});
}

void Coherence::on_routing_epoch(const RoutingEpoch& epoch) {
    if (trusted_ && epoch_ && *epoch_ == epoch)
        return; // the common case: nothing changed, nothing to do
    const bool changed = epoch_ && !(*epoch_ == epoch);
    if (!epoch_ || changed)
        epoch_changed_at_ = parts_.clock.now();
    epoch_ = epoch;
    if (changed) {
        ++epoch_changes_;
        spdlog::info("routing epoch {} (SM port {:#x}): renewing what is in use within {} ms",
                     epoch.value, epoch.sm_port_guid, renewal_window().count());
    } else {
        spdlog::info("routing epoch {} (SM port {:#x}): answers kept until it changes", epoch.value,
                     epoch.sm_port_guid);
    }
    trust(changed);
}

void Coherence::on_routing_epoch_lost(std::string_view why) {
    epoch_lost_why_ = std::string(why);
    if (!trusted_)
        return;
    trusted_ = false;
    spdlog::info("routing epoch lost ({}): back on the TTL rules", why);
    const auto now = parts_.clock.now();
    parts_.path_records.set_epoch_trust(false, {});
    preloader_.set_trusted(false);
    // Kept on the epoch, now due within one TTL, spread over it.
    const auto ttl = parts_.path_records.config().positive_ttl;
    std::vector<std::pair<cache::PathQueryKey, cache::PathAnswer>> all;
    parts_.cache.for_each([&](const auto& k, const auto& a) {
        if (!a.negative())
            all.emplace_back(k, a);
    });
    for (auto& [k, a] : all) {
        a.refresh_at = now + jitter_.up_to(ttl);
        a.expires = a.refresh_at + parts_.path_records.config().max_staleness;
        a.used_at.reset();
        a.keep_use = true;
        parts_.cache.store(k, a);
    }
}

void Coherence::trust(bool changed) {
    const auto now = parts_.clock.now();
    trusted_ = true;
    epoch_lost_why_.clear();
    // After a change only tables fetched since refresh answers; before, any table is current.
    parts_.path_records.set_epoch_trust(true, changed ? now : Clock::time_point{});
    preloader_.set_trusted(true);
    const auto window = renewal_window();
    const auto max_staleness = parts_.path_records.config().max_staleness;
    std::vector<std::pair<cache::PathQueryKey, cache::PathAnswer>> all;
    parts_.cache.for_each([&](const auto& k, const auto& a) {
        if (!a.negative())
            all.emplace_back(k, a);
    });
    for (auto& [k, a] : all) {
        // Unchanged: valid until the epoch moves. Changed: each answer in use is asked again
        // at a random moment of the window (the idle ones leave at it), not all at once.
        a.refresh_at =
            changed ? now + jitter_.up_to(window) : now + sa::PathRecordService::kTrustedHorizon;
        a.expires = a.refresh_at + max_staleness;
        a.used_at.reset();
        a.keep_use = true;
        parts_.cache.store(k, a);
    }
    if (changed)
        preloader_.renew_within(window);
}

} // namespace localsa::coherence
