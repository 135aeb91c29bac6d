#include "engine/coherence/routing_epoch_source.hpp"

#include "ib/constants.hpp"
#include "ib/inform_info.hpp"
#include "ib/mad.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace localsa::coherence {

namespace {
// ServiceRecord (IBA 15.2.5.14): ServiceID at 0, ServiceData64 at 160; ServiceID is
// component mask bit 0.
constexpr std::size_t kSrData64 = 160;
constexpr std::uint64_t kSrServiceIdMask = 1;
constexpr std::size_t kSaData = 56; // the record in an SA MAD
} // namespace

RoutingEpochSource::RoutingEpochSource(boost::asio::any_io_executor executor, Clock& clock,
                                       transport::MadTransport& transport,
                                       upstream::UpstreamClient& upstream,
                                       RoutingEpochListener& listener,
                                       RoutingEpochSourceConfig config)
    : clock_(clock), transport_(transport), upstream_(upstream), listener_(listener),
      config_(config), reread_timer_(clock, executor) {}

void RoutingEpochSource::start() {
    if (!config_.enabled)
        return;
    subscribe();
    read();
}

void RoutingEpochSource::stop() {
    ++generation_;
    reread_timer_.cancel();
}

void RoutingEpochSource::reset() {
    stop();
    how_ = "none";
}

void RoutingEpochSource::subscribe() {
    // A vendor trap: DeviceID selects it; every LID, type and vendor.
    mad::SaMad set;
    set.header.method = mad::method::kSet;
    set.header.attr_id = mad::attr::kInformInfo;
    sa::InformInfo info;
    info.lid_range_begin = 0xffff;
    info.is_generic = 0;
    info.subscribe = 1;
    info.type = 0xffff;
    info.trap_number = kEpochDeviceId;
    info.qpn = 1;
    info.resp_time_value = 18;
    info.producer_type = 0xffffff;
    info.pack(set.data);
    upstream::SubmitOptions options;
    options.priority = upstream::Priority::Background;
    upstream_.submit(
        set.pack(),
        [](upstream::Reply r) {
            // Without it the periodic read still finds a change, only later.
            if (r.outcome != upstream::Outcome::Response ||
                mad::load_be16(r.response, mad::offset::kStatus) != 0)
                spdlog::info("routing epoch: Report subscription not confirmed");
        },
        options);
}

void RoutingEpochSource::read() {
    mad::SaMad q;
    q.header.method = mad::method::kGet;
    q.header.attr_id = mad::attr::kServiceRecord;
    q.comp_mask = kSrServiceIdMask;
    mad::store_be64(q.data, 0, kEpochServiceId);
    upstream::SubmitOptions options;
    options.priority = upstream::Priority::Background;
    upstream_.submit(
        q.pack(),
        [this, generation = generation_](upstream::Reply r) {
            if (generation != generation_)
                return;
            if (r.outcome != upstream::Outcome::Response) {
                // The master did not answer: nothing is known either way; the TTL rules hold.
                listener_.on_routing_epoch_lost("the epoch's ServiceRecord unanswered");
                how_ = "none";
            } else if (const auto status = mad::load_be16(r.response, mad::offset::kStatus);
                       status != 0 || r.response.size() < kSaData + kSrData64 + 16) {
                listener_.on_routing_epoch_lost("no routing epoch at the master");
                how_ = "none";
            } else {
                RoutingEpoch e;
                e.value = mad::load_be64(r.response, kSaData + kSrData64);
                e.sm_port_guid = mad::load_be64(r.response, kSaData + kSrData64 + 8);
                how_ = "service-record";
                listener_.on_routing_epoch(e);
            }
            schedule_read();
        },
        options);
}

void RoutingEpochSource::schedule_read() {
    if (config_.reread.count() <= 0)
        return;
    reread_timer_.expires_after(config_.reread);
    reread_timer_.async_wait([this, generation = generation_](auto ec) {
        if (!ec && generation == generation_)
            read();
    });
}

std::optional<RoutingEpoch> RoutingEpochSource::parse_notice(const sa::Notice& n) {
    if (n.is_generic || n.trap_number != kEpochDeviceId)
        return std::nullopt;
    const auto& d = n.data_details;
    if (!std::equal(d.begin(), d.begin() + 4, "LSAE"))
        return std::nullopt;
    RoutingEpoch e;
    for (int i = 0; i < 8; ++i) {
        e.value = e.value << 8 | d[4 + i];
        e.sm_port_guid = e.sm_port_guid << 8 | d[12 + i];
    }
    return e;
}

bool RoutingEpochSource::on_report(const sa::Notice& notice) {
    const auto e = parse_notice(notice);
    if (!e)
        return false;
    if (config_.enabled) {
        how_ = "report";
        listener_.on_routing_epoch(*e);
    }
    return true;
}

} // namespace localsa::coherence
