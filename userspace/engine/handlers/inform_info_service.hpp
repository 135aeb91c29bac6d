// InformInfo from clients of this port: event subscriptions held at the local SA.
//
// The master sends a subscriber's Reports to the address the Set came from. A relayed Set would
// come from localsad's own address (LID, QP1): the master could not tell a client's subscription
// from localsad's, a client's unsubscribe would remove localsad's own (measured on the sim tier:
// trap 65 stopped arriving), and the Reports would reach localsad anyway. So Sets are never
// relayed: a client's subscription is kept here (events::ClientSubscriptions), the trap is held
// at the master by localsad (events::MasterSubscriptions), and each Report is sent on to the
// matching clients (events::ReportFanout).
//
// Only a client that subscribes from a QP of its own (a UD QP, not QP1) can be served: on QP1 the
// MAD layer hands every Report arriving at the port to the one agent registered for SA Reports,
// localsad itself. Sets from QP1 are denied (REQ_DENIED), and so are vendor-specific traps and
// "every trap" (0xFFFF) subscriptions, which localsad does not hold at the master. A Set with an
// SM_Key is no exception: held here once the master has accepted the key (see handle()).
#pragma once

#include "engine/clock.hpp"
#include "engine/counters.hpp"
#include "engine/events/client_subscriptions.hpp"
#include "engine/events/master_subscriptions.hpp"
#include "engine/log_limiter.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/inform_info.hpp"
#include "transport/transport.hpp"

namespace localsa::sa {

class InformInfoService {
public:
    InformInfoService(const Clock& clock, transport::MadTransport& transport, Counters& counters,
                      events::ClientSubscriptions& subscriptions,
                      upstream::UpstreamClient& upstream)
        : clock_(clock), transport_(transport), counters_(counters), subscriptions_(subscriptions),
          upstream_(upstream) {}

    // Without it (no coherence: nothing held at the master) every Set is denied.
    void set_master(events::MasterSubscriptions* master) { master_ = master; }

    // True when it handled the request (a Set); other methods are the caller's to relay. A Set
    // with a non-zero SM_Key is held the same way once the master has shown that it accepts
    // the key (it answers a Get(ClassPortInfo) carrying it; OpenSM drops a wrong key silently,
    // and so does localsad then). Relayed, it would subscribe or unsubscribe localsad's port.
    bool handle(const transport::InboundMad& request);
    // After a Report to `to`: a subscriber that acknowledges none of `drop_after` Reports in a
    // row is gone (its process ended without unsubscribing) and is dropped.
    void on_delivery(const events::ClientSubscription& to, bool delivered);

    static constexpr unsigned kDropAfterUndelivered = 3;

private:
    void handle_set(const transport::InboundMad& request);
    void subscribe(const transport::InboundMad& request, const InformInfo& info);
    void unsubscribe(const transport::InboundMad& request, const InformInfo& info);
    // Forgets one subscription; lets the master trap go when no client needs it any more.
    void forget(const transport::MadAddress& subscriber, const InformInfo& info);
    const char* refusal(const transport::InboundMad& request, const InformInfo& info) const;
    void answer(const transport::InboundMad& request, std::uint16_t status);
    void log_subscription(const char* what, const transport::MadAddress& client,
                          std::uint16_t trap);

    const Clock& clock_;
    transport::MadTransport& transport_;
    Counters& counters_;
    events::ClientSubscriptions& subscriptions_;
    upstream::UpstreamClient& upstream_;
    events::MasterSubscriptions* master_ = nullptr;
    // Info lines per event, rate-limited: a client retrying a denied Set, or many clients
    // subscribing at a job's start, must not flood the log.
    LogLimiter denied_log_{kEventLogBurst, kEventLogInterval};
    LogLimiter subscription_log_{kEventLogBurst, kEventLogInterval};
};

} // namespace localsa::sa
