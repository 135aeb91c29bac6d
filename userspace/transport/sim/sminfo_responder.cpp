#include "transport/sim/sminfo_responder.hpp"

#include "ib/constants.hpp"

#include <algorithm>

namespace localsa {

using namespace mad;

std::optional<std::vector<std::uint8_t>> answer_sminfo(Bytes smp, std::uint64_t port_guid) {
    if (smp.size() < kMadSize || smp[3] != method::kGet || load_be16(smp, 16) != attr::kSmInfo)
        return std::nullopt;
    std::vector<std::uint8_t> out(smp.begin(), smp.begin() + kMadSize);
    out[3] = method::kGetResp;
    if (smp[1] == mgmt_class::kSubnDirected)
        out[4] |= 0x80; // D bit: the response travels the return path
    else
        store_be16(out, 4, 0);
    auto data = MutableBytes{out}.subspan(kSmpDataOffset, 64);
    std::fill(data.begin(), data.end(), 0);
    store_be64(data, 0, port_guid); // GUID; SM_Key 0, ActCount 0
    data[20] = 0x00;                // Priority 0, SMState NOTACTIVE
    return out;
}

} // namespace localsa
