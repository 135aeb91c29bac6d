// libFuzzer target: the MAD/RMPP/SA header codec, every record type, and the SA response builders
// on arbitrary bytes. Beyond "no crash, no sanitizer report" it checks each function's contract:
// unpack/pack round trips (byte for byte but for the bits a record type declares reserved),
// masked records constrained by their mask, responses that keep the request's TID and clear the
// SM_Key, record extraction that stays inside the response.
#include "fuzz_check.hpp"

#include "engine/cache/path_cache.hpp"
#include "engine/handlers/path_record_service.hpp"
#include "ib/class_port_info.hpp"
#include "ib/constants.hpp"
#include "ib/gid.hpp"
#include "ib/inform_info.hpp"
#include "ib/mad.hpp"
#include "ib/mc_member_record.hpp"
#include "ib/notice.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"
#include "transport/sim/sim_quirks.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace localsa;
using namespace localsa::mad;

namespace {

bool equal_bytes(Bytes a, Bytes b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// unpack(x).pack() == x with the reserved bits the type does not keep cleared, and unpacking the
// packed bytes gives the same value.
template <typename Record, std::size_t N>
void record_round_trip(Bytes in, const std::array<std::pair<std::size_t, std::uint8_t>, N>& kept) {
    if (in.size() < Record::kSize)
        return;
    const auto rec = Record::unpack(in.first(Record::kSize));
    std::array<std::uint8_t, Record::kSize> packed{};
    std::fill(packed.begin(), packed.end(), 0xa5); // pack must write every byte
    rec.pack(packed);
    std::array<std::uint8_t, Record::kSize> expected{};
    std::copy_n(in.begin(), Record::kSize, expected.begin());
    for (const auto& [offset, mask] : kept)
        expected[offset] &= mask;
    FUZZ_CHECK(packed == expected);
    FUZZ_CHECK(Record::unpack(packed) == rec);
}

void fuzz_sa_mad(Bytes in) {
    auto m = SaMad::unpack(in);
    if (in.size() < kSaHeaderSize) {
        FUZZ_CHECK(!m);
        return;
    }
    FUZZ_CHECK(m.has_value());
    const auto packed = m->pack();
    FUZZ_CHECK(packed.size() == std::max(kMadSize, in.size()));
    FUZZ_CHECK(std::equal(in.begin(), in.end(), packed.begin()));
    FUZZ_CHECK(
        std::all_of(packed.begin() + in.size(), packed.end(), [](auto b) { return b == 0; }));
    const auto again = SaMad::unpack(packed);
    FUZZ_CHECK(again && again->header == m->header && again->rmpp == m->rmpp &&
               again->sm_key == m->sm_key && again->comp_mask == m->comp_mask);
    FUZZ_CHECK(tid_of(in) == m->header.tid);

    MadHeader h = MadHeader::unpack(in);
    std::array<std::uint8_t, kMadHeaderSize> hb{};
    h.pack(hb);
    FUZZ_CHECK(equal_bytes(hb, in.first(kMadHeaderSize)));
    std::array<std::uint8_t, kSaHeaderSize> rb{};
    m->rmpp.pack(rb);
    FUZZ_CHECK(
        equal_bytes(Bytes{rb}.subspan(kRmppHeaderOffset, 12), in.subspan(kRmppHeaderOffset, 12)));

    std::size_t total = 0;
    for (auto r : m->records()) {
        FUZZ_CHECK(r.size() == std::size_t{m->attr_offset} * 8);
        FUZZ_CHECK(r.data() >= m->data.data() &&
                   r.data() + r.size() <= m->data.data() + m->data.size());
        total += r.size();
    }
    FUZZ_CHECK(total <= m->data.size());

    // Names never fail, whatever the value.
    FUZZ_CHECK(!method_name(m->header.method).empty());
    FUZZ_CHECK(!attr_name(m->header.attr_id).empty());
    FUZZ_CHECK(!status_name(m->header.status).empty());

    // set_tid touches the TID only.
    auto copy = std::vector<std::uint8_t>(in.begin(), in.end());
    set_tid(copy, ~m->header.tid);
    FUZZ_CHECK(tid_of(copy) == ~m->header.tid);
    FUZZ_CHECK(std::equal(copy.begin(), copy.begin() + 8, in.begin()));
    FUZZ_CHECK(std::equal(copy.begin() + 16, copy.end(), in.begin() + 16));
}

void fuzz_records(Bytes in) {
    // (byte, bits kept): reserved bits a record type does not carry.
    record_round_trip<sa::PathRecord>(
        in, std::array<std::pair<std::size_t, std::uint8_t>, 1>{{{44, 0x8f}}});
    record_round_trip<sa::ClassPortInfo>(
        in, std::array<std::pair<std::size_t, std::uint8_t>, 1>{{{32, 0x00}}});
    record_round_trip<sa::InformInfo>(
        in, std::array<std::pair<std::size_t, std::uint8_t>, 2>{{{31, 0x1f}, {32, 0x00}}});
    record_round_trip<sa::McMemberRecord>(in, std::array<std::pair<std::size_t, std::uint8_t>, 3>{
                                                  {{49, 0x80}, {50, 0x00}, {51, 0x00}}});
    record_round_trip<sa::Notice>(in, std::array<std::pair<std::size_t, std::uint8_t>, 0>{});

    if (in.size() >= sa::Notice::kSize) {
        const auto n = sa::Notice::unpack(in);
        FUZZ_CHECK(equal_bytes(n.subject_gid().raw, in.subspan(16, 16)));
    }
    if (in.size() >= 16) {
        sa::Gid g;
        std::copy_n(in.begin(), 16, g.raw.begin());
        const auto parsed = sa::Gid::parse(g.str());
        FUZZ_CHECK(parsed && *parsed == g);
        FUZZ_CHECK(sa::Gid::from_parts(g.prefix(), g.guid()) == g);
        FUZZ_CHECK(g.is_zero() ==
                   std::all_of(g.raw.begin(), g.raw.end(), [](auto b) { return b == 0; }));
    }
    // Text that is not a GID is refused, never a crash.
    const std::string_view text{reinterpret_cast<const char*>(in.data()),
                                std::min<std::size_t>(in.size(), 64)};
    if (auto g = sa::Gid::parse(text))
        FUZZ_CHECK(sa::Gid::parse(g->str()) == g);
}

void fuzz_masked(Bytes in) {
    if (in.size() < 8 + sa::PathRecord::kSize)
        return;
    const auto mask = load_be64(in, 0);
    const auto record = in.subspan(8, sa::PathRecord::kSize);
    const auto masked = sa::masked_path_record(record, mask);
    // Only bits of the record, and only what the mask constrains (idempotent).
    for (std::size_t i = 0; i < masked.size(); ++i)
        FUZZ_CHECK((masked[i] & ~record[i]) == 0);
    FUZZ_CHECK(sa::masked_path_record(masked, mask) == masked);
    // A field outside the mask does not change the key.
    const auto defined = sa::masked_path_record(record, sa::pr_mask::kDefined);
    FUZZ_CHECK(sa::masked_path_record(defined, mask) == masked);
    // Every defined field kept: the record but for its reserved bits.
    auto expected = std::array<std::uint8_t, sa::PathRecord::kSize>{};
    std::copy(record.begin(), record.end(), expected.begin());
    expected[44] &= 0x8f;
    std::fill(expected.begin() + 58, expected.end(), 0);
    FUZZ_CHECK(defined == expected);
    FUZZ_CHECK(sa::masked_path_record(record, 0) == (std::array<std::uint8_t, 64>{}));

    const auto key = cache::PathQueryKey::from_request(in[0], mask, record);
    FUZZ_CHECK(key.masked == masked);
    const auto same = cache::PathQueryKey::from_request(in[0], mask, masked);
    FUZZ_CHECK(same == key && cache::PathQueryKeyHash{}(same) == cache::PathQueryKeyHash{}(key));

    cache::PathAnswer answer;
    answer.records.assign(in.begin() + 8, in.end());
    sa::Gid g;
    std::copy_n(record.begin() + 8, 16, g.raw.begin()); // the DGID of the first record
    FUZZ_CHECK(cache::answer_involves(key, answer, g));
}

void fuzz_response_records(Bytes in) {
    if (in.empty())
        return;
    const std::size_t record_size = in[0];
    const auto response = in.subspan(1);
    const auto out = sa::response_records(response, record_size);
    if (record_size == 0 || response.size() < kSaHeaderSize) {
        FUZZ_CHECK(out.bytes.empty());
        return;
    }
    const auto data = response.subspan(kSaHeaderSize);
    FUZZ_CHECK(out.bytes.size() % record_size == 0);
    FUZZ_CHECK(out.bytes.size() <= data.size());
    FUZZ_CHECK(std::equal(out.bytes.begin(), out.bytes.end(), data.begin()));
    if (load_be16(response, 44) == 0)
        FUZZ_CHECK(out.bytes.empty());
    const auto rmpp = RmppHeader::unpack(response);
    if (!rmpp.active()) {
        FUZZ_CHECK(out.complete);
        if (response[3] == method::kGetResp)
            FUZZ_CHECK(out.bytes.size() <= record_size);
    }
}

void check_response_header(Bytes request, const std::vector<std::uint8_t>& out) {
    // A whole MAD, except a GetTable answer: OpenSM sends its 56 + n x 64 bytes through RMPP.
    FUZZ_CHECK(out.size() >= (request[3] == method::kGetTable ? kSaHeaderSize : kMadSize));
    FUZZ_CHECK(method::is_response(out[3]));
    FUZZ_CHECK(load_be64(out, 36) == 0); // the SM_Key never goes back
    if (request.size() >= 16)
        FUZZ_CHECK(tid_of(out) == tid_of(request));
    const auto n = std::min<std::size_t>(request.size(), 3);
    FUZZ_CHECK(std::equal(request.begin(), request.begin() + n, out.begin()));
}

void fuzz_responses(Bytes in) {
    // make_*_response index the request's method byte: callers hand over at least a MAD header.
    if (in.size() < 4)
        return;
    const auto status = load_be16(in, 0);
    const std::size_t record_size = std::size_t{in[2]} * 8;
    const std::size_t split = std::min<std::size_t>(in.size(), 4 + in[3]);
    const auto records = in.subspan(4, split - 4);
    const auto request = in.subspan(split);

    if (request.size() >= 4) {
        const auto err = sa::make_error_response(request, status);
        check_response_header(request, err);
        FUZZ_CHECK(err.size() == kMadSize);
        FUZZ_CHECK(load_be16(err, 4) == status);
        if (request[3] == method::kGetTable)
            FUZZ_CHECK(load_be16(err, 44) == 0);

        const auto ok = sa::make_records_response(request, record_size, records);
        check_response_header(request, ok);
        FUZZ_CHECK(ok.size() == (request[3] == method::kGetTable
                                     ? kSaHeaderSize + records.size()
                                     : std::max(kMadSize, kSaHeaderSize + records.size())));
        FUZZ_CHECK(load_be16(ok, 44) ==
                   (records.empty() ? 0 : static_cast<std::uint16_t>(record_size / 8)));
        FUZZ_CHECK(std::equal(records.begin(), records.end(), ok.begin() + kSaHeaderSize));
        if (ok[3] == method::kGetTableResp)
            FUZZ_CHECK(RmppHeader::unpack(ok).active());

        // The SMInfo responder: an answer only to a whole SMInfo Get, with its TID.
        if (auto smi = transport::sim::answer_sminfo(request, 0x0002c90300000001ULL)) {
            FUZZ_CHECK(request.size() >= kMadSize);
            FUZZ_CHECK(smi->size() == kMadSize);
            FUZZ_CHECK((*smi)[3] == method::kGetResp);
            FUZZ_CHECK(tid_of(*smi) == tid_of(request));
            FUZZ_CHECK(load_be64(*smi, kSmpDataOffset) == 0x0002c90300000001ULL);
        }
    }
    // OpenSM's local PathRecord checks, on a whole MAD as the service sees it.
    std::vector<std::uint8_t> mad(kMadSize);
    std::copy_n(request.begin(), std::min(request.size(), kMadSize), mad.begin());
    const auto st = sa::validate_path_request(mad);
    FUZZ_CHECK(st == status::kOk || st == status::kSaReqInvalid ||
               st == status::kSaInsufficientComponents);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    // The first byte picks which functions see the rest, so that each can be fuzzed deeply; the
    // MAD codec sees every input.
    const Bytes in{data + 1, size - 1};
    fuzz_sa_mad(in);
    switch (data[0] % 4) {
    case 0:
        fuzz_records(in);
        break;
    case 1:
        fuzz_masked(in);
        break;
    case 2:
        fuzz_response_records(in);
        break;
    case 3:
        fuzz_responses(in);
        break;
    }
    return 0;
}
