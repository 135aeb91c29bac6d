#include "engine/coherence/coherence.hpp"

#include "ib/constants.hpp"
#include "ib/inform_info.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <set>

namespace localsa::coherence {

using namespace std::chrono_literals;

Coherence::Coherence(boost::asio::any_io_executor executor, Parts parts, CoherenceConfig config)
    : executor_(executor), parts_(std::move(parts)), config_(config),
      refresh_timer_(parts_.clock, executor), port_timer_(parts_.clock, executor),
      resubscribe_timer_(parts_.clock, executor), preload_timer_(parts_.clock, executor),
      check_timer_(parts_.clock, executor), resync_timer_(parts_.clock, executor),
      renew_timer_(parts_.clock, executor),
      random_state_(std::random_device{}() | std::uint64_t{1} << 40),
      last_port_(parts_.transport.port()) {
    parts_.on_report([this](const sa::Notice& n, std::uint64_t tid) { on_report(n, tid); });
    parts_.path_records.set_stale_check(
        [this](const cache::PathQueryKey& k, const cache::PathAnswer& a) {
            return is_stale(k, a);
        });
    if (config_.subscribe)
        wanted_.insert(std::begin(kSubscribedTraps), std::end(kSubscribedTraps));
    parts_.inform_info.set_master(this);
}

Coherence::~Coherence() {
    parts_.inform_info.set_master(nullptr);
}

bool Coherence::own_trap(std::uint16_t trap) const {
    return config_.subscribe && std::find(std::begin(kSubscribedTraps), std::end(kSubscribedTraps),
                                          trap) != std::end(kSubscribedTraps);
}

void Coherence::start() {
    last_port_ = parts_.transport.port();
    if (config_.subscribe) {
        subscribe_all(true);
        schedule_subscription_check();
    }
    schedule_refresh();
    schedule_port_poll();
    schedule_preload();
}

std::chrono::milliseconds Coherence::random_delay(std::chrono::milliseconds window) {
    random_state_ ^= random_state_ << 13;
    random_state_ ^= random_state_ >> 7;
    random_state_ ^= random_state_ << 17;
    return std::chrono::milliseconds{
        window.count() > 0 ? static_cast<long>(random_state_ % (window.count() + 1)) : 0};
}

void Coherence::schedule_preload() {
    if (!config_.preload) {
        preload_state_ = "disabled";
        return;
    }
    preload_state_ = "waiting";
    preload_timer_.expires_after(random_delay(config_.spread));
    preload_timer_.async_wait([this](auto ec) {
        if (!ec)
            start_preload();
    });
}

void Coherence::start_preload() {
    if (preload_running_ || !parts_.transport.port().active())
        return;
    // One table per partition, asked with the PKey the kernel's consumers ask with: rdma_cm
    // and ipoib always set the full-member bit, also where the port's table holds the limited
    // one (keyed by 0x7fff, the table would never match their 0xffff). One transaction per node
    // and partition is all a cold start costs the master. A Get without a PKey reads through
    // (the master picks the PKey; the table cannot know which).
    std::set<std::uint16_t> distinct;
    for (auto p : parts_.transport.port().pkeys)
        if ((p & sa::kPKeyPartition) != 0)
            distinct.insert(static_cast<std::uint16_t>(p | sa::kPKeyFullMember));
    std::vector<std::optional<std::uint16_t>> pkeys(distinct.begin(), distinct.end());
    if (pkeys.empty())
        pkeys.emplace_back(std::nullopt);
    preload_running_ = true;
    preload_state_ = "loading";
    preload_step(std::move(pkeys), 0, generation_);
}

void Coherence::preload_step(std::vector<std::optional<std::uint16_t>> pkeys, std::size_t index,
                             std::uint64_t generation) {
    if (generation != generation_) {
        preload_running_ = false; // a resync started a fresh preload
        return;
    }
    if (index == pkeys.size()) {
        preload_running_ = false;
        if (preload_state_ == "loading")
            preload_state_ = "done";
        spdlog::info("preload {}: {} paths from this port", preload_state_, parts_.preload.size());
        preloaded_at_ = parts_.clock.now();
        schedule_renewal();
        return;
    }
    const auto port = parts_.transport.port();
    mad::SaMad q;
    q.header.method = mad::method::kGetTable;
    q.header.attr_id = mad::attr::kPathRecord;
    sa::PathRecord pr;
    pr.sgid = port.gid;
    q.comp_mask = sa::pr_mask::kSgid;
    const auto pkey = pkeys[index];
    if (pkey) {
        pr.pkey = *pkey;
        q.comp_mask |= sa::pr_mask::kPKey;
    }
    pr.pack(q.data);
    ++parts_.counters.preload_transactions;
    upstream::SubmitOptions options;
    options.priority = upstream::Priority::Background;
    // The whole RMPP transfer must fit one try: about 3 records a segment, and a window of
    // segments per try timeout. Sized by this PKey's last table, else by a fabric of 4,096.
    const auto known = parts_.preload.size_of(pkey);
    const auto segments = (known ? known : 4096) / 3 + 1;
    options.try_timeout = config_.try_timeout * static_cast<long>(1 + segments / 32);
    parts_.upstream.submit(
        q.pack(),
        [this, pkeys = std::move(pkeys), index, generation, pkey](upstream::Reply r) mutable {
            if (generation != generation_) {
                preload_running_ = false;
                return;
            }
            if (r.outcome == upstream::Outcome::Response) {
                const auto status = mad::load_be16(r.response, mad::offset::kStatus);
                auto recs = sa::response_records(r.response, sa::PathRecord::kSize);
                if ((status == 0 || status == mad::status::kSaNoRecords) && recs.complete) {
                    const auto now = parts_.clock.now();
                    parts_.preload.replace(pkey, recs.bytes, now + config_.preload_validity, now);
                    // A table the master built before a GID went out of service (its Report came
                    // first) must not bring the GID back.
                    for (const auto& gone : out_of_service_)
                        parts_.preload.erase_gid(gone);
                } else {
                    preload_state_ = "partial";
                    spdlog::warn("preload: GetTable for PKey {} answered {}{}",
                                 pkey ? std::to_string(*pkey) : std::string("(none)"),
                                 mad::status_name(status), recs.complete ? "" : " (truncated)");
                }
            } else {
                preload_state_ = "partial";
                spdlog::warn("preload: GetTable unanswered; the cache reads through meanwhile");
            }
            // One transaction at a time, a short pause between: preload never bursts at the master.
            preload_timer_.expires_after(std::chrono::milliseconds{10});
            preload_timer_.async_wait([this, pkeys = std::move(pkeys), index, generation](auto ec) {
                if (!ec)
                    preload_step(std::move(pkeys), index + 1, generation);
                else
                    preload_running_ = false;
            });
        },
        options);
}

void Coherence::schedule_renewal() {
    // Looked at every 0.1 TTL: a table used late in its life (a job start on an old table) is
    // renewed within 0.1 TTL, before the answers taken from it fall due (PathRecordService
    // gives those 0.2 TTL at least).
    const auto ttl = parts_.path_records.config().positive_ttl;
    renew_timer_.expires_after(std::max<std::chrono::milliseconds>(ttl / 10, 1ms));
    renew_timer_.async_wait([this, ttl, generation = generation_](auto ec) {
        if (ec || generation != generation_)
            return;
        // Demand-driven, as the cached answers: a table nobody used since it came costs the
        // master nothing more; one in use is renewed at 0.8 TTL, before the answers it gave
        // fall due (0.9-1.1 TTL).
        const auto now = parts_.clock.now();
        if (parts_.preload.used() && now >= preloaded_at_ + ttl * 4 / 5)
            start_preload();
        else if (parts_.preload.live(now))
            schedule_renewal();
    });
}

void Coherence::subscribe_all(bool subscribe) {
    // Over a copy: a Set that fails at once (no SM, upstream queue full) answers the clients
    // waiting for its trap, and they may release it (erasing it from wanted_ under the loop).
    auto traps = wanted_;
    // A trap the last client released while its Set was in flight has Sets waiting for the
    // master's answer; a resync dropped that Set, so it is sent again for them (and released
    // again once answered, see on_subscribed).
    if (subscribe)
        for (const auto& [trap, waiting] : waiting_)
            traps.insert(trap);
    for (auto trap : traps) {
        if (!wanted_.contains(trap) && !(subscribe && waiting_.contains(trap)))
            continue; // released meanwhile
        if (subscribe && (subscribed_.contains(trap) || in_flight_.contains(trap)))
            continue;
        send_subscription(trap, subscribe);
    }
}

void Coherence::send_subscription(std::uint16_t trap, bool subscribe) {
    mad::SaMad set;
    set.header.method = mad::method::kSet;
    set.header.attr_id = mad::attr::kInformInfo;
    sa::InformInfo info;
    info.lid_range_begin = 0xffff; // every LID
    info.is_generic = 1;
    info.subscribe = subscribe ? 1 : 0;
    info.type = 0xffff; // every type
    info.trap_number = trap;
    info.qpn = 1;
    info.resp_time_value = 18;
    info.producer_type = 0xffffff; // every producer
    info.pack(set.data);
    if (subscribe)
        in_flight_.insert(trap);
    const auto generation = generation_;
    upstream::SubmitOptions options;
    // From the node's budget, unless a client's Set waits for it.
    if (!waiting_.contains(trap))
        options.priority = upstream::Priority::Background;
    parts_.upstream.submit(
        set.pack(),
        [this, trap, subscribe, generation](upstream::Reply r) {
            if (generation != generation_ || !subscribe)
                return;
            in_flight_.erase(trap);
            on_subscribed(trap, r);
        },
        options);
}

void Coherence::on_subscribed(std::uint16_t trap, const upstream::Reply& r) {
    const bool answered = r.outcome == upstream::Outcome::Response;
    // Not answered: the client may try again (BUSY); our own traps are retried below.
    const auto status =
        answered ? mad::load_be16(r.response, mad::offset::kStatus) : mad::status::kBusy;
    auto waiting = waiting_.extract(trap);
    if (!wanted_.contains(trap)) {
        // The last client left while the Set was on its way: answer it all the same.
        if (status == 0)
            send_subscription(trap, false);
        if (waiting)
            for (auto& done : waiting.mapped())
                done(status);
        return;
    }
    if (status == 0) {
        subscribed_.insert(trap);
        if (!own_trap(trap))
            spdlog::info("holding trap {} at the master for this port's clients", trap);
        else if (std::all_of(std::begin(kSubscribedTraps), std::end(kSubscribedTraps),
                             [&](auto t) { return subscribed_.contains(t); }))
            spdlog::info("subscribed to traps 64-67, 144, 145 at the master");
    } else if (answered) {
        spdlog::warn("master refused the subscription to trap {}: {}", trap,
                     mad::status_name(status));
    }
    if (waiting)
        for (auto& done : waiting.mapped())
            done(status); // may release(trap)
    if (wanted_.contains(trap) && !subscribed_.contains(trap)) {
        resubscribe_timer_.expires_after(config_.resubscribe_retry);
        resubscribe_timer_.async_wait([this](auto ec) {
            if (!ec)
                subscribe_all(true);
        });
    }
}

void Coherence::hold(std::uint16_t trap, std::function<void(std::uint16_t)> done) {
    if (subscribed_.contains(trap))
        return done(0);
    waiting_[trap].push_back(std::move(done));
    wanted_.insert(trap);
    if (!in_flight_.contains(trap))
        send_subscription(trap, true);
}

void Coherence::release(std::uint16_t trap) {
    if (own_trap(trap) || !wanted_.erase(trap))
        return;
    if (subscribed_.erase(trap)) {
        spdlog::info("trap {} no longer held at the master: no client subscribed to it", trap);
        send_subscription(trap, false);
    }
}

void Coherence::schedule_subscription_check() {
    if (config_.subscription_check.count() == 0)
        return;
    // 0.9-1.1 of the period, drawn each time: nodes that started together (a reboot of the
    // fabric, a package upgrade) would otherwise ask the master together, every period.
    const auto period = config_.subscription_check;
    check_timer_.expires_after(period - period / 10 + random_delay(period / 5));
    check_timer_.async_wait([this](auto ec) {
        if (!ec)
            check_subscriptions();
    });
}

void Coherence::check_subscriptions() {
    const auto& port = parts_.transport.port();
    // Only a confirmed full set is audited; until then the resubscribe timer is at work.
    if (!port.active() || subscribed_ != wanted_) {
        schedule_subscription_check();
        return;
    }
    // A Get, not a GetTable: it fits one MAD everywhere (no RMPP), and its status tells enough.
    // OpenSM numbers every subscription Enum 0, so only the SubscriberGID selects.
    mad::SaMad q;
    q.header.method = mad::method::kGet;
    q.header.attr_id = mad::attr::kInformInfoRecord;
    q.comp_mask = 1; // InformInfoRecord:SubscriberGID
    std::copy(port.gid.raw.begin(), port.gid.raw.end(), q.data.begin());
    ++parts_.counters.subscription_checks;
    const auto generation = generation_;
    upstream::SubmitOptions options;
    options.priority = upstream::Priority::Background;
    parts_.upstream.submit(
        q.pack(),
        [this, generation](upstream::Reply r) {
            // After a resync in between, the answer is about subscriptions renewed since.
            if (generation == generation_ && r.outcome == upstream::Outcome::Response) {
                // NO_RECORDS: none left; OK: exactly one of our six; TOO_MANY_RECORDS: two or more.
                const auto status = mad::load_be16(r.response, mad::offset::kStatus);
                if (status == mad::status::kSaNoRecords || status == 0) {
                    ++parts_.counters.subscriptions_lost;
                    spdlog::warn(
                        "the master holds {} of this port's {} subscriptions (SM restarted "
                        "or replaced on LID {}?)",
                        status == 0 ? "one" : "none", subscribed_.size(),
                        parts_.transport.port().sm_lid);
                    resync("subscriptions lost at the master");
                } else if (status != mad::status::kSaTooManyRecords) {
                    spdlog::debug("subscription check answered {}", mad::status_name(status));
                }
            }
            schedule_subscription_check();
        },
        options);
}

void Coherence::shutdown(std::function<void()> done) {
    refresh_timer_.cancel();
    port_timer_.cancel();
    resubscribe_timer_.cancel();
    preload_timer_.cancel();
    check_timer_.cancel();
    resync_timer_.cancel();
    renew_timer_.cancel();
    if (subscribed_.empty()) {
        done();
        return;
    }
    // Best effort: the master forgets subscribers whose Reports fail anyway.
    subscribe_all(false);
    subscribed_.clear();
    auto timer = std::make_shared<Timer>(parts_.clock, executor_);
    timer->expires_after(300ms);
    timer->async_wait([timer, done = std::move(done)](auto) { done(); });
}

bool Coherence::is_stale(const cache::PathQueryKey& key, const cache::PathAnswer& answer) const {
    if (out_of_service_.empty() || answer.negative())
        return false;
    return std::any_of(out_of_service_.begin(), out_of_service_.end(),
                       [&](const sa::Gid& g) { return cache::answer_involves(key, answer, g); });
}

std::size_t Coherence::invalidate_gid(const sa::Gid& gid) {
    const auto n = parts_.cache.erase_if(
        [&](const auto& k, const auto& a) { return cache::answer_involves(k, a, gid); });
    parts_.counters.invalidated_entries += n;
    return n;
}

void Coherence::on_report(const sa::Notice& notice, std::uint64_t /*tid*/) {
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
        // "No such path" answers about it are wrong now, and so is any table that lacks it.
        const auto n = cache.erase_if([&](const auto& k, const auto& a) {
            return k.method == mad::method::kGetTable ||
                   (a.negative() && cache::answer_involves(k, a, gid));
        });
        parts_.counters.invalidated_entries += n;
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
        const auto n = cache.erase_if([&](const auto&, const auto& a) {
            for (std::size_t off = 0; off + sa::PathRecord::kSize <= a.records.size();
                 off += sa::PathRecord::kSize)
                if (mad::load_be16(a.records, off + sa::pr_offset::kDlid) == lid ||
                    mad::load_be16(a.records, off + sa::pr_offset::kSlid) == lid)
                    return true;
            return false;
        });
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
    parts_.preload.clear();
    preload_running_ = false;
    preload_timer_.cancel();
    renew_timer_.cancel();
    out_of_service_.clear();
    subscribed_.clear();
    in_flight_.clear(); // answers to the older generation's Sets are ignored
    resync_waits_for_port_ = false;
    parts_.path_records.new_generation();
    parts_.class_port_info.forget();
    // The cache goes at once (nothing stale is served); asking the master again waits a random
    // delay in the spread window: every node sees an SM change or re-register at the same
    // moment, and the new master must not get all of them together.
    const auto delay = random_delay(config_.spread);
    spdlog::info("resync ({}): {} cached answers dropped, re-subscribing in {} ms", why, n,
                 delay.count());
    preload_state_ = config_.preload ? "waiting" : "disabled";
    resync_timer_.expires_after(delay);
    resync_timer_.async_wait([this, generation = generation_](auto ec) {
        if (!ec)
            resync_background(generation);
    });
}

void Coherence::resync_background(std::uint64_t generation) {
    if (generation != generation_)
        return; // another resync follows
    // Down now: the next port poll that finds it active runs this, also when the port came
    // back between two polls and the poll sees no change (no resync of its own then).
    resync_waits_for_port_ = !parts_.transport.port().active();
    if (resync_waits_for_port_)
        return;
    parts_.class_port_info.refresh();
    subscribe_all(true);
    if (config_.preload)
        start_preload();
}

void Coherence::schedule_refresh() {
    // Ten slices a second keep the refresh load smooth.
    refresh_timer_.expires_after(100ms);
    refresh_timer_.async_wait([this](auto ec) {
        if (ec)
            return;
        // A tenth of the rate per slice (below 10 a second the fraction carries over), and only
        // what the node's budget lets go now: the rest waits in the queue, in refresh-time order.
        const double per_slice = config_.refresh_rate / 10.0;
        refresh_credit_ = std::min(refresh_credit_ + per_slice, std::max(per_slice, 1.0));
        const auto budget = std::min<std::size_t>(static_cast<std::size_t>(refresh_credit_),
                                                  parts_.upstream.background_room());
        refresh_credit_ -= static_cast<double>(budget);
        for (const auto& key :
             parts_.cache.due_for_refresh(parts_.clock.now(), budget, config_.idle_window))
            parts_.path_records.refresh(key);
        schedule_refresh();
    });
}

void Coherence::schedule_port_poll() {
    port_timer_.expires_after(config_.port_poll);
    port_timer_.async_wait([this](auto ec) {
        if (ec)
            return;
        poll_port();
        schedule_port_poll();
    });
}

void Coherence::poll_port() {
    transport::PortState now;
    try {
        now = parts_.transport.refresh_port();
    } catch (const std::exception& e) {
        spdlog::warn("cannot read the port: {}", e.what());
        return;
    }
    const auto before = last_port_;
    last_port_ = now;
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
        resync(why);
    else if (resync_waits_for_port_)
        resync_background(generation_);
}

void Coherence::reconfigure(const CoherenceConfig& config) {
    const bool check_changed = config.subscription_check != config_.subscription_check;
    config_.subscription_check = config.subscription_check;
    if (check_changed && config_.subscribe) {
        check_timer_.cancel();
        schedule_subscription_check();
    }
    config_.refresh_rate = config.refresh_rate;
    config_.port_poll = config.port_poll;
    config_.resubscribe_retry = config.resubscribe_retry;
    config_.preload_validity = config.preload_validity;
    config_.idle_window = config.idle_window;
    config_.spread = config.spread;
    config_.try_timeout = config.try_timeout;
}

void Coherence::add_stats(nlohmann::json& j) const {
    j["subscriptions"] = subscribed_.size();
    j["master_extra_subscriptions"] =
        std::count_if(subscribed_.begin(), subscribed_.end(), [&](auto t) { return !own_trap(t); });
    j["gids_out_of_service"] = out_of_service_.size();
    j["preload_state"] = preload_state_;
}

} // namespace localsa::coherence
