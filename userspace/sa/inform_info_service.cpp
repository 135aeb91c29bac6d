#include "sa/inform_info_service.hpp"

#include "mad/constants.hpp"
#include "sa/inform_info.hpp"
#include "sa/response.hpp"

#include <spdlog/spdlog.h>

namespace localsa::sa {

bool InformInfoService::handle(const transport::InboundMad& in) {
    if (in.bytes[3] != mad::method::kSet)
        return false;
    ++counters_.inform_denied;
    const auto info = InformInfo::unpack(mad::Bytes{in.bytes}.subspan(mad::kSaHeaderSize));
    spdlog::info("InformInfo Set ({} trap {}) from LID {} QPN {} denied: Reports to this port "
                 "reach localsad only",
                 info.subscribe ? "subscribe" : "unsubscribe", info.trap_number, in.from.lid,
                 in.from.qpn);
    if (!transport_.send(make_error_response(in.bytes, mad::status::kSaDenied), in.from,
                         std::chrono::milliseconds{0}))
        ++counters_.send_errors;
    return true;
}

} // namespace localsa::sa
