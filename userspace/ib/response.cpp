#include "ib/response.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"

#include <algorithm>

namespace localsa::sa {

using namespace mad;

namespace {

std::uint8_t response_method(std::uint8_t request_method) {
    // A Set is answered with GetResp (IBA 15.4.1).
    const auto m = request_method == method::kSet ? method::kGet : request_method;
    return m | method::kResponseBit;
}

} // namespace

namespace {

// A GetTable answer is an RMPP payload of exactly the SA header and its records, as OpenSM
// sends it (56 + n x 64 bytes): padded to a whole MAD, the requester's RMPP layer would deliver
// the padding as all-zero records. Any other answer is one 256-byte MAD.
std::size_t records_response_size(Bytes request, Bytes records) {
    if (request.size() > 3 && request[3] == method::kGetTable)
        return kSaHeaderSize + records.size();
    return std::max(kMadSize, kSaHeaderSize + records.size());
}

// Writes every byte of `out` (records_response_size(request, records) bytes): no zeroing
// beforehand.
void encode_records_response(MutableBytes out, Bytes request, std::size_t record_size,
                             Bytes records) {
    const auto header = std::min(request.size(), kSaHeaderSize);
    std::copy_n(request.begin(), header, out.begin());
    std::fill(out.begin() + header, out.begin() + kSaHeaderSize, 0);
    out[3] = response_method(request[3]);
    store_be64(out, 36, 0);
    store_be16(out, 44, records.empty() ? 0 : static_cast<std::uint16_t>(record_size / 8));
    if (out[3] == method::kGetTableResp) {
        // Only the active flag, as OpenSM: the MAD layer's RMPP fills in the rest per segment.
        auto r = RmppHeader::unpack(out);
        r.flags = rmpp::kFlagActive;
        r.pack(out);
    }
    std::copy(records.begin(), records.end(), out.begin() + kSaHeaderSize);
    std::fill(out.begin() + kSaHeaderSize + records.size(), out.end(), 0);
}

} // namespace

void make_records_response(std::vector<std::uint8_t>& out, Bytes request, std::size_t record_size,
                           Bytes records) {
    out.resize(records_response_size(request, records));
    encode_records_response(out, request, record_size, records);
}

std::vector<std::uint8_t> make_records_response(Bytes request, std::size_t record_size,
                                                Bytes records) {
    std::vector<std::uint8_t> out(records_response_size(request, records));
    encode_records_response(out, request, record_size, records);
    return out;
}

std::vector<std::uint8_t> make_error_response(Bytes request, std::uint16_t status) {
    std::vector<std::uint8_t> out(kMadSize);
    std::copy_n(request.begin(), std::min(request.size(), kMadSize), out.begin());
    store_be16(out, 4, status);
    if (request[3] == method::kGetTable)
        store_be16(out, 44, 0);
    out[3] = response_method(request[3]);
    store_be64(out, 36, 0);
    if (load_be16(out, 16) == attr::kMultiPathRecord)
        store_be16(out, 16, attr::kPathRecord);
    return out;
}

} // namespace localsa::sa

namespace localsa::sa {

ResponseRecords response_records(Bytes response, std::size_t record_size) {
    ResponseRecords out;
    if (response.size() < kSaHeaderSize || record_size == 0)
        return out;
    const auto offset_units = load_be16(response, 44);
    if (offset_units == 0)
        return out;
    const std::size_t available = response.size() - kSaHeaderSize;
    std::size_t wanted = available;
    const auto rmpp = RmppHeader::unpack(response);
    constexpr std::size_t kSaHeaderAfterRmpp = kSaHeaderSize - kRmppHeaderOffset - 12;
    if (rmpp.active() && rmpp.paylen_newwin >= kSaHeaderAfterRmpp) {
        // The first segment's PayloadLength counts the SA header once per segment.
        constexpr std::size_t kSegmentPayload = kMadSize - kRmppHeaderOffset - 12; // 220
        const std::size_t segments = (rmpp.paylen_newwin + kSegmentPayload - 1) / kSegmentPayload;
        wanted = rmpp.paylen_newwin - segments * kSaHeaderAfterRmpp;
        if (wanted > available)
            out.complete = false;
    } else if (response[3] == method::kGetResp) {
        wanted = record_size; // a Get answers exactly one record
    }
    const std::size_t n = std::min(wanted, available) / record_size;
    out.bytes.assign(response.begin() + kSaHeaderSize,
                     response.begin() + kSaHeaderSize + n * record_size);
    return out;
}

} // namespace localsa::sa
