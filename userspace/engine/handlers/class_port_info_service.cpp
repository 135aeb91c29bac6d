#include "engine/handlers/class_port_info_service.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/response.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace localsa::sa {

using namespace mad;

void ClassPortInfoService::learn(const std::vector<std::uint8_t>& resp) {
    if (resp.size() < kSaHeaderSize + ClassPortInfo::kSize ||
        load_be16(resp, mad::offset::kStatus) != 0 ||
        load_be16(resp, mad::offset::kAttrId) != attr::kClassPortInfo)
        return;
    master_ = ClassPortInfo::unpack(Bytes{resp}.subspan(kSaHeaderSize));
    spdlog::info("master SA ClassPortInfo: CapabilityMask 0x{:04x} CapabilityMask2 0x{:07x} "
                 "RespTimeValue {}",
                 master_->capability_mask, master_->capability_mask2, master_->resp_time_value);
    if (listener_)
        listener_(master_);
}

void ClassPortInfoService::forget() {
    ++attempt_;
    retry_timer_.cancel();
    next_retry_ = kFirstRetry;
    master_.reset();
    if (listener_)
        listener_(master_);
}

void ClassPortInfoService::refresh() {
    ++attempt_;
    retry_timer_.cancel();
    next_retry_ = kFirstRetry;
    ask(attempt_);
}

void ClassPortInfoService::ask(std::uint64_t attempt) {
    SaMad q;
    q.header.method = method::kGet;
    q.header.attr_id = attr::kClassPortInfo;
    upstream_.submit(q.pack(), [this, attempt](upstream::Reply r) {
        if (r.outcome == upstream::Outcome::Response)
            learn(r.response);
        if (!master_ && attempt == attempt_)
            retry_later(attempt);
    });
}

void ClassPortInfoService::retry_later(std::uint64_t attempt) {
    spdlog::debug("master SA ClassPortInfo not learned: asking again in {} ms",
                  next_retry_.count());
    retry_timer_.expires_after(next_retry_);
    next_retry_ = std::min(next_retry_ * 2, kMaxRetry);
    retry_timer_.async_wait([this, attempt](const boost::system::error_code& ec) {
        if (!ec && attempt == attempt_ && !master_)
            ask(attempt);
    });
}

void ClassPortInfoService::handle(const transport::InboundMad& in) {
    const auto m = in.bytes[mad::offset::kMethod];
    if (m != method::kGet || !master_) {
        // Set, or nothing known yet: the master answers (and teaches us its capabilities).
        proxy::Proxy::Observer learn_from_answer;
        if (m == method::kGet)
            learn_from_answer = [this](const std::vector<std::uint8_t>& r) { learn(r); };
        proxy_.forward(in, std::move(learn_from_answer));
        return;
    }
    ++counters_.cpi_answered;
    auto cpi = *master_;
    cpi.resp_time_value = resp_time_value_;
    std::array<std::uint8_t, ClassPortInfo::kSize> rec{};
    cpi.pack(rec);
    // As OpenSM's cpi_rcv_respond: the request's header (attribute offset included) answered.
    std::vector<std::uint8_t> out(kMadSize);
    std::copy_n(in.bytes.begin(), kSaHeaderSize, out.begin());
    out[mad::offset::kMethod] = method::kGetResp;
    store_be64(out, mad::offset::kSmKey, 0);
    std::copy(rec.begin(), rec.end(), out.begin() + kSaHeaderSize);
    transport_.send(out, in.from, std::chrono::milliseconds{0});
}

} // namespace localsa::sa
