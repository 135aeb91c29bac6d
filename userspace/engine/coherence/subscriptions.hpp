// Coherence's event subscriptions at the master: this port's own traps (64-67, 144, 145) and the
// traps its clients subscribed to at the local SA, each held once (InformInfo Set), retried until
// confirmed, and audited every check period (the master may have forgotten them: an SM restarted
// or replaced on the same LID).
#pragma once

#include "engine/clock.hpp"
#include "engine/coherence/jitter.hpp"
#include "engine/counters.hpp"
#include "engine/events/master_subscriptions.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/notice.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace localsa::coherence {

// The traps the local SA subscribes to (sa-facts: 64-67 from the SM, 144/145 forwarded).
inline constexpr std::uint16_t kSubscribedTraps[] = {
    sa::trap::kGidInService,   sa::trap::kGidOutOfService,      sa::trap::kMcGroupCreated,
    sa::trap::kMcGroupDeleted, sa::trap::kCapabilityMaskChange, sa::trap::kSystemImageGuidChange};

struct SubscriptionsConfig {
    bool subscribe = true; // this port's own traps (clients' traps are held regardless)
    // The first retry of Sets the master did not confirm; each further round waits twice as
    // long, up to kResubscribeMax, jittered: a master the whole fabric overloaded at once
    // must see the retries thin out, not come back every few seconds from every node.
    std::chrono::milliseconds resubscribe_retry{std::chrono::seconds{5}};
    std::chrono::milliseconds check_period{std::chrono::seconds{60}}; // zero: never
};

class Subscriptions : public events::MasterSubscriptions {
public:
    // `lost(why)`: the audit found the master no longer holds them (a resync follows).
    Subscriptions(boost::asio::any_io_executor executor, Clock& clock,
                  transport::MadTransport& transport, upstream::UpstreamClient& upstream,
                  Counters& counters, SubscriptionsConfig config,
                  std::function<void(const std::string& why)> lost);

    // Subscribes to this port's own traps and starts the audit.
    void start();
    // Sends every wanted Set not confirmed nor in flight (the start, and after a resync).
    void subscribe() { subscribe_all(true); }
    // Forgets what the master confirmed and what is in flight (a resync: the master, or this
    // port's address, changed); answers to Sets sent before are ignored.
    void forget();
    // Unsubscribes (best effort) and calls `done` once the master answered or after a bound.
    void shutdown(std::function<void()> done);
    void stop();

    void hold(std::uint16_t trap, std::function<void(std::uint16_t status)> done) override;
    void release(std::uint16_t trap) override;

    void set_check_period(std::chrono::milliseconds period);
    void set_resubscribe_retry(std::chrono::milliseconds retry) {
        config_.resubscribe_retry = retry;
    }
    void add_stats(nlohmann::json& stats) const;

    static constexpr std::chrono::milliseconds kResubscribeMax{std::chrono::minutes{5}};

private:
    bool own_trap(std::uint16_t trap) const;
    // Sends the unconfirmed Sets again after the back-off (one round for all traps).
    void schedule_resubscribe();
    void subscribe_all(bool subscribe);
    void send(std::uint16_t trap, bool subscribe);
    void on_answer(std::uint16_t trap, const upstream::Reply& reply);
    void schedule_check();
    void check();
    void on_check_answer(mad::Bytes response);

    boost::asio::any_io_executor executor_;
    Clock& clock_;
    transport::MadTransport& transport_;
    upstream::UpstreamClient& upstream_;
    Counters& counters_;
    SubscriptionsConfig config_;
    std::function<void(const std::string&)> lost_;
    Timer resubscribe_timer_;
    bool resubscribe_armed_ = false;
    std::chrono::milliseconds resubscribe_delay_{}; // the next round's; 0: the first
    Timer check_timer_;
    Jitter jitter_;
    std::uint64_t generation_ = 0; // bumps on forget(); late answers of an older one are ignored
    // Traps held at the master: our own (when subscribing) and those clients asked for.
    std::set<std::uint16_t> wanted_;
    std::set<std::uint16_t> subscribed_; // confirmed by the master
    std::set<std::uint16_t> in_flight_;  // Set sent, answer awaited
    // Clients' Sets waiting for the master to confirm a trap.
    std::map<std::uint16_t, std::vector<std::function<void(std::uint16_t)>>> waiting_;
};

} // namespace localsa::coherence
