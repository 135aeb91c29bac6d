#include "engine/coherence/subscriptions.hpp"

#include "ib/constants.hpp"
#include "ib/inform_info.hpp"
#include "ib/mad.hpp"
#include "ib/response.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <set>

namespace localsa::coherence {

using namespace std::chrono_literals;

namespace {
// InformInfo (IBA 13.4.8.3) for "every LID, every type, every producer" and ib_sa's answer time.
constexpr std::uint16_t kEveryLid = 0xffff;
constexpr std::uint16_t kEveryType = 0xffff;
constexpr std::uint32_t kEveryProducer = 0xffffff;
constexpr std::uint8_t kRespTimeValue = 18;
constexpr std::uint64_t kInformInfoRecordSubscriberGid = 1; // its component mask bit
// InformInfoRecord: SubscriberGID, Enum, 6 reserved bytes, the InformInfo, 4 bytes of padding.
constexpr std::size_t kInformInfoRecordSize = 64;
constexpr std::size_t kInformInfoInRecord = 24;
} // namespace

Subscriptions::Subscriptions(boost::asio::any_io_executor executor, Clock& clock,
                             transport::MadTransport& transport, upstream::UpstreamClient& upstream,
                             Counters& counters, SubscriptionsConfig config,
                             std::function<void(const std::string& why)> lost)
    : executor_(executor), clock_(clock), transport_(transport), upstream_(upstream),
      counters_(counters), config_(config), lost_(std::move(lost)),
      resubscribe_timer_(clock, executor), check_timer_(clock, executor) {
    if (config_.subscribe)
        wanted_.insert(std::begin(kSubscribedTraps), std::end(kSubscribedTraps));
}

bool Subscriptions::own_trap(std::uint16_t trap) const {
    return config_.subscribe && std::find(std::begin(kSubscribedTraps), std::end(kSubscribedTraps),
                                          trap) != std::end(kSubscribedTraps);
}

void Subscriptions::start() {
    if (!config_.subscribe)
        return;
    subscribe_all(true);
    schedule_check();
}

void Subscriptions::forget() {
    ++generation_;
    subscribed_.clear();
    in_flight_.clear(); // answers to the older generation's Sets are ignored
    resubscribe_delay_ = {};
}

void Subscriptions::stop() {
    resubscribe_timer_.cancel();
    check_timer_.cancel();
}

void Subscriptions::subscribe_all(bool subscribe) {
    // Over a copy: a Set that fails at once (no SM, upstream queue full) answers the clients
    // waiting for its trap, and they may release it (erasing it from wanted_ under the loop).
    auto traps = wanted_;
    // A trap the last client released while its Set was in flight has Sets waiting for the
    // master's answer; a resync dropped that Set, so it is sent again for them (and released
    // again once answered, see on_answer).
    if (subscribe)
        for (const auto& [trap, waiting] : waiting_)
            traps.insert(trap);
    for (auto trap : traps) {
        if (!wanted_.contains(trap) && !(subscribe && waiting_.contains(trap)))
            continue; // released meanwhile
        if (subscribe && (subscribed_.contains(trap) || in_flight_.contains(trap)))
            continue;
        send(trap, subscribe);
    }
}

void Subscriptions::send(std::uint16_t trap, bool subscribe) {
    mad::SaMad set;
    set.header.method = mad::method::kSet;
    set.header.attr_id = mad::attr::kInformInfo;
    sa::InformInfo info;
    info.lid_range_begin = kEveryLid;
    info.is_generic = 1;
    info.subscribe = subscribe ? 1 : 0;
    info.type = kEveryType;
    info.trap_number = trap;
    info.qpn = 1;
    info.resp_time_value = kRespTimeValue;
    info.producer_type = kEveryProducer;
    info.pack(set.data);
    if (subscribe)
        in_flight_.insert(trap);
    const auto generation = generation_;
    upstream::SubmitOptions options;
    // From the node's budget, unless a client's Set waits for it.
    if (!waiting_.contains(trap))
        options.priority = upstream::Priority::Background;
    upstream_.submit(
        set.pack(),
        [this, trap, subscribe, generation](upstream::Reply r) {
            if (generation != generation_ || !subscribe)
                return;
            in_flight_.erase(trap);
            on_answer(trap, r);
        },
        options);
}

void Subscriptions::on_answer(std::uint16_t trap, const upstream::Reply& r) {
    const bool answered = r.outcome == upstream::Outcome::Response;
    // Not answered: the client may try again (BUSY); our own traps are retried below.
    const auto status =
        answered ? mad::load_be16(r.response, mad::offset::kStatus) : mad::status::kBusy;
    auto waiting = waiting_.extract(trap);
    if (!wanted_.contains(trap)) {
        // The last client left while the Set was on its way: answer it all the same.
        if (status == 0)
            send(trap, false);
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
    if (wanted_.contains(trap) && !subscribed_.contains(trap))
        schedule_resubscribe();
    else if (subscribed_ == wanted_)
        resubscribe_delay_ = {}; // all confirmed: the next trouble starts from the first wait
}

void Subscriptions::schedule_resubscribe() {
    if (resubscribe_armed_)
        return; // one round for every trap that failed
    const auto base = resubscribe_delay_.count() ? resubscribe_delay_ : config_.resubscribe_retry;
    resubscribe_delay_ = std::min(base * 2, std::max(kResubscribeMax, config_.resubscribe_retry));
    resubscribe_armed_ = true;
    resubscribe_timer_.expires_after(base / 2 + jitter_.up_to(base / 2));
    resubscribe_timer_.async_wait([this](auto ec) {
        resubscribe_armed_ = false;
        if (!ec)
            subscribe_all(true);
    });
}

void Subscriptions::hold(std::uint16_t trap, std::function<void(std::uint16_t)> done) {
    if (subscribed_.contains(trap))
        return done(0);
    waiting_[trap].push_back(std::move(done));
    wanted_.insert(trap);
    if (!in_flight_.contains(trap))
        send(trap, true);
}

void Subscriptions::release(std::uint16_t trap) {
    if (own_trap(trap) || !wanted_.erase(trap))
        return;
    if (subscribed_.erase(trap)) {
        spdlog::info("trap {} no longer held at the master: no client subscribed to it", trap);
        send(trap, false);
    }
}

void Subscriptions::set_check_period(std::chrono::milliseconds period) {
    if (period == config_.check_period)
        return;
    config_.check_period = period;
    if (config_.subscribe) {
        check_timer_.cancel();
        schedule_check();
    }
}

void Subscriptions::schedule_check() {
    const auto period = config_.check_period;
    if (period.count() == 0)
        return;
    // 0.9-1.1 of the period, drawn each time: nodes that started together (a reboot of the
    // fabric, a package upgrade) would otherwise ask the master together, every period.
    check_timer_.expires_after(period - period / 10 + jitter_.up_to(period / 5));
    check_timer_.async_wait([this](auto ec) {
        if (!ec)
            check();
    });
}

void Subscriptions::check() {
    const auto& port = transport_.port();
    // Only a confirmed full set is audited; until then the resubscribe timer is at work.
    if (!port.active() || subscribed_ != wanted_) {
        schedule_check();
        return;
    }
    // A GetTable: OpenSM numbers every subscription Enum 0, so a Get naming the SubscriberGID
    // matches them all and is answered TOO_MANY_RECORDS, with an error line in OpenSM's log
    // each time. The table names the traps the master holds for this port.
    mad::SaMad q;
    q.header.method = mad::method::kGetTable;
    q.header.attr_id = mad::attr::kInformInfoRecord;
    q.comp_mask = kInformInfoRecordSubscriberGid;
    std::copy(port.gid.raw.begin(), port.gid.raw.end(), q.data.begin());
    ++counters_.subscription_checks;
    const auto generation = generation_;
    upstream::SubmitOptions options;
    options.priority = upstream::Priority::Background;
    upstream_.submit(
        q.pack(),
        [this, generation](upstream::Reply r) {
            // After a resync in between, the answer is about subscriptions renewed since.
            if (generation == generation_ && r.outcome == upstream::Outcome::Response)
                on_check_answer(r.response);
            schedule_check();
        },
        options);
}

void Subscriptions::on_check_answer(mad::Bytes response) {
    const auto status = mad::load_be16(response, mad::offset::kStatus);
    if (status != 0 && status != mad::status::kSaNoRecords) {
        spdlog::debug("subscription check answered {}", mad::status_name(status));
        return;
    }
    std::set<std::uint16_t> held;
    bool complete = true;
    if (status == 0) {
        const auto records = sa::response_records(response, kInformInfoRecordSize);
        complete = records.complete;
        // A single MAD whose RMPP header announces no length (a transfer a simulator cut to
        // its first segment) and whose data area has no room for another record may be part
        // of a longer table. (The kernel's RMPP reassembly always announces the length.)
        const auto rmpp = mad::RmppHeader::unpack(response);
        if (rmpp.active() && rmpp.paylen_newwin == 0 && response.size() <= mad::kMadSize &&
            records.bytes.size() + kInformInfoRecordSize > mad::kSaDataSize)
            complete = false;
        spdlog::debug("subscription check: {} records (RMPP flags {:#x}, PayloadLength {}){}",
                      records.bytes.size() / kInformInfoRecordSize, rmpp.flags, rmpp.paylen_newwin,
                      complete ? "" : ", perhaps part of a longer table");
        for (std::size_t off = 0; off + kInformInfoRecordSize <= records.bytes.size();
             off += kInformInfoRecordSize) {
            const auto info = sa::InformInfo::unpack(mad::Bytes{records.bytes}.subspan(
                off + kInformInfoInRecord, sa::InformInfo::kSize));
            if (info.is_generic)
                held.insert(info.trap_number);
        }
    }
    const auto missing = std::count_if(subscribed_.begin(), subscribed_.end(),
                                       [&](auto t) { return !held.contains(t); });
    if (missing == 0)
        return;
    if (!complete)
        return; // the rest of the table may hold them (said above, at debug level)
    ++counters_.subscriptions_lost;
    spdlog::warn("the master holds {} of this port's {} subscriptions (SM restarted or replaced "
                 "on LID {}?)",
                 subscribed_.size() - static_cast<std::size_t>(missing), subscribed_.size(),
                 transport_.port().sm_lid);
    lost_("subscriptions lost at the master");
}

void Subscriptions::shutdown(std::function<void()> done) {
    stop();
    if (subscribed_.empty()) {
        done();
        return;
    }
    // Best effort: the master forgets subscribers whose Reports fail anyway.
    subscribe_all(false);
    subscribed_.clear();
    auto timer = std::make_shared<Timer>(clock_, executor_);
    timer->expires_after(300ms);
    timer->async_wait([timer, done = std::move(done)](auto) { done(); });
}

void Subscriptions::add_stats(nlohmann::json& j) const {
    j["subscriptions"] = subscribed_.size();
    j["master_extra_subscriptions"] =
        std::count_if(subscribed_.begin(), subscribed_.end(), [&](auto t) { return !own_trap(t); });
}

} // namespace localsa::coherence
