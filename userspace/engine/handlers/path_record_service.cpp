#include "engine/handlers/path_record_service.hpp"

#include "engine/proxy/proxy.hpp"
#include "engine/send.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>

namespace localsa::sa {

using namespace mad;

std::uint16_t validate_path_request(Bytes request) {
    const auto mask = load_be64(request, mad::offset::kCompMask);
    const auto pr = request.subspan(kSaHeaderSize);
    // In OpenSM's order (osm_pr_rcv_process): the rate, the MTU, then the ServiceID; the first
    // that fails decides the status. Valid rates are 2.5 Gb/s (2) to 600 Gb/s (22).
    if ((mask & pr_mask::kRateSelector) && (mask & pr_mask::kRate)) {
        const auto rate = pr[55] & 0x3f;
        if (rate < 2 || rate > 22)
            return status::kSaReqInvalid;
    }
    if ((mask & pr_mask::kMtuSelector) && (mask & pr_mask::kMtu)) {
        const auto mtu = pr[54] & 0x3f;
        if (mtu < 1 || mtu > 5)
            return status::kSaReqInvalid;
    }
    const auto sid = mask & pr_mask::kServiceId;
    if (sid != 0 && sid != pr_mask::kServiceId)
        return status::kSaInsufficientComponents;
    return status::kOk;
}

namespace {

// A partition for the log: its PKey, or "(none)" for the table asked without one.
std::string pkey_name(std::optional<std::uint16_t> pkey) {
    return pkey ? fmt::format("{:#06x}", *pkey) : "(none)";
}

// The question without the fields a master without QoS support ignores.
cache::PathQueryKey without_qos_fields(const cache::PathQueryKey& key) {
    return cache::PathQueryKey::from_request(
        key.method, key.comp_mask & ~(pr_mask::kServiceId | pr_mask::kQosClass), key.masked);
}
} // namespace

void PathRecordService::set_master_capabilities(const std::optional<ClassPortInfo>& master) {
    const auto ignores = master && !(master->capability_mask2 & cap_mask2::kIsQosSupported)
                             ? pr_mask::kServiceId | pr_mask::kQosClass
                             : std::uint64_t{0};
    if (ignores != key_ignores_)
        spdlog::info("PathRecord cache key: ServiceID and QoSClass {} (master QoS support {})",
                     ignores ? "left out" : "kept",
                     master ? (ignores ? "not advertised" : "advertised") : "unknown");
    // Answers stored before a change stay right: a key without these bits is the very question
    // that leaves them out, and a question with them no longer finds such a key.
    key_ignores_ = ignores;
    master_known_ = master.has_value();
}

cache::PathQueryKey PathRecordService::key_of(Bytes request) const {
    return cache::PathQueryKey::from_request(
        request[mad::offset::kMethod], load_be64(request, mad::offset::kCompMask) & ~key_ignores_,
        request.subspan(kSaHeaderSize));
}

const char* PathRecordService::uncacheable_reason(const transport::InboundMad& in) const {
    const auto& port = transport_.port();
    if (!port.active())
        return "port not active";
    // The master's answer depends on the requester's port (PKeys, QoS): the cache holds the
    // answers for this port only. (LocalSa refuses other ports before they get here.)
    if (!port.owns_lid(in.from.lid))
        return "requester is another port";
    // A multicast DGID: OpenSM answers from the group's membership (its record is the request's
    // own, checked against the group), which neither the key nor any event follows.
    const auto mask = load_be64(in.bytes, mad::offset::kCompMask);
    if ((mask & pr_mask::kDgid) && in.bytes[kSaHeaderSize + 8] == 0xff)
        return "multicast DGID";
    return nullptr;
}

void PathRecordService::respond(const transport::MadAddress& to, Bytes bytes) {
    send_counted(transport_, counters_, bytes, to);
}

void PathRecordService::handle(const transport::InboundMad& in) {
    ++counters_.pr_requests;
    const auto m = in.bytes[mad::offset::kMethod];
    if (m != method::kGet && m != method::kGetTable) {
        // IBA says UNSUP_METHOD_ATTR; OpenSM drops such requests silently. The master decides.
        forward(in, "method other than Get/GetTable");
        return;
    }
    // The key first: the index slot it needs is then on its way from memory (the look-up's first
    // miss at 100 k entries) while the checks below run.
    const auto key = key_of(in.bytes);
    const auto hash = cache_.prefetch(key);
    // A non-zero SM_Key is the master's to judge (OpenSM drops a wrong one silently), before
    // any local answer, also an error of its own checks.
    if (load_be64(in.bytes, mad::offset::kSmKey) != 0) {
        forward(in, "SM_Key set");
        return;
    }
    if (const auto st = validate_path_request(in.bytes)) {
        ++counters_.pr_errors_local;
        respond(in.from, make_error_response(in.bytes, st));
        return;
    }
    // The index slot has had the checks above to arrive: the entry it names starts loading
    // while the rest runs.
    cache_.prefetch_entry(hash);
    if (const char* why = uncacheable_reason(in)) {
        forward(in, why);
        return;
    }
    serve(in, key, hash);
}

void PathRecordService::serve(const transport::InboundMad& in, const cache::PathQueryKey& key,
                              std::size_t hash, std::optional<Clock::time_point> asked) {
    const auto m = in.bytes[mad::offset::kMethod];
    const auto now = clock_.now();
    auto hit = cache_.find(key, hash, now);
    if (!hit && key_ignores_ != 0) {
        // Stored while the master's capabilities were unknown (a large fabric's start reads its
        // ClassPortInfo late): the answer is kept under the whole mask, and still right.
        const auto whole = cache::PathQueryKey::from_request(
            m, load_be64(in.bytes, mad::offset::kCompMask), Bytes{in.bytes}.subspan(kSaHeaderSize));
        if (whole.comp_mask != key.comp_mask)
            hit = cache_.find(whole, now);
    }
    if (hit) {
        if (!stale_check_ || !is_stale(key, *hit)) {
            ++counters_.pr_cache_hits;
            // Past its refresh time and not confirmed since: served on the strength of
            // --max-staleness-s alone (the master unreachable or the refresh behind).
            if (!hit->negative() &&
                now >= hit->expires - config_.max_staleness + config_.refresh_grace)
                ++counters_.stale_served;
            answer(in.from, in.bytes, hit->status, hit->records);
            return;
        }
        // The safety net under event invalidation: never serve what we know to be stale.
        ++counters_.stale_refused;
    }
    if (in.bytes[mad::offset::kMethod] == method::kGet) {
        const auto mask = key.comp_mask;
        const auto& port = transport_.port();
        Clock::time_point fetched;
        // Without the epoch a table older than its freshness answers only when its renewal
        // failed: while the master answers, a path is asked as it is now (and the table,
        // unused, is not renewed for it).
        const bool any_age = epoch_trusted_ || table_renewal_failed_;
        const auto fetched_since = any_age ? Clock::time_point{} : now - table_fresh_for();
        if (auto rec = preload_.match(Bytes{in.bytes}.subspan(kSaHeaderSize, PathRecord::kSize),
                                      mask, port.gid, now, &fetched, true, fetched_since)) {
            cache::PathAnswer from_table;
            from_table.records.assign(rec->begin(), rec->end());
            if (!stale_check_ || !stale_check_(key, from_table)) {
                ++counters_.pr_preload_hits;
                if (warm_set_)
                    warm_set_->note(key, now);
                if (!epoch_trusted_ && now >= fetched + table_fresh_for())
                    ++counters_.stale_served;
                respond(in.from, make_records_response(in.bytes, PathRecord::kSize, *rec));
                // Under a trusted epoch the table answers until the epoch changes, and then it
                // is renewed or dropped: a copy in the cache would double the memory of a node
                // that talks to the whole fabric (a 4,096-port job: 4,095 paths).
                if (epoch_trusted_)
                    return;
                // Without the epoch, from now on an answer like any other: refreshed while used,
                // then dropped. An old table (a job start late in its life) is renewed within 0.1
                // TTL (Coherence looks that often): the answer waits twice that for it rather than
                // asking the master at once.
                from_table.refresh_at =
                    std::max(fetched + jittered_ttl(), now + config_.positive_ttl / 5);
                from_table.expires = from_table.refresh_at + config_.max_staleness;
                from_table.used_at = now;
                cache_.store(key, from_table);
                return;
            }
            ++counters_.stale_refused;
        }
    }
    if (!asked && m == method::kGet && hold_for_burst(in, key, now))
        return;
    auto [it, first] = pending_.try_emplace(key);
    if (!first) {
        // The same question is already on its way to the master. A retry of a request we
        // already hold (same requester, same TID) is absorbed.
        ++counters_.pr_coalesced;
        const auto tid = tid_of(in.bytes);
        for (const auto& w : it->second)
            if (w.from.lid == in.from.lid && w.from.qpn == in.from.qpn && tid_of(w.request) == tid)
                return;
        // Bounded: a flood of one question while the master is slow must not grow without end;
        // the requesters dropped here retry.
        if (it->second.size() >= kMaxWaitersPerQuestion) {
            ++counters_.pr_waiters_overflow;
            transport_.no_answer(in.from, tid, "too many requesters waiting for one path");
            return;
        }
        it->second.push_back({in.from, in.bytes});
        return;
    }
    ++counters_.pr_cache_misses;
    if (warm_set_ && m == method::kGet)
        warm_set_->note(key, now);
    if (!master_known_ && asked_unknown_.size() < kMaxAskedUnknown)
        asked_unknown_.insert(without_qos_fields(key));
    it->second.push_back({in.from, in.bytes});
    upstream::SubmitOptions options;
    options.deadline = asked.value_or(now) + config_.requester_deadline;
    if (m == method::kGetTable)
        options.try_timeout = table_try_timeout(key);
    upstream_.submit(
        in.bytes,
        [this, key, generation = generation_](upstream::Reply reply) {
            on_upstream(key, generation, std::move(reply));
        },
        options);
}

void PathRecordService::set_miss_burst(const MissBurstConfig& config) {
    burst_config_ = config; // misses held now go at their window's end (burst_closed)
}

bool PathRecordService::hold_for_burst(const transport::InboundMad& in,
                                       const cache::PathQueryKey& key, Clock::time_point now) {
    // Only a Get the partition's table answers (PreloadTable::match). The same question in
    // flight is joined.
    if (burst_config_.threshold == 0 || !burst_hooks_.ask_table || pending_.contains(key) ||
        in.bytes.size() != kMadSize)
        return false;
    const auto table =
        cache::PreloadTable::table_for(Bytes{in.bytes}.subspan(kSaHeaderSize, PathRecord::kSize),
                                       key.comp_mask, transport_.port().gid);
    if (!table)
        return false;
    const auto pkey = *table;
    auto& burst = bursts_[pkey];
    if (now < burst.quiet_until && !burst.table_asked)
        return false;
    if (burst.busy) {
        // The master's answer comes after this requester gives up, and a requester that gave up
        // asks the master itself (the kernel's fail-open): "busy, retry later" instead, as the
        // IBA lets an SA say, keeps the master at the paced table.
        if (!burst.table_asked)
            note_burst_miss(burst, now); // the table's pacing counts it
        refuse_busy(in.from, in.bytes);
        return true;
    }
    // Bounded: requesters that retry while the table is on its way add a waiter each. Once
    // the table is asked the oldest gives way (its requester has retried or given up): a
    // retry must not turn into a Get while the table is paced to the master's capacity.
    if (burst.held.size() >= 4 * burst_config_.threshold + kMaxWaitersPerQuestion) {
        if (!burst.table_asked)
            return false;
        ++counters_.pr_waiters_overflow;
        burst.held.erase(burst.held.begin());
    }
    auto& held = burst.held.emplace_back();
    std::copy_n(in.bytes.begin(), held.head.size(), held.head.begin());
    held.from = in.from;
    held.asked = now;
    ++counters_.burst_held;
    if (burst.table_asked)
        return true;
    note_burst_miss(burst, now);
    if (burst.held.size() == 1)
        burst_hooks_.call_after(burst_config_.coalesce, pkey);
    // Already a burst whose table comes too late: the misses need not wait for the window's
    // end to hear BUSY (nor take memory meanwhile: a job start holds up to N - 1).
    if (burst.recent.size() >= burst_config_.threshold && burst_hooks_.table_late &&
        burst_hooks_.table_late(burst.recent.size()))
        answer_busy(burst, pkey);
    return true;
}

void PathRecordService::note_burst_miss(Burst& burst, Clock::time_point now) {
    while (!burst.recent.empty() && burst.recent.front() + burst_config_.window <= now)
        burst.recent.pop_front();
    burst.recent.push_back(now);
}

void PathRecordService::refuse_busy(const transport::MadAddress& to, Bytes request) {
    ++counters_.pr_busy;
    respond(to, make_error_response(request, status::kBusy));
}

void PathRecordService::answer_busy(Burst& burst, std::optional<std::uint16_t> pkey) {
    if (!burst.busy)
        spdlog::info("the table for a burst of cold misses to PKey {} comes after their requesters "
                     "give up: the misses are answered BUSY until it comes",
                     pkey_name(pkey));
    burst.busy = true;
    for (const auto& held : std::exchange(burst.held, {}))
        refuse_busy(held.from, held.request().bytes);
}

void PathRecordService::burst_closed(std::optional<std::uint16_t> pkey) {
    const auto b = bursts_.find(pkey);
    if (b == bursts_.end() || b->second.table_asked || (b->second.held.empty() && !b->second.busy))
        return;
    auto& burst = b->second;
    if (burst_config_.threshold != 0 && burst.recent.size() >= burst_config_.threshold) {
        // Evidently talking to a large share of the fabric: one table answers this burst and
        // whatever this port asks of the partition until the epoch changes (or its expiry).
        burst.table_asked = true;
        ++counters_.burst_tables;
        const auto misses = burst.recent.size();
        spdlog::info("{} cold misses to PKey {} within {} ms: asking its table (one GetTable "
                     "instead of a Get each)",
                     misses, pkey_name(pkey), burst_config_.window.count());
        burst.recent.clear();
        burst_hooks_.ask_table(pkey, misses);
        if (burst_hooks_.table_late && burst_hooks_.table_late(misses))
            answer_busy(burst, pkey);
        else
            burst.busy = false;
        return;
    }
    burst.busy = false;
    release_burst(pkey);
}

void PathRecordService::burst_table_arrived(std::optional<std::uint16_t> pkey, bool ok) {
    const auto b = bursts_.find(pkey);
    if (b == bursts_.end() || !b->second.table_asked)
        return;
    b->second.table_asked = false;
    b->second.busy = false;
    // A table that came answers the partition; one that did not (the master busy or gone) is
    // not asked again at once: the misses read through meanwhile.
    b->second.quiet_until = clock_.now() + (ok ? burst_config_.window : 10 * burst_config_.window);
    if (!ok)
        spdlog::warn("the table for a burst of cold misses did not come: {} misses asked one by "
                     "one",
                     b->second.held.size());
    release_burst(pkey);
}

transport::InboundMad PathRecordService::Burst::Held::request() const {
    transport::InboundMad in;
    in.bytes.assign(mad::kMadSize, 0);
    std::copy(head.begin(), head.end(), in.bytes.begin());
    in.from = from;
    return in;
}

void PathRecordService::release_burst(std::optional<std::uint16_t> pkey) {
    const auto b = bursts_.find(pkey);
    if (b == bursts_.end())
        return;
    auto held = std::exchange(b->second.held, {});
    for (const auto& h : held) {
        const auto in = h.request();
        const auto asked = h.asked;
        // The port may have changed meanwhile (a resync): the request is judged again.
        if (const char* why = uncacheable_reason(in)) {
            forward(in, why);
            continue;
        }
        const auto key = key_of(in.bytes);
        serve(in, key, cache_.prefetch(key), asked);
    }
}

std::size_t PathRecordService::burst_held() const {
    std::size_t n = 0;
    for (const auto& [pkey, burst] : bursts_)
        n += burst.held.size();
    return n;
}

Clock::duration PathRecordService::jittered_ttl() {
    if (epoch_trusted_)
        return kTrustedHorizon;
    // xorshift: a cheap spread of +-10% of the TTL
    jitter_state_ ^= jitter_state_ << 13;
    jitter_state_ ^= jitter_state_ >> 7;
    jitter_state_ ^= jitter_state_ << 17;
    const auto ttl = config_.positive_ttl;
    const auto spread = ttl.count() / 5;
    const auto jitter = spread ? static_cast<long>(jitter_state_ % spread) - spread / 2 : 0;
    return ttl + std::chrono::milliseconds{jitter};
}

void PathRecordService::forward(const transport::InboundMad& in, const char* why) {
    spdlog::debug("PathRecord {} from LID {} forwarded: {}",
                  method_name(in.bytes[mad::offset::kMethod]), in.from.lid, why);
    ++counters_.pr_forwarded;
    proxy_.forward(in);
}

namespace {
// Equal but for the TID (bytes 8-15).
bool same_request(Bytes a, Bytes b) {
    return a.size() == b.size() && std::equal(a.begin(), a.begin() + 8, b.begin()) &&
           std::equal(a.begin() + 16, a.end(), b.begin() + 16);
}
} // namespace

std::size_t PathRecordService::pending() const {
    auto n = pending_.size();
    for (const auto& [generation, questions] : retired_)
        n += questions.size();
    return n;
}

void PathRecordService::new_generation() {
    if (!pending_.empty())
        retired_[generation_] = std::exchange(pending_, {});
    came_back_.clear(); // answers of retired questions are never stored
    asked_unknown_.clear();
    ++generation_;
    // A table asked for a burst is the former port's (the preloader drops its answer): the
    // held misses go as misses of now.
    std::vector<std::optional<std::uint16_t>> held;
    for (auto& [pkey, burst] : bursts_) {
        burst.table_asked = false;
        burst.busy = false;
        burst.recent.clear();
        if (!burst.held.empty())
            held.push_back(pkey);
    }
    for (const auto& pkey : held)
        release_burst(pkey);
}

void PathRecordService::on_gid_in_service(const sa::Gid& gid) {
    for (const auto& [key, waiters] : pending_) {
        auto& back = came_back_[key];
        if (back.gids.size() < CameBack::kMaxGids)
            back.gids.push_back(gid);
        else
            back.many = true;
    }
}

namespace {
// Whether a trap 64 about one of `back`'s GIDs would have dropped this answer had it been stored
// before (Coherence::on_report, PathCache::erase_tables_and_open_negatives).
bool dropped_by_return(const cache::PathQueryKey& key, const cache::PathAnswer& answer,
                       const std::vector<sa::Gid>& back, bool many) {
    if (many || key.method == method::kGetTable || cache::open_negative(key, answer.records))
        return true;
    return std::ranges::any_of(
        back, [&](const sa::Gid& g) { return cache::answer_involves(key, answer, g); });
}
} // namespace

void PathRecordService::on_upstream(const cache::PathQueryKey& key, std::uint64_t generation,
                                    upstream::Reply reply) {
    PendingMap::node_type node;
    decltype(came_back_)::node_type back;
    if (generation == generation_) {
        node = pending_.extract(key);
        back = came_back_.extract(key);
    } else if (auto r = retired_.find(generation); r != retired_.end()) {
        node = r->second.extract(key);
        if (r->second.empty())
            retired_.erase(r);
    }
    if (node.empty())
        return;
    auto& waiters = node.mapped();
    // A warm-up's answer: stored as a refresh's (unused until a requester uses it), but no
    // refresh of anything cached.
    const bool warming = !warming_.empty() && warming_.erase(key) > 0;
    const bool current = generation == generation_;
    if (!current && waiters.empty())
        return; // a refresh of an answer a resync has dropped
    if (reply.outcome != upstream::Outcome::Response) {
        if (waiters.empty() && !warming) {
            ++counters_.refresh_failed;
            retry_refresh_later(key);
        }
        // The requesters retry, as they would with the master (the transport tells those that
        // would wait out a timeout instead).
        for (const auto& w : waiters)
            transport_.no_answer(w.from, tid_of(w.request),
                                 upstream::outcome_reason(reply.outcome));
        return;
    }
    const auto& resp = reply.response;
    const bool well_formed = resp.size() >= kSaHeaderSize &&
                             resp[mad::offset::kMgmtClass] == mgmt_class::kSubnAdm &&
                             load_be16(resp, mad::offset::kAttrId) == attr::kPathRecord;
    const auto offset = well_formed ? load_be16(resp, mad::offset::kAttrOffset) : 0;
    if (!well_formed || (offset != 0 && offset * 8 != PathRecord::kSize)) {
        // Not something we understand: relay it untouched, cache nothing.
        ++counters_.pr_relayed_unparsed;
        for (const auto& w : waiters)
            respond(w.from, proxy::relay_response(resp, tid_of(w.request)));
        return;
    }
    auto records = response_records(resp, PathRecord::kSize);
    cache::PathAnswer answer_value;
    answer_value.status = load_be16(resp, mad::offset::kStatus);
    answer_value.records = std::move(records.bytes);
    const bool cacheable = records.complete && (answer_value.status == status::kOk ||
                                                answer_value.status == status::kSaNoRecords);
    const auto now = clock_.now();
    const auto ttl = answer_value.negative() ? config_.negative_ttl : config_.positive_ttl;
    if (answer_value.negative()) {
        answer_value.refresh_at = answer_value.expires = now + ttl;
    } else {
        answer_value.refresh_at = now + jittered_ttl();
        answer_value.expires = answer_value.refresh_at + config_.max_staleness;
    }
    if (waiters.empty() && warming) {
        if (answer_value.status & status::kBusy)
            return; // nothing cached to keep; the warm-up is best effort
    } else if (waiters.empty()) {
        // A refresh: note whether the master changed its mind.
        const auto old = cache_.peek(key);
        if (!old || old->status != answer_value.status ||
            !std::ranges::equal(old->records, answer_value.records))
            ++counters_.refresh_changed;
        if (answer_value.status & status::kBusy) {
            ++counters_.refresh_failed; // BUSY after every try: the master is there, but busy
            retry_refresh_later(key);
            return;
        }
        // The answer of a refresh is kept by the stored one (used_at unset), as is its use.
    } else {
        answer_value.used_at = now;
    }
    for (const auto& w : waiters) {
        if (answer_value.status == status::kOk && records.complete)
            answer(w.from, w.request, answer_value.status, answer_value.records);
        else if (cacheable && !same_request(w.request, waiters.front().request))
            // A waiter that shares the question but asked other ignored fields (another
            // ServiceID): the master's error echoes the request, so it is built from its own.
            answer(w.from, w.request, answer_value.status, {});
        else
            respond(w.from, proxy::relay_response(resp, tid_of(w.request)));
    }
    const bool came_back = !back.empty() && dropped_by_return(key, answer_value, back.mapped().gids,
                                                              back.mapped().many);
    if (came_back)
        ++counters_.invalidated_in_flight;
    if (cacheable && ttl.count() > 0 && current && !came_back)
        cache_.store(key, answer_value);
    else if (current)
        // Not kept (an error such as ERR_REQ_INVALID_GID, NO_RECORDS with --negative-ttl-ms 0,
        // an incomplete table, an answer from before a port came back): whatever was cached for
        // the question is no longer the master's answer, so it goes now instead of being
        // served on --max-staleness-s.
        cache_.erase(key);
}

void PathRecordService::refresh(const cache::PathQueryKey& key) {
    if (pending_.contains(key))
        return; // a miss for the same question is already on its way
    // The refresher asks only what a requester used (its idle window): still in use.
    if (warm_set_ && key.method == method::kGet)
        warm_set_->note(key, clock_.now());
    if (refresh_from_table(key))
        return;
    ++counters_.refreshes;
    ask_background(key);
}

bool PathRecordService::refresh_from_table(const cache::PathQueryKey& key) {
    if (key.method == method::kGet) {
        // The table the master sent since this answer was stored holds the path already: one
        // GetTable renews every path from this port, and the answers taken from it need no
        // query of their own. Only a young table: the answer then stays within the TTL bound.
        const auto now = clock_.now();
        Clock::time_point fetched;
        // Not counted as a use of the table: its renewal follows requesters, not itself.
        if (auto rec = preload_.match(key.masked, key.comp_mask, transport_.port().gid, now,
                                      &fetched, false);
            rec && (epoch_trusted_ ? fetched >= epoch_since_ : now < fetched + table_fresh_for())) {
            cache::PathAnswer from_table;
            from_table.records.assign(rec->begin(), rec->end());
            if (!stale_check_ || !stale_check_(key, from_table)) {
                ++counters_.refreshes_from_preload;
                // Not before 0.2 TTL: a table kept past the TTL (Preloader's back-off) must not
                // make the answer due again at once.
                from_table.refresh_at =
                    std::max(fetched + jittered_ttl(), now + config_.positive_ttl / 5);
                from_table.expires = from_table.refresh_at + config_.max_staleness;
                cache_.store(key, from_table); // used_at unset: a refresh is no use
                return true;
            }
        }
    }
    return false;
}

void PathRecordService::warm(const cache::PathQueryKey& key) {
    if (pending_.contains(key) || cache_.peek(key) || refresh_from_table(key) ||
        asked_unknown_.contains(without_qos_fields(key)))
        return; // asked, known, or in the preload table already
    warming_.insert(key);
    ++counters_.warm_queries;
    ask_background(key);
}

void PathRecordService::ask_background(const cache::PathQueryKey& key) {
    pending_.try_emplace(key);
    SaMad q;
    q.header.method = key.method;
    q.header.attr_id = attr::kPathRecord;
    q.comp_mask = key.comp_mask;
    std::copy(key.masked.begin(), key.masked.end(), q.data.begin());
    upstream::SubmitOptions options;
    options.priority = upstream::Priority::Background;
    if (key.method == method::kGetTable)
        options.try_timeout = table_try_timeout(key);
    upstream_.submit(
        q.pack(),
        [this, key, generation = generation_](upstream::Reply reply) {
            on_upstream(key, generation, std::move(reply));
        },
        options);
}

std::chrono::milliseconds PathRecordService::table_try_timeout(const cache::PathQueryKey& key) {
    // Sized by this question's last answer, else by the preloaded paths of the port (a table
    // from this port holds about as many), else by a fabric of 4,096.
    std::size_t bytes = 0;
    if (const auto old = cache_.peek(key))
        bytes = old->records.size();
    if (bytes == 0)
        bytes = preload_.size() * PathRecord::kSize;
    if (bytes == 0)
        bytes = upstream::kUnknownTableBytes;
    return upstream::table_try_timeout(upstream_.config().try_timeout, bytes);
}

void PathRecordService::retry_refresh_later(const cache::PathQueryKey& key) {
    const auto now = clock_.now();
    const auto old = cache_.peek(key);
    if (!old || old->negative() || old->expires <= now)
        return;
    cache::PathAnswer kept; // `expires` stays: the answer is served --max-staleness-s at most
    old->copy_to(kept);
    kept.refresh_at = now + config_.refresh_retry;
    kept.keep_use = true; // a failed refresh is no reason to count the answer idle
    if (kept.refresh_at < kept.expires)
        cache_.store(key, std::move(kept));
}

bool PathRecordService::is_stale(const cache::PathQueryKey& key, const cache::CachedAnswer& hit) {
    hit.copy_to(stale_scratch_); // the check takes the owning form; the buffer is reused
    return stale_check_(key, stale_scratch_);
}

void PathRecordService::answer(const transport::MadAddress& to, Bytes request,
                               std::uint16_t answer_status, Bytes records) {
    if (answer_status != status::kOk) {
        respond(to, make_error_response(request, answer_status));
        return;
    }
    if (out_busy_) {
        // A transport that answered back into us while sending: out_ is still being sent.
        respond(to, make_records_response(request, PathRecord::kSize, records));
        return;
    }
    out_busy_ = true;
    make_records_response(out_, request, PathRecord::kSize, records);
    respond(to, out_);
    out_busy_ = false;
}

} // namespace localsa::sa
