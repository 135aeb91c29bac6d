// Building SA responses the way OpenSM builds them (osm_sa_respond / osm_sa_send_error), so that
// an answer from the local SA is byte for byte the master's answer to the same request.
#pragma once

#include "ib/bytes.hpp"

#include <cstdint>
#include <vector>

namespace localsa::sa {

// A successful answer: the request's SA header with the response method, SM_Key 0, the
// attribute offset (0 when there are no records), RMPP active for GetTableResp; then the records.
std::vector<std::uint8_t> make_records_response(mad::Bytes request, std::size_t record_size,
                                                mad::Bytes records);
// The same into `out`, whose capacity is reused: no allocation per answer on the hot path.
void make_records_response(std::vector<std::uint8_t>& out, mad::Bytes request,
                           std::size_t record_size, mad::Bytes records);

// An error answer: the whole request echoed with `status`, the response method and SM_Key 0;
// GetTable answers carry attribute offset 0.
std::vector<std::uint8_t> make_error_response(mad::Bytes request, std::uint16_t status);

} // namespace localsa::sa

namespace localsa::sa {

// The records of a response, using the RMPP payload length when the response came through RMPP
// (the data area may carry padding). `complete` is false when fewer bytes arrived than the RMPP
// payload length announces (a truncated transfer must not be cached).
struct ResponseRecords {
    std::vector<std::uint8_t> bytes;
    bool complete = true;
};
ResponseRecords response_records(mad::Bytes response, std::size_t record_size);

} // namespace localsa::sa
