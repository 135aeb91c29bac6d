#include "engine/netlink/local_service.hpp"

#include "ib/bytes.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace localsa::netlink {

namespace {

constexpr std::uint32_t kLocalQpn = 1; // the kernel's SA queries leave from QP1

// PathRecord offsets (sa-facts.md; the kernel's path_rec_table)
constexpr std::size_t kPrServiceId = 0, kPrDgid = 8, kPrSgid = 24, kPrTclass = 48,
                      kPrReversibleNumbPath = 49, kPrPkey = 50, kPrQosClassSl = 52;

} // namespace

std::uint32_t LocalServiceConfig::kernel_timeout_ms() const {
    const auto ms = (answer_budget + kernel_margin).count();
    return static_cast<std::uint32_t>(std::clamp<long long>(ms, kTimeoutMinMs, kTimeoutMaxMs));
}

std::vector<std::uint8_t> rebuild_query(const ResolveRequest& r, std::uint64_t tid) {
    mad::SaMad q;
    q.header.method = mad::method::kGet;
    q.header.attr_id = mad::attr::kPathRecord;
    q.header.tid = tid;
    auto pr = mad::MutableBytes{q.data};
    std::uint64_t mask = 0;
    if (r.service_id) {
        mask |= sa::pr_mask::kServiceId;
        mad::store_be64(pr, kPrServiceId, *r.service_id);
    }
    if (r.dgid) {
        mask |= sa::pr_mask::kDgid;
        std::copy(r.dgid->begin(), r.dgid->end(), pr.begin() + kPrDgid);
    }
    if (r.sgid) {
        mask |= sa::pr_mask::kSgid;
        std::copy(r.sgid->begin(), r.sgid->end(), pr.begin() + kPrSgid);
    }
    if (r.tclass) {
        mask |= sa::pr_mask::kTClass;
        pr[kPrTclass] = *r.tclass;
    }
    if (r.pkey) {
        mask |= sa::pr_mask::kPKey;
        mad::store_be16(pr, kPrPkey, *r.pkey);
    }
    if (r.qos_class) {
        mask |= sa::pr_mask::kQosClass;
        mad::store_be16(pr, kPrQosClassSl, static_cast<std::uint16_t>(*r.qos_class << 4));
    }
    // path_use ALL is what ib_sa sends for a query with Reversible set (rdma_cm's); every
    // consumer asks for one path (NumbPath 1), which a Get answers anyway.
    mask |= sa::pr_mask::kNumbPath;
    std::uint8_t reversible_numb_path = 1;
    if (r.path_use != PathUse::Unidirectional) {
        mask |= sa::pr_mask::kReversible;
        reversible_numb_path |= 0x80;
    }
    pr[kPrReversibleNumbPath] = reversible_numb_path;
    q.comp_mask = mask;
    return q.pack();
}

std::vector<PathRecordData> records_for_kernel(mad::Bytes response, PathUse use) {
    std::vector<PathRecordData> out;
    if (response.size() < mad::kSaHeaderSize ||
        response[mad::offset::kMgmtClass] != mad::mgmt_class::kSubnAdm ||
        mad::load_be16(response, mad::offset::kAttrId) != mad::attr::kPathRecord ||
        mad::load_be16(response, mad::offset::kStatus) != mad::status::kOk)
        return out;
    const auto records = sa::response_records(response, sa::PathRecord::kSize);
    const auto& bytes = records.bytes;
    for (std::size_t at = 0;
         at + kPathRecordSize <= bytes.size() && out.size() < kMaxRecordsPerReply;
         at += kPathRecordSize) {
        PathRecordData d;
        std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(at), kPathRecordSize,
                    d.record.begin());
        d.flags = path_flags(use, (d.record[kPrReversibleNumbPath] & 0x80) != 0);
        if (kernel_accepts(use, d.flags))
            out.push_back(d);
    }
    return out;
}

LocalService::LocalService(boost::asio::any_io_executor executor, Clock& clock,
                           transport::MadTransport& inner, LocalServiceConfig config)
    : clock_(clock), inner_(inner), config_(config), timer_(clock_, executor) {}

void LocalService::connect(SendToKernel to_kernel, Dispatch dispatch,
                           ServedElsewhere served_elsewhere, Counters& counters) {
    counters_ = &counters;
    to_kernel_ = std::move(to_kernel);
    dispatch_ = std::move(dispatch);
    served_elsewhere_ = std::move(served_elsewhere);
}

bool LocalService::to_kernel(Bytes message) {
    if (to_kernel_ && to_kernel_(message))
        return true;
    ++counters_->send_errors;
    return false;
}

bool LocalService::send_set_timeout() {
    const auto ms = config_.kernel_timeout_ms();
    const bool ok = to_kernel(encode_set_timeout(next_seq_++, ms));
    if (ok)
        spdlog::info("netlink: the kernel waits {} ms for localsad's path answers "
                     "(RDMA_NL_LS_OP_SET_TIMEOUT)",
                     ms);
    return ok;
}

void LocalService::on_message(const Message& message) {
    if (!dispatch_)
        return;
    if (message.sender != 0) {
        // Another member of the group multicasts its replies (ibacm sends each one to the
        // group as well as to the kernel): someone else answers the kernel's queries too.
        if (message.type == ls_type(LsOp::Resolve) && !(message.flags & flag::kRequest)) {
            if (counters_->nl_foreign_replies++ == 0)
                spdlog::warn("netlink: replies to the kernel's path queries from another "
                             "listener (netlink port {}, ibacm?): the kernel takes whichever "
                             "reply comes first; stop it or run localsad with --netlink off",
                             message.sender);
        }
        return;
    }
    if (message.type == kTypeError && message.payload.size() >= 4) {
        // A reply or SET_TIMEOUT the kernel refused (EPERM: no CAP_NET_ADMIN at send time).
        std::int32_t error = 0;
        std::memcpy(&error, message.payload.data(), sizeof error);
        if (error != 0) {
            ++counters_->send_errors;
            // A negative errno from the kernel; anything else is bytes to report, not negate.
            constexpr std::int32_t kMaxErrno = 4095;
            if (error < 0 && error >= -kMaxErrno)
                spdlog::warn("netlink: the kernel refused message {}: {}", message.seq,
                             std::strerror(-error));
            else
                spdlog::warn("netlink: the kernel refused message {}: error code {}", message.seq,
                             error);
        }
        return;
    }
    if (message.type != ls_type(LsOp::Resolve)) {
        // IP_RESOLVE (IP to GID, unused by ib_sa's path queries) and the like: not ours.
        return;
    }
    const auto decoded = decode_resolve(message);
    if (!decoded.request) {
        if (!(message.flags & flag::kRequest))
            return; // another listener's reply multicast back? never the kernel's
        ++counters_->nl_malformed;
        spdlog::warn("netlink: RESOLVE {} not understood ({}): the kernel asks the SA", message.seq,
                     decoded.error);
        reply_error(message.seq, decoded.error);
        return;
    }
    resolve(*decoded.request);
}

void LocalService::resolve(const ResolveRequest& request) {
    ++counters_->nl_resolves;
    const auto& port = inner_.port();
    if (request.device != port.ca || request.port != port.port) {
        if (served_elsewhere_ && served_elsewhere_(request.device, request.port)) {
            ++counters_->nl_other_port;
            return; // the local SA of that port answers it
        }
        reply_error(request.seq, "a port no local SA serves");
        return;
    }
    if (!port.active()) {
        reply_error(request.seq, "port not active");
        return;
    }
    if (!request.dgid) {
        // ib_sa sends DGID for every path query; without it the Get is not one localsad knows.
        reply_error(request.seq, "no DGID");
        return;
    }
    // The Get without its TID, and the use the records are for: RESOLVEs asking the same
    // wait for one answer (the local SA holds a bounded number of waiters per question).
    auto question = rebuild_query(request, 0);
    question.push_back(static_cast<std::uint8_t>(request.path_use));
    if (const auto q = questions_.find(question); q != questions_.end()) {
        auto& waiting = pending_.at(q->second);
        if (waiting.seqs.size() >= kMaxWaitingPerQuestion) {
            reply_error(request.seq, "too many RESOLVEs waiting for one path");
            return;
        }
        waiting.seqs.push_back(request.seq);
        ++waiting_;
        return;
    }
    const auto token = next_token_++;
    const auto deadline = clock_.now() + config_.answer_budget;
    questions_.emplace(question, token);
    pending_[token] = Pending{{request.seq}, request.path_use, deadline, std::move(question)};
    ++waiting_;
    deadlines_.emplace_back(deadline, token);
    arm_timer();
    transport::InboundMad in;
    in.bytes = rebuild_query(request, (std::uint64_t{kTidMarker} << 32) | token);
    in.from.lid = port.lid;
    in.from.qpn = kLocalQpn;
    in.from.qkey = mad::kQp1Qkey;
    dispatch_(in);
}

LocalService::Pending LocalService::take(std::unordered_map<std::uint32_t, Pending>::iterator it) {
    auto pending = std::move(it->second);
    pending_.erase(it);
    questions_.erase(pending.question);
    waiting_ -= pending.seqs.size();
    return pending;
}

bool LocalService::send(mad::Bytes mad, const transport::MadAddress& to,
                        std::chrono::milliseconds response_timeout) {
    // An answer (response bit) with the service's TID marker: not the local SA's own query to
    // the master, which keeps the requester's TID in its upper half. Not by the destination
    // LID: after a LID change the answer to a request made before it still comes back here.
    if (to.qpn == kLocalQpn && mad.size() >= mad::kSaHeaderSize &&
        (mad[mad::offset::kMethod] & mad::method::kResponseBit) &&
        (mad::tid_of(mad) >> 32) == kTidMarker) {
        answer(static_cast<std::uint32_t>(mad::tid_of(mad)), mad);
        return true;
    }
    return inner_.send(mad, to, response_timeout);
}

void LocalService::no_answer(const transport::MadAddress& to, std::uint64_t tid, const char* why) {
    if (to.qpn != kLocalQpn || (tid >> 32) != kTidMarker) {
        inner_.no_answer(to, tid, why);
        return;
    }
    const auto it = pending_.find(static_cast<std::uint32_t>(tid));
    if (it == pending_.end())
        return; // its error reply went at the deadline
    const auto request = take(it);
    counters_->nl_given_up += request.seqs.size();
    reply_error(request, why);
}

void LocalService::answer(std::uint32_t token, mad::Bytes response) {
    const auto it = pending_.find(token);
    if (it == pending_.end())
        return; // answered late: the error reply went at the deadline
    const auto request = take(it);
    const auto records = records_for_kernel(response, request.path_use);
    if (records.empty()) {
        // The master's NO_RECORDS or error, or nothing the kernel takes: the kernel asks the
        // SA, whose answer (status and all) is then the consumer's.
        reply_error(request, "no record the kernel takes");
        return;
    }
    for (const auto seq : request.seqs)
        if (to_kernel(encode_resolve_reply(seq, records)))
            ++counters_->nl_answered;
}

void LocalService::reply_error(const Pending& pending, const char* why) {
    for (const auto seq : pending.seqs)
        reply_error(seq, why);
}

void LocalService::reply_error(std::uint32_t seq, const char* why) {
    spdlog::debug("netlink: RESOLVE {} answered with an error ({}): the kernel asks the SA", seq,
                  why);
    if (to_kernel(encode_resolve_error(seq)))
        ++counters_->nl_errors;
}

void LocalService::arm_timer() {
    if (timer_armed_ || deadlines_.empty())
        return;
    timer_armed_ = true;
    timer_.expires_at(deadlines_.front().first);
    timer_.async_wait([this](auto ec) {
        timer_armed_ = false;
        if (!ec)
            on_timer();
    });
}

void LocalService::on_timer() {
    const auto now = clock_.now();
    while (!deadlines_.empty() && deadlines_.front().first <= now) {
        const auto token = deadlines_.front().second;
        deadlines_.pop_front();
        const auto it = pending_.find(token);
        if (it == pending_.end())
            continue;
        const auto request = take(it);
        counters_->nl_timeouts += request.seqs.size();
        reply_error(request, "no answer within the budget");
    }
    arm_timer();
}

} // namespace localsa::netlink
