#include "engine/local_sa.hpp"

#include "engine/send.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/response.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>

namespace localsa {

using namespace mad;

namespace {
std::uint8_t own_resp_time_value(const upstream::UpstreamConfig& c) {
    return sa::resp_time_value_for_ms(static_cast<unsigned>(c.patience().count()));
}

// A due refresh waits for the next 100 ms slice, then has the upstream budget to succeed.
sa::PathRecordConfig with_refresh_grace(sa::PathRecordConfig pr,
                                        const upstream::UpstreamConfig& c) {
    pr.refresh_grace = std::chrono::milliseconds{100} + c.patience();
    return pr;
}
} // namespace

LocalSa::LocalSa(boost::asio::any_io_executor executor, Clock& clock,
                 transport::MadTransport& transport, LocalSaConfig config)
    : clock_(clock), transport_(transport), config_(config), cache_(config.cache_max_entries),
      upstream_(executor, clock, transport, counters_, config.upstream),
      proxy_(upstream_, transport, counters_, config.upstream.try_timeout),
      path_records_(clock, cache_, preload_, upstream_, proxy_, transport, counters_,
                    with_refresh_grace(config.path_record, config.upstream)),
      class_port_info_(executor, clock, upstream_, proxy_, transport, counters_,
                       own_resp_time_value(config.upstream)),
      client_subs_(config.max_client_subscriptions),
      fanout_(executor, clock, transport, counters_, client_subs_, config.fanout),
      inform_info_(clock, transport, counters_, client_subs_, upstream_) {
    fanout_.on_outcome([this](const events::ClientSubscription& to, bool delivered) {
        inform_info_.on_delivery(to, delivered);
    });
    class_port_info_.on_change([this](const std::optional<sa::ClassPortInfo>& master) {
        path_records_.set_master_capabilities(master);
    });
}

void LocalSa::start() {
    class_port_info_.refresh();
}

void LocalSa::reconfigure(const LocalSaConfig& config) {
    config_.upstream = config.upstream;
    config_.path_record = config.path_record;
    upstream_.set_config(config.upstream);
    proxy_.set_try_timeout(config.upstream.try_timeout);
    path_records_.set_config(with_refresh_grace(config.path_record, config.upstream));
    class_port_info_.set_resp_time_value(own_resp_time_value(config.upstream));
}

std::size_t LocalSa::flush() {
    const auto n = cache_.size();
    cache_.clear();
    preload_.clear(); // its paths would otherwise be served again
    return n;
}

void LocalSa::drop(const transport::InboundMad& in, const char* why) {
    ++counters_.malformed_dropped;
    spdlog::debug("dropped MAD from LID {} ({} bytes): {}", in.from.lid, in.bytes.size(), why);
}

void LocalSa::reply(const transport::InboundMad& to, const std::vector<std::uint8_t>& bytes) {
    send_counted(transport_, counters_, bytes, to.from);
}

void LocalSa::dispatch(const transport::InboundMad& in) {
    if (in.status != 0) {
        // One of our sends came back: unanswered within its timeout (ETIMEDOUT; the query's
        // fate is the upstream timers' to count) or failed. The upstream timers deal with it.
        if (in.status == ETIMEDOUT)
            ++counters_.send_timeouts;
        else
            ++counters_.send_errors;
        return;
    }
    if (in.bytes.size() < kMadHeaderSize)
        return drop(in, "shorter than a MAD header");
    if (in.bytes[mad::offset::kBaseVersion] != kBaseVersion)
        return drop(in, "unknown base version");
    switch (in.bytes[mad::offset::kMgmtClass]) {
    case mgmt_class::kSubnAdm:
        return dispatch_sa(in);
    default:
        return drop(in, "not an SA class MAD");
    }
}

void LocalSa::dispatch_sa(const transport::InboundMad& received) {
    if (received.bytes.size() < kSaHeaderSize)
        return drop(received, "shorter than the SA header");
    const auto m = received.bytes[mad::offset::kMethod];
    if (m == method::kReportResp) {
        // Only our Reports to subscribed clients are answered so; the master is never sent one.
        if (!fanout_.handle_ack(received))
            ++counters_.stray_responses;
        return;
    }
    if (method::is_response(m)) {
        // Responses keep their length: it tells how many records a non-RMPP answer holds.
        if (!upstream_.handle_response(received))
            ++counters_.stray_responses;
        return;
    }
    // A request is one whole MAD on the wire, and ib_umad hands it over so (under ibsim,
    // transport::sim::SimQuirks pads what umad2sim hands over with its sender's length).
    if (received.bytes.size() < kMadSize)
        return drop(received, "a request shorter than a MAD");
    dispatch_request(received);
}

void LocalSa::dispatch_request(const transport::InboundMad& in) {
    const auto m = in.bytes[mad::offset::kMethod];
    if (const char* why = foreign_reason(in)) {
        if (m == method::kReport)
            ++counters_.foreign_reports;
        else
            ++counters_.foreign_requests;
        spdlog::debug("{} {} from LID {} refused: {}", method_name(m),
                      attr_name(load_be16(in.bytes, mad::offset::kAttrId)), in.from.lid, why);
        if (m != method::kReport)
            transport_.no_answer(in.from, tid_of(in.bytes), why);
        return;
    }
    if (in.bytes[mad::offset::kClassVersion] != kSaClassVersion) {
        ++counters_.bad_version;
        return reply(in, sa::make_error_response(in.bytes, status::kBadVersion));
    }
    if (!method::is_sa_request(m)) {
        ++counters_.unsupported_method;
        return reply(in, sa::make_error_response(in.bytes, status::kUnsupportedMethod));
    }
    if (RmppHeader::unpack(in.bytes).active() && m != method::kGetMulti) {
        // Only GetMulti requests are sent with RMPP; anything else is a confused sender.
        ++counters_.stray_rmpp;
        transport_.no_answer(in.from, tid_of(in.bytes), "RMPP on a single-MAD request");
        return drop(in, "RMPP on a single-MAD request");
    }
    if (m == method::kReport)
        return handle_report(in);
    const auto attr_id = load_be16(in.bytes, mad::offset::kAttrId);
    // A non-zero SM_Key is the master's to judge; OpenSM silently drops a wrong one, so nothing
    // is answered here for it (ClassPortInfo, InformInfo Get). PathRecord checks it itself, and
    // an InformInfo Set is never relayed (it would be localsad's port's own): InformInfoService
    // has the master judge the key first.
    if (load_be64(in.bytes, mad::offset::kSmKey) != 0 && attr_id != attr::kPathRecord &&
        !(attr_id == attr::kInformInfo && m == method::kSet))
        return proxy_.forward(in);
    switch (attr_id) {
    case attr::kPathRecord:
        return path_records_.handle(in);
    case attr::kClassPortInfo:
        return class_port_info_.handle(in);
    case attr::kInformInfo:
        if (inform_info_.handle(in))
            return;
        return proxy_.forward(in);
    default:
        return proxy_.forward(in);
    }
}

const char* LocalSa::foreign_reason(const transport::InboundMad& in) const {
    const auto& port = transport_.port();
    if (in.bytes[mad::offset::kMethod] == method::kReport) {
        if (port.sm_lid == 0)
            return "a Report while the port knows no master";
        return in.from.lid == port.sm_lid ? nullptr : "a Report not from the master";
    }
    // The master takes the requester of a relayed query to be this port: its answer (PathRecord,
    // NodeRecord, ... filtered by the PKeys the requester shares) would be this port's, not the
    // asker's, and an InformInfo would subscribe this port. Neither may reach another port. Its
    // kernel's sa_redirect falls back to the master when the query goes unanswered.
    if (!port.owns_lid(in.from.lid))
        return "the requester is another port";
    return nullptr;
}

void LocalSa::handle_report(const transport::InboundMad& in) {
    ++counters_.reports_received;
    // Acknowledge every Report, also those we do not use, or the master resends it.
    auto ack = in.bytes;
    ack[mad::offset::kMethod] = method::kReportResp;
    store_be16(ack, mad::offset::kStatus, 0);
    reply(in, ack);
    if (load_be16(in.bytes, mad::offset::kAttrId) != attr::kNotice)
        return;
    // The master resends a Report (same TID) until it sees our ReportResp.
    const auto tid = tid_of(in.bytes);
    if (std::find(recent_report_tids_.begin(), recent_report_tids_.end(), tid) !=
        recent_report_tids_.end()) {
        ++counters_.reports_duplicate;
        return;
    }
    recent_report_tids_.push_back(tid);
    if (recent_report_tids_.size() > 256)
        recent_report_tids_.pop_front();
    const auto notice = sa::Notice::unpack(Bytes{in.bytes}.subspan(kSaHeaderSize));
    if (const auto log = report_log_.admit(clock_.now()); log.log) {
        if (log.suppressed)
            spdlog::info("{} more Reports not logged (at most {} per {} s)", log.suppressed,
                         kEventLogBurst, kEventLogInterval.count());
        spdlog::info("Report: trap {} from LID {} (GID {})", notice.trap_number, notice.issuer_lid,
                     notice.subject_gid().str());
    }
    fanout_.deliver(in.bytes, notice);
    if (report_handler_)
        report_handler_(notice, tid);
}

coherence::Parts LocalSa::coherence_parts() {
    return {clock_,        transport_,
            counters_,     cache_,
            preload_,      upstream_,
            path_records_, class_port_info_,
            inform_info_,  [this](ReportHandler fn) { on_report(std::move(fn)); },
            nullptr};
}

nlohmann::json LocalSa::stats() const {
    nlohmann::json j = counters_;
    j["cache_entries"] = cache_.size();
    j["cache_idle_expired"] = cache_.idle_expired();
    j["preloaded_paths"] = preload_.size();
    j["pr_pending"] = path_records_.pending();
    j["upstream_outstanding"] = upstream_.outstanding();
    j["upstream_queued"] = upstream_.queued();
    j["client_subscriptions"] = client_subs_.size();
    j["reports_in_flight"] = fanout_.in_flight();
    const auto port = transport_.port();
    j["port"] = {{"ca", port.ca},         {"port", port.port},   {"lid", port.lid},
                 {"sm_lid", port.sm_lid}, {"state", port.state}, {"gid", port.gid.str()}};
    return j;
}

} // namespace localsa
