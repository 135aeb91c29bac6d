#include "engine/proxy/proxy.hpp"

#include "engine/send.hpp"
#include "ib/mad.hpp"

#include <spdlog/spdlog.h>

namespace localsa::proxy {

std::vector<std::uint8_t> relay_response(std::vector<std::uint8_t> response,
                                         std::uint64_t requester_tid) {
    mad::set_tid(response, requester_tid);
    return response;
}

void Proxy::forward(const transport::InboundMad& request, Observer observe) {
    ++counters_.proxied_requests;
    const auto tid = mad::tid_of(request.bytes);
    const auto from = request.from;
    // One try: the requester retries on its own schedule (a new MAD each time, relayed again),
    // so localsad's retries would multiply what reaches the master, and what the master drops
    // silently (a Set it ignores, a wrong SM_Key) would reach it three times per try of the
    // requester. The one try waits the whole budget, so a slow answer is still relayed.
    upstream::SubmitOptions options;
    options.single_try = true;
    const auto m = request.bytes[mad::offset::kMethod];
    const bool table = m == mad::method::kGetTable || m == mad::method::kGetTraceTable ||
                       m == mad::method::kGetMulti;
    const auto attr = mad::load_be16(request.bytes, mad::offset::kAttrId);
    if (table) {
        // A table's whole RMPP transfer must fit the try: sized by this attribute's last table.
        const auto known = table_bytes_.find(attr);
        options.try_timeout = upstream::table_try_timeout(
            try_timeout_,
            known != table_bytes_.end() ? known->second : upstream::kUnknownTableBytes);
    }
    upstream_.submit(
        request.bytes,
        [this, tid, from, table, attr, observe = std::move(observe)](upstream::Reply reply) {
            if (table && reply.outcome == upstream::Outcome::Response &&
                reply.response.size() > mad::kSaHeaderSize)
                table_bytes_[attr] = reply.response.size() - mad::kSaHeaderSize;
            if (reply.outcome != upstream::Outcome::Response) {
                // No answer from the master: the requester gets none either and
                // retries on its own schedule, exactly as if it had asked the master
                // directly (the transport tells one that would wait out a timeout instead).
                transport_.no_answer(from, tid, upstream::outcome_reason(reply.outcome));
                return;
            }
            ++counters_.proxied_responses;
            if (observe)
                observe(reply.response);
            send_counted(transport_, counters_, relay_response(std::move(reply.response), tid),
                         from);
        },
        options);
}

} // namespace localsa::proxy
