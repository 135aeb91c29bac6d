// SubnAdmGet(ClassPortInfo): answered locally with the master's capabilities and the local SA's
// own response time (a miss costs up to the whole upstream budget). Until the master's
// ClassPortInfo is known, requests are forwarded and the first answer is kept.
#pragma once

#include "engine/counters.hpp"
#include "engine/proxy/proxy.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/class_port_info.hpp"
#include "transport/transport.hpp"

#include <functional>
#include <optional>

namespace localsa::sa {

class ClassPortInfoService {
public:
    ClassPortInfoService(upstream::UpstreamClient& upstream, proxy::Proxy& proxy,
                         transport::MadTransport& transport, Counters& counters,
                         std::uint8_t resp_time_value)
        : upstream_(upstream), proxy_(proxy), transport_(transport), counters_(counters),
          resp_time_value_(resp_time_value) {}

    void set_resp_time_value(std::uint8_t value) { resp_time_value_ = value; }

    void handle(const transport::InboundMad& request);
    // Fetches the master's ClassPortInfo (at start and after an SM change).
    void refresh();
    void forget();
    const std::optional<ClassPortInfo>& master() const { return master_; }
    // Called whenever what is known of the master's ClassPortInfo changes (learned, forgotten).
    using Listener = std::function<void(const std::optional<ClassPortInfo>&)>;
    void on_change(Listener fn) { listener_ = std::move(fn); }

private:
    void learn(const std::vector<std::uint8_t>& response);

    upstream::UpstreamClient& upstream_;
    proxy::Proxy& proxy_;
    transport::MadTransport& transport_;
    Counters& counters_;
    std::uint8_t resp_time_value_;
    std::optional<ClassPortInfo> master_;
    Listener listener_;
};

} // namespace localsa::sa
