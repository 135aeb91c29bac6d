// Tests for the SA response builders (make_records_response / make_error_response, against
// OpenSM's osm_sa_respond / osm_sa_send_error) and for response_records. Expected bytes are built
// from the request with libibmad's field setters, not with the project's codec.
#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/response.hpp"

#include <catch2/catch.hpp>
#include <infiniband/mad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

using namespace localsa;
using namespace localsa::sa;

namespace {

using Buf = std::vector<std::uint8_t>;

Buf random_bytes(std::mt19937& rng, std::size_t n) {
    Buf v(n);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& x : v)
        x = static_cast<std::uint8_t>(byte(rng));
    return v;
}

// An SA request: random bytes everywhere (reserved fields, RMPP header, data area included), then
// the fields that make it a request set with libibmad.
Buf make_request(std::mt19937& rng, std::uint8_t method, std::uint16_t attr_id,
                 std::size_t size = 256) {
    Buf b = random_bytes(rng, std::max<std::size_t>(size, 256));
    auto* p = b.data();
    mad_set_field(p, 0, IB_MAD_BASEVER_F, 1);
    mad_set_field(p, 0, IB_MAD_MGMTCLASS_F, IB_SA_CLASS);
    mad_set_field(p, 0, IB_MAD_CLASSVER_F, UMAD_SA_CLASS_VERSION);
    mad_set_field(p, 0, IB_MAD_METHOD_F, method & 0x7f);
    mad_set_field(p, 0, IB_MAD_RESPONSE_F, 0);
    mad_set_field(p, 0, IB_MAD_STATUS_F, 0);
    mad_set_field64(p, 0, IB_MAD_TRID_F, 0x0000BEEF12345678ULL);
    mad_set_field(p, 0, IB_MAD_ATTRID_F, attr_id);
    mad_set_field64(p, 0, IB_SA_MKEY_F, 0x1122334455667788ULL);
    mad_set_field(p, 0, IB_SA_ATTROFFS_F, 0x0808);
    mad_set_field64(p, 0, IB_SA_COMPMASK_F, 0x000000000000300CULL);
    b.resize(size);
    return b;
}

Buf records_of(std::mt19937& rng, std::size_t n, std::size_t size) {
    return random_bytes(rng, n * size);
}

std::uint32_t get(const Buf& b, MAD_FIELDS f) {
    return mad_get_field(const_cast<std::uint8_t*>(b.data()), 0, f);
}
std::uint64_t get64(const Buf& b, MAD_FIELDS f) {
    return mad_get_field64(const_cast<std::uint8_t*>(b.data()), 0, f);
}

// The reference response for make_records_response, after osm_sa_respond: the request's SA header
// (56 bytes), method (Set answered as Get) | response bit, SM_Key 0, attribute offset
// attr_size >> 3 (0 when there are no records), GetTableResp marked RMPP active; then the records.
// A GetTable answer is the SA header and the records, no more (osm_sa_respond sizes its MAD
// IB_SA_MAD_HDR_SIZE + num_rec * attr_size); anything else one 256-byte MAD.
Buf expected_records_response(const Buf& req, std::size_t rec_size, const Buf& recs) {
    Buf out(get(req, IB_MAD_METHOD_F) == IB_MAD_METHOD_GET_TABLE
                ? 56 + recs.size()
                : std::max<std::size_t>(256, 56 + recs.size()),
            0);
    std::copy_n(req.begin(), 56, out.begin());
    auto* p = out.data();
    std::uint32_t m = get(req, IB_MAD_METHOD_F);
    if (m == IB_MAD_METHOD_SET)
        m = IB_MAD_METHOD_GET;
    mad_set_field(p, 0, IB_MAD_METHOD_F, m);
    mad_set_field(p, 0, IB_MAD_RESPONSE_F, 1);
    mad_set_field64(p, 0, IB_SA_MKEY_F, 0);
    mad_set_field(p, 0, IB_SA_ATTROFFS_F, recs.empty() ? 0 : rec_size >> 3);
    std::copy(recs.begin(), recs.end(), out.begin() + 56);
    return out;
}

// osm_sa_send_error: the whole 256-byte request echoed, status set, Set answered as Get, GetTable
// answered with attribute offset 0, SM_Key 0, MultiPathRecord answered as PathRecord.
Buf expected_error_response(const Buf& req, std::uint16_t status) {
    Buf out(256, 0);
    std::copy_n(req.begin(), std::min<std::size_t>(256, req.size()), out.begin());
    auto* p = out.data();
    mad_set_field(p, 0, IB_MAD_STATUS_F, status);
    std::uint32_t m = get(req, IB_MAD_METHOD_F);
    if (m == IB_MAD_METHOD_SET)
        m = IB_MAD_METHOD_GET;
    else if (m == IB_MAD_METHOD_GET_TABLE)
        mad_set_field(p, 0, IB_SA_ATTROFFS_F, 0);
    mad_set_field(p, 0, IB_MAD_METHOD_F, m);
    mad_set_field(p, 0, IB_MAD_RESPONSE_F, 1);
    mad_set_field64(p, 0, IB_SA_MKEY_F, 0);
    if (get(out, IB_MAD_ATTRID_F) == UMAD_SA_ATTR_MULTI_PATH_REC)
        mad_set_field(p, 0, IB_MAD_ATTRID_F, UMAD_SA_ATTR_PATH_REC);
    return out;
}

bool equal_outside_rmpp(const Buf& a, const Buf& b) {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if ((i < 24 || i >= 36) && a[i] != b[i])
            return false;
    return true;
}

} // namespace

// ---------------------------------------------------------------- make_records_response

TEST_CASE("codec: GetTable(PathRecord) answer follows osm_sa_respond", "[codec][response]") {
    std::mt19937 rng(0x0517);
    const auto req = make_request(rng, IB_MAD_METHOD_GET_TABLE, UMAD_SA_ATTR_PATH_REC);
    for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 10u, 31u}) {
        INFO(n << " records");
        const auto recs = records_of(rng, n, 64);
        const auto out = make_records_response(req, 64, recs);
        const auto exp = expected_records_response(req, 64, recs);
        // Not padded to 256 bytes: the requester's RMPP layer would hand the padding over as
        // all-zero records (1 record: 2 more, 2 records: 1 more).
        REQUIRE(out.size() == 56 + 64 * n);
        CHECK(equal_outside_rmpp(out, exp));
        CHECK(get(out, IB_MAD_METHOD_F) == IB_MAD_METHOD_GET_TABLE);
        CHECK(get(out, IB_MAD_RESPONSE_F) == 1);
        CHECK(out[3] == UMAD_SA_METHOD_GET_TABLE_RESP);
        CHECK(get64(out, IB_SA_MKEY_F) == 0);
        CHECK(get(out, IB_SA_ATTROFFS_F) == (n ? 8u : 0u));
        CHECK(get64(out, IB_MAD_TRID_F) == get64(req, IB_MAD_TRID_F));
        CHECK(get64(out, IB_SA_COMPMASK_F) == get64(req, IB_SA_COMPMASK_F));
        // RMPP Active. The rest of the RMPP header is not checked: the kernel's
        // ib_create_send_mad / send_next_seg write version, type, segment and length themselves
        // (OpenSM with VENDOR_RMPP_SUPPORT sets only the flags).
        CHECK((get(out, IB_SA_RMPP_FLAGS_F) & UMAD_RMPP_FLAG_ACTIVE) != 0);
        CHECK(std::equal(recs.begin(), recs.end(), out.begin() + 56));
    }
}

TEST_CASE("codec: Get answer copies the request header, RMPP header included",
          "[codec][response]") {
    std::mt19937 rng(0x0518);
    const auto req = make_request(rng, IB_MAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC);
    const auto rec = records_of(rng, 1, 64);
    const auto out = make_records_response(req, 64, rec);
    REQUIRE(out.size() == 256);
    CHECK(out == expected_records_response(req, 64, rec));
    CHECK(out[3] == IB_MAD_METHOD_GET_RESPONSE);
    CHECK(std::equal(out.begin() + 24, out.begin() + 36, req.begin() + 24));
    // The request's data area is not echoed behind the record.
    CHECK(std::all_of(out.begin() + 56 + 64, out.end(), [](auto b) { return b == 0; }));
}

TEST_CASE("codec: Set is answered with GetResp", "[codec][response]") {
    std::mt19937 rng(0x0519);
    const auto req = make_request(rng, IB_MAD_METHOD_SET, IB_SA_ATTR_INFORMINFO);
    const auto rec = records_of(rng, 1, 36);
    const auto out = make_records_response(req, 36, rec);
    CHECK(out == expected_records_response(req, 36, rec));
    CHECK(out[3] == IB_MAD_METHOD_GET_RESPONSE);
    CHECK(get(out, IB_SA_ATTROFFS_F) == 4); // OpenSM: ib_get_attr_offset(36) = 36 >> 3
}

TEST_CASE("codec: ClassPortInfo Get answer", "[codec][response]") {
    std::mt19937 rng(0x051A);
    const auto req = make_request(rng, IB_MAD_METHOD_GET, CLASS_PORT_INFO);
    const auto rec = records_of(rng, 1, 72);
    const auto out = make_records_response(req, 72, rec);
    CHECK(out == expected_records_response(req, 72, rec));
    CHECK(get(out, IB_SA_ATTROFFS_F) == 9);
}

TEST_CASE("codec: answers without records carry attribute offset 0", "[codec][response]") {
    std::mt19937 rng(0x051B);
    const Buf none;
    SECTION("GetTable: an empty table, still RMPP") {
        const auto req = make_request(rng, IB_MAD_METHOD_GET_TABLE, UMAD_SA_ATTR_PATH_REC);
        const auto out = make_records_response(req, 64, none);
        REQUIRE(out.size() == 56); // the SA header alone, as OpenSM sends an empty table
        CHECK(equal_outside_rmpp(out, expected_records_response(req, 64, none)));
        CHECK(get(out, IB_SA_ATTROFFS_F) == 0);
        CHECK(out[3] == UMAD_SA_METHOD_GET_TABLE_RESP);
        CHECK((get(out, IB_SA_RMPP_FLAGS_F) & UMAD_RMPP_FLAG_ACTIVE) != 0);
        CHECK(std::all_of(out.begin() + 56, out.end(), [](auto b) { return b == 0; }));
        CHECK(get(out, IB_MAD_STATUS_F) == 0);
    }
    SECTION("Get") {
        const auto req = make_request(rng, IB_MAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC);
        const auto out = make_records_response(req, 64, none);
        CHECK(out == expected_records_response(req, 64, none));
        CHECK(get(out, IB_SA_ATTROFFS_F) == 0);
    }
}

TEST_CASE("codec: records response from a header-only request", "[codec][response]") {
    std::mt19937 rng(0x051C);
    const auto req = make_request(rng, IB_MAD_METHOD_GET_TABLE, UMAD_SA_ATTR_PATH_REC, 56);
    const auto recs = records_of(rng, 2, 64);
    const auto out = make_records_response(req, 64, recs);
    REQUIRE(out.size() == 56 + 2 * 64);
    CHECK(equal_outside_rmpp(out, expected_records_response(req, 64, recs)));
}

// ---------------------------------------------------------------- make_error_response

TEST_CASE("codec: error answers follow osm_sa_send_error", "[codec][response]") {
    std::mt19937 rng(0x0E77);
    struct Case {
        std::uint8_t method;
        std::uint16_t attr;
        std::uint8_t resp_method;
    };
    const Case cases[] = {
        {IB_MAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC, IB_MAD_METHOD_GET_RESPONSE},
        {IB_MAD_METHOD_SET, IB_SA_ATTR_INFORMINFO, IB_MAD_METHOD_GET_RESPONSE},
        {IB_MAD_METHOD_GET_TABLE, UMAD_SA_ATTR_PATH_REC, IB_MAD_METHOD_GET_TABLE_RESPONSE},
        {IB_MAD_METHOD_DELETE, UMAD_SA_ATTR_MCMEMBER_REC, IB_MAD_METHOD_DELETE_RESPONSE},
        {IB_MAD_METHOD_GETMULTI, UMAD_SA_ATTR_MULTI_PATH_REC, IB_MAD_METHOD_GETMULTI_RESPONSE},
        {IB_MAD_METHOD_GET_TRACE_TABLE, 0x0039, IB_MAD_METHOD_GET_TRACE_TABLE_RESPONSE},
        {IB_MAD_METHOD_GET, CLASS_PORT_INFO, IB_MAD_METHOD_GET_RESPONSE},
    };
    const std::uint16_t statuses[] = {0x0300, 0x0400, 0x0200, 0x0600, 0x000C,
                                      0x0008, 0x0004, 0x0001, 0xFFFF};
    for (const auto& c : cases) {
        for (auto st : statuses) {
            INFO("method " << int(c.method) << " attr " << c.attr << " status " << st);
            const auto req = make_request(rng, c.method, c.attr);
            const auto out = make_error_response(req, st);
            REQUIRE(out.size() == 256);
            CHECK(out == expected_error_response(req, st));
            CHECK(out[3] == c.resp_method);
            CHECK(get(out, IB_MAD_STATUS_F) == st);
            CHECK(get64(out, IB_SA_MKEY_F) == 0);
            CHECK(get(out, IB_SA_ATTROFFS_F) == (c.method == IB_MAD_METHOD_GET_TABLE ? 0 : 0x0808));
            // The data area (the query) is echoed.
            CHECK(std::equal(out.begin() + 56, out.end(), req.begin() + 56));
            // The RMPP header is echoed too: OpenSM's error path does not mark it active.
            CHECK(std::equal(out.begin() + 24, out.begin() + 36, req.begin() + 24));
        }
    }
}

TEST_CASE("codec: GetMulti(MultiPathRecord) errors answer with the PathRecord attribute",
          "[codec][response]") {
    std::mt19937 rng(0x0E78);
    const auto req = make_request(rng, IB_MAD_METHOD_GETMULTI, UMAD_SA_ATTR_MULTI_PATH_REC);
    const auto out = make_error_response(req, 0x0200);
    CHECK(get(out, IB_MAD_ATTRID_F) == UMAD_SA_ATTR_PATH_REC);
    CHECK(out == expected_error_response(req, 0x0200));
}

TEST_CASE("codec: error answer to a short or long request is one MAD", "[codec][response]") {
    std::mt19937 rng(0x0E79);
    SECTION("header only") {
        const auto req = make_request(rng, IB_MAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC, 56);
        const auto out = make_error_response(req, 0x0300);
        REQUIRE(out.size() == 256);
        CHECK(out == expected_error_response(req, 0x0300));
        CHECK(std::all_of(out.begin() + 56, out.end(), [](auto b) { return b == 0; }));
    }
    SECTION("longer than one MAD") {
        const auto req =
            make_request(rng, IB_MAD_METHOD_GETMULTI, UMAD_SA_ATTR_MULTI_PATH_REC, 600);
        const auto out = make_error_response(req, 0x0300);
        REQUIRE(out.size() == 256);
        CHECK(out == expected_error_response(req, 0x0300));
    }
}

TEST_CASE("codec: a request's non-zero status is replaced in answers", "[codec][response]") {
    std::mt19937 rng(0x0E7A);
    auto req = make_request(rng, IB_MAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC);
    mad_set_field(req.data(), 0, IB_MAD_STATUS_F, 0x1234);
    CHECK(get(make_error_response(req, 0x0300), IB_MAD_STATUS_F) == 0x0300);
    // osm_sa_respond copies the header, status included; requests carry status 0.
    CHECK(get(make_records_response(req, 64, records_of(rng, 1, 64)), IB_MAD_STATUS_F) == 0x1234);
}

// ---------------------------------------------------------------- response_records

namespace {

// What the kernel MAD layer puts in the first RMPP segment's PayloadLength for an SA message of
// `data_len` record bytes (ib_create_send_mad + send_next_seg): every 220-byte segment payload
// carries the 20-byte SA header again, so paylen = seg_count * 220 - pad = data_len + 20 * segs.
std::uint32_t kernel_paylen(std::size_t data_len) {
    const std::size_t seg_size = 200;
    std::size_t pad = data_len ? seg_size - data_len % seg_size : seg_size;
    if (data_len && pad == seg_size)
        pad = 0;
    const std::size_t segs = data_len ? (data_len + pad) / seg_size : 1;
    return static_cast<std::uint32_t>(segs * 220 - pad);
}

// A response as user space receives it: the first segment's headers, then `received` bytes of
// records (all of them when the transfer completed).
Buf rmpp_response(std::mt19937& rng, std::size_t record_bytes, std::size_t received,
                  std::uint32_t paylen, bool active = true) {
    Buf b(56 + std::max<std::size_t>(received, 200), 0);
    auto* p = b.data();
    mad_set_field(p, 0, IB_MAD_BASEVER_F, 1);
    mad_set_field(p, 0, IB_MAD_MGMTCLASS_F, IB_SA_CLASS);
    mad_set_field(p, 0, IB_MAD_CLASSVER_F, 2);
    mad_set_field(p, 0, IB_MAD_METHOD_F, IB_MAD_METHOD_GET_TABLE);
    mad_set_field(p, 0, IB_MAD_RESPONSE_F, 1);
    mad_set_field(p, 0, IB_MAD_ATTRID_F, UMAD_SA_ATTR_PATH_REC);
    mad_set_field(p, 0, IB_SA_ATTROFFS_F, 8);
    mad_set_field(p, 0, IB_SA_RMPP_VERS_F, 1);
    mad_set_field(p, 0, IB_SA_RMPP_TYPE_F, 1);
    mad_set_field(p, 0, IB_SA_RMPP_FLAGS_F, active ? 0x3 : 0);
    mad_set_field(p, 0, IB_SA_RMPP_SEGNUM_F, 1);
    mad_set_field(p, 0, IB_SA_RMPP_LEN_F, paylen);
    const auto recs = random_bytes(rng, received);
    std::copy(recs.begin(), recs.end(), b.begin() + 56);
    // Bytes beyond the announced records (padding of the last segment) are garbage.
    for (std::size_t i = 56 + received; i < b.size(); ++i)
        b[i] = 0xA5;
    (void)record_bytes;
    return b;
}

} // namespace

TEST_CASE("codec: the kernel paylen model matches IBA's examples", "[codec][response]") {
    CHECK(kernel_paylen(0) == 20);
    CHECK(kernel_paylen(64) == 84);
    CHECK(kernel_paylen(192) == 212);
    CHECK(kernel_paylen(200) == 220);
    CHECK(kernel_paylen(201) == 241);
    CHECK(kernel_paylen(640) == 720);
}

TEST_CASE("codec: response_records uses the RMPP payload length (one segment)",
          "[codec][response]") {
    std::mt19937 rng(0xAA01);
    for (std::size_t n : {0u, 1u, 2u, 3u}) {
        INFO(n << " records");
        const auto resp = rmpp_response(rng, 64 * n, 64 * n, kernel_paylen(64 * n));
        const auto r = response_records(resp, 64);
        CHECK(r.complete);
        REQUIRE(r.bytes.size() == 64 * n);
        CHECK(std::equal(r.bytes.begin(), r.bytes.end(), resp.begin() + 56));
    }
}

TEST_CASE("codec: response_records: a truncated RMPP transfer is incomplete", "[codec][response]") {
    std::mt19937 rng(0xAA02);
    // 10 records announced, 6 arrived (and a partial seventh).
    for (std::size_t got : {64u * 6, 64u * 6 + 10, 64u * 3, 0u}) {
        INFO(got << " bytes arrived");
        const auto resp = rmpp_response(rng, 640, got, kernel_paylen(640));
        Buf cut(resp.begin(), resp.begin() + 56 + got);
        const auto r = response_records(cut, 64);
        CHECK_FALSE(r.complete);
        CHECK(r.bytes.size() == got / 64 * 64);
        CHECK(std::equal(r.bytes.begin(), r.bytes.end(), cut.begin() + 56));
    }
    // One segment announced with 3 records, only the header arrived.
    const auto resp = rmpp_response(rng, 192, 192, kernel_paylen(192));
    const auto r = response_records(Buf(resp.begin(), resp.begin() + 56), 64);
    CHECK_FALSE(r.complete);
    CHECK(r.bytes.empty());
}

TEST_CASE("codec: response_records of a multi-segment RMPP response is complete",
          "[codec][response]") {
    // The kernel's first-segment PayloadLength counts the 20-byte SA header once per segment
    // (see kernel_paylen); a completely received 10-record GetTableResp (4 segments) carries
    // paylen 720 and 640 record bytes. response_records subtracts 20 only once, expects 700 bytes
    // and reports the transfer incomplete, so no answer of more than 3 PathRecords is ever cached.
    std::mt19937 rng(0xAA03);
    for (std::size_t n : {4u, 10u, 100u}) {
        INFO(n << " records");
        const auto resp = rmpp_response(rng, 64 * n, 64 * n, kernel_paylen(64 * n));
        REQUIRE(resp.size() == 56 + 64 * n);
        const auto r = response_records(resp, 64);
        CHECK(r.bytes.size() == 64 * n);
        CHECK(r.complete);
    }
}

TEST_CASE("codec: response_records without RMPP", "[codec][response]") {
    std::mt19937 rng(0xAA04);
    SECTION("GetResp: exactly one record, the rest of the data area is padding") {
        auto resp = rmpp_response(rng, 200, 200, 0, false);
        mad_set_field(resp.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_GET);
        const auto r = response_records(resp, 64);
        CHECK(r.complete);
        REQUIRE(r.bytes.size() == 64);
        CHECK(std::equal(r.bytes.begin(), r.bytes.end(), resp.begin() + 56));
    }
    SECTION("GetTableResp without RMPP: every whole record in the data") {
        const auto resp = rmpp_response(rng, 200, 200, 0, false);
        const auto r = response_records(resp, 64);
        CHECK(r.complete);
        CHECK(r.bytes.size() == 192);
    }
    SECTION("RMPP active but a payload length below the SA header: whole data") {
        const auto resp = rmpp_response(rng, 200, 200, 12, true);
        const auto r = response_records(resp, 64);
        CHECK(r.complete);
        CHECK(r.bytes.size() == 192);
    }
}

TEST_CASE("codec: response_records edge cases", "[codec][response]") {
    std::mt19937 rng(0xAA05);
    SECTION("attribute offset 0: no records, complete") {
        auto resp = rmpp_response(rng, 640, 64, kernel_paylen(640));
        mad_set_field(resp.data(), 0, IB_SA_ATTROFFS_F, 0);
        const auto r = response_records(resp, 64);
        CHECK(r.bytes.empty());
        CHECK(r.complete);
    }
    SECTION("shorter than the SA header") {
        const auto resp = rmpp_response(rng, 192, 192, kernel_paylen(192));
        for (std::size_t n : {0u, 1u, 24u, 55u}) {
            const auto r = response_records(Buf(resp.begin(), resp.begin() + n), 64);
            CHECK(r.bytes.empty());
        }
    }
    SECTION("record size 0") {
        const auto resp = rmpp_response(rng, 192, 192, kernel_paylen(192));
        CHECK(response_records(resp, 0).bytes.empty());
    }
    SECTION("make_records_response output read back") {
        const auto req = make_request(rng, IB_MAD_METHOD_GET_TABLE, UMAD_SA_ATTR_PATH_REC);
        const auto recs = records_of(rng, 3, 64);
        auto out = make_records_response(req, 64, recs);
        mad_set_field(out.data(), 0, IB_SA_RMPP_LEN_F, kernel_paylen(recs.size()));
        const auto r = response_records(out, 64);
        CHECK(r.complete);
        CHECK(r.bytes == recs);
    }
}

TEST_CASE("codec: a records response reads back through SaMad::records", "[codec][response]") {
    std::mt19937 rng(0xAA06);
    const auto req = make_request(rng, IB_MAD_METHOD_GET_TABLE, UMAD_SA_ATTR_PATH_REC);
    const auto recs = records_of(rng, 7, 64);
    const auto out = make_records_response(req, 64, recs);
    const auto m = mad::SaMad::unpack(out);
    REQUIRE(m.has_value());
    CHECK(m->header.method == mad::method::kGetTableResp);
    CHECK(m->sm_key == 0);
    CHECK(m->rmpp.active());
    const auto r = m->records();
    REQUIRE(r.size() == 7);
    for (std::size_t i = 0; i < 7; ++i)
        CHECK(std::equal(r[i].begin(), r[i].end(), recs.begin() + 64 * i));
}
