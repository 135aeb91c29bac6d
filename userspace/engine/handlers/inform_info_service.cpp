#include "engine/handlers/inform_info_service.hpp"

#include "engine/send.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/response.hpp"

#include <spdlog/spdlog.h>

namespace localsa::sa {

namespace {
constexpr std::uint16_t kEveryTrap = 0xffff;
constexpr std::size_t kSubscribeOffset = mad::kSaHeaderSize + 23;
} // namespace

bool InformInfoService::handle(const transport::InboundMad& in) {
    if (in.bytes[mad::offset::kMethod] != mad::method::kSet)
        return false;
    const auto key = mad::load_be64(in.bytes, mad::offset::kSmKey);
    if (key == 0) {
        handle_set(in);
        return true;
    }
    // The key is the master's to judge: a harmless question carrying it. Answered (any
    // status), the master accepts the key; unanswered, the Set goes unanswered, as from the
    // master. One try: the client retries its Set on its own. The key is never logged.
    mad::SaMad probe;
    probe.header.method = mad::method::kGet;
    probe.header.attr_id = mad::attr::kClassPortInfo;
    probe.sm_key = key;
    upstream::SubmitOptions options;
    options.single_try = true;
    ++counters_.inform_key_probes;
    upstream_.submit(
        probe.pack(),
        [this, in](upstream::Reply r) {
            if (r.outcome == upstream::Outcome::Response)
                handle_set(in);
        },
        options);
    return true;
}

void InformInfoService::handle_set(const transport::InboundMad& in) {
    const auto info = InformInfo::unpack(mad::Bytes{in.bytes}.subspan(mad::kSaHeaderSize));
    if (const char* why = refusal(in, info)) {
        ++counters_.inform_denied;
        if (const auto log = denied_log_.admit(clock_.now()); log.log) {
            if (log.suppressed)
                spdlog::info("{} more denied InformInfo Sets not logged (at most {} per {} s)",
                             log.suppressed, kEventLogBurst, kEventLogInterval.count());
            spdlog::info("InformInfo Set ({} trap {}) from LID {} QPN {:#x} denied: {}",
                         info.subscribe ? "subscribe" : "unsubscribe", info.trap_number,
                         in.from.lid, in.from.qpn, why);
        }
        answer(in, mad::status::kSaDenied);
        return;
    }
    if (info.subscribe > 1) {
        answer(in, mad::status::kSaReqInvalid);
        return;
    }
    if (info.subscribe)
        subscribe(in, info);
    else
        unsubscribe(in, info);
}

const char* InformInfoService::refusal(const transport::InboundMad& in,
                                       const InformInfo& info) const {
    if (in.from.qpn <= 1)
        return "sent from QP1, where the port's Reports reach localsad only; subscribe from a "
               "UD QP of your own";
    if (!master_)
        return "this local SA holds no subscriptions at the master";
    if (!info.is_generic)
        return "vendor-specific traps are not held at the master by localsad";
    if (info.trap_number == kEveryTrap)
        return "subscribe to each trap by number (0xFFFF is not held at the master)";
    return nullptr;
}

void InformInfoService::answer(const transport::InboundMad& in, std::uint16_t status) {
    std::vector<std::uint8_t> out;
    if (status == 0) {
        out = make_records_response(
            in.bytes, InformInfo::kSize,
            mad::Bytes{in.bytes}.subspan(mad::kSaHeaderSize, InformInfo::kSize));
    } else {
        // o13-13.1.1: an InformInfo that failed comes back with Subscribe 0.
        auto request = in.bytes;
        request[kSubscribeOffset] = 0;
        out = make_error_response(request, status);
    }
    send_counted(transport_, counters_, out, in.from);
}

void InformInfoService::subscribe(const transport::InboundMad& in, const InformInfo& info) {
    const auto added = subscriptions_.add(in.from, info);
    switch (added) {
    case events::ClientSubscriptions::AddResult::Full:
        spdlog::warn("InformInfo Set (trap {}) from LID {} QPN {:#x}: {} client subscriptions "
                     "held already",
                     info.trap_number, in.from.lid, in.from.qpn, subscriptions_.size());
        return answer(in, mad::status::kSaNoResources);
    case events::ClientSubscriptions::AddResult::Updated:
        break;
    case events::ClientSubscriptions::AddResult::Added:
        ++counters_.client_subscribed;
        break;
    }
    // The client learns the outcome once the master holds the trap for this port (at once when
    // it does already).
    const bool is_new = added == events::ClientSubscriptions::AddResult::Added;
    master_->hold(info.trap_number, [this, in, info, is_new](std::uint16_t status) {
        if (status == 0) {
            log_subscription("subscribed to", in.from, info.trap_number);
        } else {
            spdlog::warn("client LID {} QPN {:#x} not subscribed to trap {}: the master "
                         "answered {}",
                         in.from.lid, in.from.qpn, info.trap_number, mad::status_name(status));
            // A repeated Set that fails here (no master, queue full) leaves the subscription
            // the client already holds in place.
            if (is_new)
                forget(in.from, info);
        }
        answer(in, status);
    });
}

void InformInfoService::log_subscription(const char* what, const transport::MadAddress& client,
                                         std::uint16_t trap) {
    const auto log = subscription_log_.admit(clock_.now());
    if (!log.log)
        return;
    if (log.suppressed)
        spdlog::info("{} more client subscribes and unsubscribes not logged (at most {} per {} s)",
                     log.suppressed, kEventLogBurst, kEventLogInterval.count());
    spdlog::info("client LID {} QPN {:#x} {} trap {}", client.lid, client.qpn, what, trap);
}

void InformInfoService::unsubscribe(const transport::InboundMad& in, const InformInfo& info) {
    if (!subscriptions_.lookup(in.from, info)) {
        // As OpenSM: no such subscription is an invalid request.
        return answer(in, mad::status::kSaReqInvalid);
    }
    ++counters_.client_unsubscribed;
    log_subscription("unsubscribed from", in.from, info.trap_number);
    forget(in.from, info);
    answer(in, 0);
}

void InformInfoService::forget(const transport::MadAddress& subscriber, const InformInfo& info) {
    if (!subscriptions_.remove(subscriber, info))
        return;
    if (subscriptions_.count_trap(info.trap_number) == 0)
        master_->release(info.trap_number);
}

void InformInfoService::on_delivery(const events::ClientSubscription& to, bool delivered) {
    auto* sub = subscriptions_.lookup(to.subscriber, to.filter);
    if (!sub)
        return; // unsubscribed meanwhile
    if (delivered) {
        sub->undelivered_in_a_row = 0;
        return;
    }
    if (++sub->undelivered_in_a_row < kDropAfterUndelivered)
        return;
    ++counters_.client_subscriptions_dropped;
    spdlog::warn("client LID {} QPN {:#x} dropped from trap {}: {} Reports in a row went "
                 "unanswered",
                 to.subscriber.lid, to.subscriber.qpn, to.filter.trap_number,
                 kDropAfterUndelivered);
    forget(to.subscriber, to.filter);
}

} // namespace localsa::sa
