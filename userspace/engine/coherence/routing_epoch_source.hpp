// Where the master's routing epoch comes from (userspace/opensm/localsa_epoch.c publishes it):
// the ServiceRecord "localsa.routing-epoch", read at start, after a resync and every
// `reread` (a lost Report costs at most that long), and the plugin's vendor Reports
// (DeviceID 0x4c53), subscribed to at the master. What it learns goes to the listener
// (Coherence): an epoch, or that there is none (plugin not loaded, another master).
#pragma once

#include "engine/clock.hpp"
#include "engine/coherence/routing_epoch.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/notice.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace localsa::coherence {

inline constexpr std::uint64_t kEpochServiceId = 0x100000004c534145ULL;
inline constexpr std::uint16_t kEpochDeviceId = 0x4c53; // the vendor notice's "trap number"

struct RoutingEpochSourceConfig {
    bool enabled = true; // --no-routing-epoch: off, the TTL rules only
    std::chrono::milliseconds reread{std::chrono::minutes{10}};
};

class RoutingEpochSource {
public:
    RoutingEpochSource(boost::asio::any_io_executor executor, Clock& clock,
                       transport::MadTransport& transport, upstream::UpstreamClient& upstream,
                       RoutingEpochListener& listener, RoutingEpochSourceConfig config);

    bool enabled() const { return config_.enabled; }
    // Subscribes to the plugin's Reports and reads the ServiceRecord (start, resync).
    void start();
    void stop();
    // A resync: what was asked before is ignored.
    void reset();
    // A Report from the master; false when it is not the plugin's.
    bool on_report(const sa::Notice& notice);
    // How the last epoch was learnt: "report", "service-record", or "none".
    const std::string& how() const { return how_; }

    // The plugin's DataDetails: "LSAE", the epoch and the SM port GUID (big-endian).
    static std::optional<RoutingEpoch> parse_notice(const sa::Notice& notice);

private:
    void subscribe();
    void read();
    void schedule_read();

    Clock& clock_;
    transport::MadTransport& transport_;
    upstream::UpstreamClient& upstream_;
    RoutingEpochListener& listener_;
    RoutingEpochSourceConfig config_;
    Timer reread_timer_;
    std::uint64_t generation_ = 0;
    std::string how_ = "none";
};

} // namespace localsa::coherence
