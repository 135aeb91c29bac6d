// SubnAdmGet(ClassPortInfo): answered locally with the master's capabilities and the local SA's
// own response time (a miss costs up to the whole upstream budget). Until the master's
// ClassPortInfo is known, requests are forwarded and the first answer is kept.
#pragma once

#include "engine/clock.hpp"
#include "engine/counters.hpp"
#include "engine/proxy/proxy.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/class_port_info.hpp"
#include "transport/transport.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

namespace localsa::sa {

class ClassPortInfoService {
public:
    // An unlearned ClassPortInfo (lost, ignored during the master's first sweep, BUSY) is asked
    // again after kFirstRetry, doubling up to kMaxRetry, until learned or forgotten.
    static constexpr std::chrono::milliseconds kFirstRetry{1000};
    static constexpr std::chrono::milliseconds kMaxRetry{60000};

    ClassPortInfoService(boost::asio::any_io_executor executor, Clock& clock,
                         upstream::UpstreamClient& upstream, proxy::Proxy& proxy,
                         transport::MadTransport& transport, Counters& counters,
                         std::uint8_t resp_time_value)
        : retry_timer_(clock, std::move(executor)), upstream_(upstream), proxy_(proxy),
          transport_(transport), counters_(counters), resp_time_value_(resp_time_value) {}

    void set_resp_time_value(std::uint8_t value) { resp_time_value_ = value; }

    void handle(const transport::InboundMad& request);
    // Fetches the master's ClassPortInfo (at start and after an SM change), again and again with
    // back-off until it is learned.
    void refresh();
    void forget();
    const std::optional<ClassPortInfo>& master() const { return master_; }
    // Called whenever what is known of the master's ClassPortInfo changes (learned, forgotten).
    using Listener = std::function<void(const std::optional<ClassPortInfo>&)>;
    void on_change(Listener fn) { listener_ = std::move(fn); }

private:
    void learn(const std::vector<std::uint8_t>& response);
    void ask(std::uint64_t attempt);
    void retry_later(std::uint64_t attempt);

    Timer retry_timer_;
    std::chrono::milliseconds next_retry_ = kFirstRetry;
    std::uint64_t attempt_ = 0; // a refresh or forget starts over; older answers only teach

    upstream::UpstreamClient& upstream_;
    proxy::Proxy& proxy_;
    transport::MadTransport& transport_;
    Counters& counters_;
    std::uint8_t resp_time_value_;
    std::optional<ClassPortInfo> master_;
    Listener listener_;
};

} // namespace localsa::sa
