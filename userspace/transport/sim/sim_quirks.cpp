#include "transport/sim/sim_quirks.hpp"

#include "ib/constants.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace localsa::transport::sim {

using namespace mad;

namespace {
// SMInfo (IBA 14.2.5.13) in an SMP's data: GUID, SM_Key, ActCount, then Priority and SMState.
constexpr std::size_t kSmInfoGuid = 0;
constexpr std::size_t kSmInfoPriorityState = 20;
constexpr std::uint8_t kDirectionBit = 0x80; // directed route: D in the status field's top byte
} // namespace

bool umad2sim_loaded() {
    const char* preload = std::getenv("LD_PRELOAD");
    return preload && std::string_view(preload).find("umad2sim") != std::string_view::npos;
}

std::optional<std::vector<std::uint8_t>> answer_sminfo(Bytes smp, std::uint64_t port_guid) {
    if (smp.size() < kMadSize || smp[offset::kMethod] != method::kGet ||
        load_be16(smp, offset::kAttrId) != attr::kSmInfo)
        return std::nullopt;
    std::vector<std::uint8_t> out(smp.begin(), smp.begin() + kMadSize);
    out[offset::kMethod] = method::kGetResp;
    if (smp[offset::kMgmtClass] == mgmt_class::kSubnDirected)
        out[offset::kStatus] |= kDirectionBit; // the response travels the return path
    else
        store_be16(out, offset::kStatus, 0);
    auto data = MutableBytes{out}.subspan(kSmpDataOffset, 64);
    std::fill(data.begin(), data.end(), 0);
    store_be64(data, kSmInfoGuid, port_guid); // SM_Key 0, ActCount 0
    data[kSmInfoPriorityState] = 0x00;        // Priority 0, SMState NOTACTIVE
    return out;
}

void SimQuirks::operator()(const InboundMad& in) {
    const auto& b = in.bytes;
    if (in.status != 0 || b.size() <= offset::kMethod) {
        next_(in);
        return;
    }
    const auto mgmt = b[offset::kMgmtClass];
    if (mgmt == mgmt_class::kSubnLid || mgmt == mgmt_class::kSubnDirected) {
        if (auto resp = answer_sminfo(b, transport_.port().gid.guid())) {
            ++sminfo_answered_;
            transport_.send(*resp, in.from, std::chrono::milliseconds{0});
            return;
        }
        next_(in);
        return;
    }
    // Shorter than an SA header: the dispatcher drops it as it would from ib_umad. Responses
    // keep their length: it tells how many records a non-RMPP answer holds.
    if (mgmt != mgmt_class::kSubnAdm || b.size() >= kMadSize || b.size() < kSaHeaderSize ||
        method::is_response(b[offset::kMethod])) {
        next_(in);
        return;
    }
    ++requests_padded_;
    if (padded_busy_) {
        // Handed in again from within (a transport that answers back into us).
        auto padded = in;
        padded.bytes.resize(kMadSize, 0);
        next_(padded);
        return;
    }
    padded_.from = in.from;
    padded_.status = in.status;
    padded_.bytes.assign(b.begin(), b.end());
    padded_.bytes.resize(kMadSize, 0);
    padded_busy_ = true;
    struct Release {
        bool& busy;
        ~Release() { busy = false; }
    } release{padded_busy_};
    next_(padded_);
}

} // namespace localsa::transport::sim
