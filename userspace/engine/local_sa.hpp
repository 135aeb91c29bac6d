// The local SA of one port: the dispatcher and every part it routes to, over any MadTransport.
// localsad runs one over libibumad; tests and the fleet simulator run it over other transports.
#pragma once

#include "engine/cache/path_cache.hpp"
#include "engine/clock.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/counters.hpp"
#include "engine/events/client_subscriptions.hpp"
#include "engine/events/master_subscriptions.hpp"
#include "engine/events/report_fanout.hpp"
#include "engine/handlers/class_port_info_service.hpp"
#include "engine/handlers/inform_info_service.hpp"
#include "engine/handlers/path_record_service.hpp"
#include "engine/log_limiter.hpp"
#include "engine/proxy/proxy.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/notice.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json_fwd.hpp>

#include <deque>
#include <functional>

namespace localsa {

struct LocalSaConfig {
    upstream::UpstreamConfig upstream;
    sa::PathRecordConfig path_record;
    std::size_t cache_max_entries = 1'000'000;
    // Event subscriptions clients of this port may hold at the local SA.
    std::size_t max_client_subscriptions = 1024;
    // How Reports are sent on to those clients (tries, per-try timeout, in flight at most).
    events::FanoutConfig fanout;
    bool answer_sminfo = false;
};

class LocalSa {
public:
    // Every part reads the time and arms its timers on `clock` (SteadyClock in localsad, a
    // ManualClock in tests and simulations); it must outlive the LocalSa.
    LocalSa(boost::asio::any_io_executor executor, Clock& clock, transport::MadTransport& transport,
            LocalSaConfig config);

    // Entry point for every MAD the transport receives.
    void dispatch(const transport::InboundMad& mad);
    // Learns what it needs from the master (ClassPortInfo).
    void start();
    // Applies new upstream limits and TTLs while running (the cache is kept). The cache size
    // and SMInfo answering are fixed at construction.
    void reconfigure(const LocalSaConfig& config);

    // Called for every Report from the master (after ReportResp went out and the Report went on
    // to the clients subscribed to it), with its TID; not for the master's resends.
    using ReportHandler = std::function<void(const sa::Notice&, std::uint64_t tid)>;
    void on_report(ReportHandler fn) { report_handler_ = std::move(fn); }
    // Where clients' subscriptions are held at the master; until set, clients' Sets are denied.
    void set_master_subscriptions(events::MasterSubscriptions* master) {
        inform_info_.set_master(master);
    }

    Clock& clock() { return clock_; }
    Counters& counters() { return counters_; }
    const Counters& counters() const { return counters_; }
    cache::PathCache& cache() { return cache_; }
    cache::PreloadTable& preload() { return preload_; }
    sa::PathRecordService& path_records() { return path_records_; }
    sa::ClassPortInfoService& class_port_info() { return class_port_info_; }
    upstream::UpstreamClient& upstream() { return upstream_; }
    const events::ClientSubscriptions& client_subscriptions() const { return client_subs_; }
    const events::ReportFanout& report_fanout() const { return fanout_; }
    transport::MadTransport& transport() { return transport_; }
    // What coherence::Coherence keeps coherent with the master.
    coherence::Parts coherence_parts();
    nlohmann::json stats() const;

private:
    void dispatch_sa(const transport::InboundMad& received);
    void dispatch_request(const transport::InboundMad& request);
    void dispatch_smp(const transport::InboundMad& mad);
    void handle_report(const transport::InboundMad& mad);
    // Why a request must not be served at all (nullptr: it may), see foreign_requests.
    const char* foreign_reason(const transport::InboundMad& mad) const;
    void drop(const transport::InboundMad& mad, const char* why);
    void reply(const transport::InboundMad& to, const std::vector<std::uint8_t>& bytes);

    Clock& clock_;
    transport::MadTransport& transport_;
    LocalSaConfig config_;
    Counters counters_;
    cache::PathCache cache_;
    cache::PreloadTable preload_;
    upstream::UpstreamClient upstream_;
    proxy::Proxy proxy_;
    sa::PathRecordService path_records_;
    sa::ClassPortInfoService class_port_info_;
    events::ClientSubscriptions client_subs_;
    events::ReportFanout fanout_;
    sa::InformInfoService inform_info_;
    ReportHandler report_handler_;
    std::deque<std::uint64_t> recent_report_tids_;
    LogLimiter report_log_{kEventLogBurst, kEventLogInterval}; // a trap storm: a few lines
    // A short request padded to 256 bytes (umad2sim hands over the sender's length).
    transport::InboundMad padded_;
    bool padded_busy_ = false;
};

} // namespace localsa
