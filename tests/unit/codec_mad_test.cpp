// Golden-byte tests for the MAD / RMPP / SA header codec (userspace/ib/mad.*). The reference
// bytes are built with libibmad's field table (mad_set_field*) and rdma-core's umad_sa_packet
// layout, never with the project's own codec.
#include "ib/constants.hpp"
#include "ib/mad.hpp"

#include <catch2/catch.hpp>
#include <infiniband/mad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>

#include <endian.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

using namespace localsa::mad;

namespace {

struct HeaderValues {
    std::uint8_t base_version, mgmt_class, class_version, method;
    std::uint16_t status, class_specific;
    std::uint64_t tid;
    std::uint16_t attr_id, reserved;
    std::uint32_t attr_mod;
    std::uint8_t rmpp_version, rmpp_type, rmpp_resp_time, rmpp_flags, rmpp_status;
    std::uint32_t segment, paylen;
    std::uint64_t sm_key;
    std::uint16_t attr_offset, sa_reserved;
    std::uint64_t comp_mask;
};

// Two value sets, the second the bitwise complement of the first within each field's width, so
// that every bit of every field is 1 in one of them.
HeaderValues values_a() {
    return {0x5A,
            0x03,
            0xA5,
            0x92,
            0xA5C3,
            0x5A3C,
            0x0123456789ABCDEFULL,
            0x0035,
            0xBEEF,
            0xDEADBEEF,
            0x6C,
            0x93,
            0x15,
            0x5,
            0xC6,
            0x89ABCDEF,
            0x13579BDF,
            0xFEDCBA9876543210ULL,
            0x1234,
            0x4321,
            0x8000000000C0FFEEULL};
}
HeaderValues complement(const HeaderValues& v) {
    HeaderValues c;
    c.base_version = ~v.base_version;
    c.mgmt_class = ~v.mgmt_class;
    c.class_version = ~v.class_version;
    c.method = ~v.method;
    c.status = ~v.status;
    c.class_specific = ~v.class_specific;
    c.tid = ~v.tid;
    c.attr_id = ~v.attr_id;
    c.reserved = ~v.reserved;
    c.attr_mod = ~v.attr_mod;
    c.rmpp_version = ~v.rmpp_version;
    c.rmpp_type = ~v.rmpp_type;
    c.rmpp_resp_time = ~v.rmpp_resp_time & 0x1f;
    c.rmpp_flags = ~v.rmpp_flags & 0x7;
    c.rmpp_status = ~v.rmpp_status;
    c.segment = ~v.segment;
    c.paylen = ~v.paylen;
    c.sm_key = ~v.sm_key;
    c.attr_offset = ~v.attr_offset;
    c.sa_reserved = ~v.sa_reserved;
    c.comp_mask = ~v.comp_mask;
    return c;
}

std::array<std::uint8_t, 200> data_pattern(std::uint8_t seed) {
    std::array<std::uint8_t, 200> d{};
    for (std::size_t i = 0; i < d.size(); ++i)
        d[i] = static_cast<std::uint8_t>(seed + i * 37);
    return d;
}

// Reference MAD: libibmad fields; umad_sa_packet for what libibmad has no field for
// (ClassSpecific, the header's reserved word, the SA header's reserved word).
std::vector<std::uint8_t> golden_mad(const HeaderValues& v,
                                     const std::array<std::uint8_t, 200>& d) {
    umad_sa_packet pkt;
    std::memset(&pkt, 0, sizeof pkt);
    static_assert(sizeof pkt == 256);
    void* b = &pkt;
    mad_set_field(b, 0, IB_MAD_BASEVER_F, v.base_version);
    mad_set_field(b, 0, IB_MAD_MGMTCLASS_F, v.mgmt_class);
    mad_set_field(b, 0, IB_MAD_CLASSVER_F, v.class_version);
    mad_set_field(b, 0, IB_MAD_METHOD_F, v.method & 0x7f);
    mad_set_field(b, 0, IB_MAD_RESPONSE_F, v.method >> 7);
    mad_set_field(b, 0, IB_MAD_STATUS_F, v.status);
    pkt.mad_hdr.class_specific = htobe16(v.class_specific);
    mad_set_field64(b, 0, IB_MAD_TRID_F, v.tid);
    mad_set_field(b, 0, IB_MAD_ATTRID_F, v.attr_id);
    pkt.mad_hdr.resv = htobe16(v.reserved);
    mad_set_field(b, 0, IB_MAD_ATTRMOD_F, v.attr_mod);
    mad_set_field(b, 0, IB_SA_RMPP_VERS_F, v.rmpp_version);
    mad_set_field(b, 0, IB_SA_RMPP_TYPE_F, v.rmpp_type);
    mad_set_field(b, 0, IB_SA_RMPP_RESP_F, v.rmpp_resp_time);
    mad_set_field(b, 0, IB_SA_RMPP_FLAGS_F, v.rmpp_flags);
    mad_set_field(b, 0, IB_SA_RMPP_STATUS_F, v.rmpp_status);
    mad_set_field(b, 0, IB_SA_RMPP_SEGNUM_F, v.segment);
    mad_set_field(b, 0, IB_SA_RMPP_LEN_F, v.paylen);
    mad_set_field64(b, 0, IB_SA_MKEY_F, v.sm_key);
    mad_set_field(b, 0, IB_SA_ATTROFFS_F, v.attr_offset);
    pkt.reserved = htobe16(v.sa_reserved);
    mad_set_field64(b, 0, IB_SA_COMPMASK_F, v.comp_mask);
    mad_set_array(b, 0, IB_SA_DATA_F, const_cast<std::uint8_t*>(d.data()));
    const auto* p = static_cast<const std::uint8_t*>(b);
    return {p, p + sizeof pkt};
}

SaMad ours(const HeaderValues& v, const std::array<std::uint8_t, 200>& d) {
    SaMad m;
    m.header.base_version = v.base_version;
    m.header.mgmt_class = v.mgmt_class;
    m.header.class_version = v.class_version;
    m.header.method = v.method;
    m.header.status = v.status;
    m.header.class_specific = v.class_specific;
    m.header.tid = v.tid;
    m.header.attr_id = v.attr_id;
    m.header.reserved = v.reserved;
    m.header.attr_mod = v.attr_mod;
    m.rmpp.version = v.rmpp_version;
    m.rmpp.type = v.rmpp_type;
    m.rmpp.resp_time = v.rmpp_resp_time;
    m.rmpp.flags = v.rmpp_flags;
    m.rmpp.status = v.rmpp_status;
    m.rmpp.segment = v.segment;
    m.rmpp.paylen_newwin = v.paylen;
    m.sm_key = v.sm_key;
    m.attr_offset = v.attr_offset;
    m.reserved = v.sa_reserved;
    m.comp_mask = v.comp_mask;
    m.data.assign(d.begin(), d.end());
    return m;
}

void check_unpacked(const SaMad& m, const HeaderValues& v, const std::array<std::uint8_t, 200>& d) {
    CHECK(int(m.header.base_version) == v.base_version);
    CHECK(int(m.header.mgmt_class) == v.mgmt_class);
    CHECK(int(m.header.class_version) == v.class_version);
    CHECK(int(m.header.method) == v.method);
    CHECK(m.header.status == v.status);
    CHECK(m.header.class_specific == v.class_specific);
    CHECK(m.header.tid == v.tid);
    CHECK(m.header.attr_id == v.attr_id);
    CHECK(m.header.reserved == v.reserved);
    CHECK(m.header.attr_mod == v.attr_mod);
    CHECK(int(m.rmpp.version) == v.rmpp_version);
    CHECK(int(m.rmpp.type) == v.rmpp_type);
    CHECK(int(m.rmpp.resp_time) == v.rmpp_resp_time);
    CHECK(int(m.rmpp.flags) == v.rmpp_flags);
    CHECK(m.rmpp.active() == bool(v.rmpp_flags & 1));
    CHECK(int(m.rmpp.status) == v.rmpp_status);
    CHECK(m.rmpp.segment == v.segment);
    CHECK(m.rmpp.paylen_newwin == v.paylen);
    CHECK(m.sm_key == v.sm_key);
    CHECK(m.attr_offset == v.attr_offset);
    CHECK(m.reserved == v.sa_reserved);
    CHECK(m.comp_mask == v.comp_mask);
    CHECK(m.data == std::vector<std::uint8_t>(d.begin(), d.end()));
}

std::vector<std::uint8_t> random_bytes(std::mt19937& rng, std::size_t n) {
    std::vector<std::uint8_t> v(n);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& x : v)
        x = static_cast<std::uint8_t>(byte(rng));
    return v;
}

} // namespace

TEST_CASE("codec: SaMad::pack equals the libibmad-built MAD", "[codec][mad]") {
    for (const auto& v : {values_a(), complement(values_a())}) {
        const auto d = data_pattern(static_cast<std::uint8_t>(v.method));
        const auto golden = golden_mad(v, d);
        const auto packed = ours(v, d).pack();
        REQUIRE(packed.size() == kMadSize);
        CHECK(packed == golden);
    }
}

TEST_CASE("codec: SaMad::unpack of libibmad-built MAD yields the field values", "[codec][mad]") {
    for (const auto& v : {values_a(), complement(values_a())}) {
        const auto d = data_pattern(static_cast<std::uint8_t>(v.attr_id));
        const auto golden = golden_mad(v, d);
        const auto m = SaMad::unpack(golden);
        REQUIRE(m.has_value());
        check_unpacked(*m, v, d);
        // The per-header decoders agree with the whole-MAD decoder.
        CHECK(MadHeader::unpack(golden) == m->header);
        CHECK(RmppHeader::unpack(golden) == m->rmpp);
    }
}

TEST_CASE("codec: MadHeader and RmppHeader pack only their own bytes", "[codec][mad]") {
    const auto v = values_a();
    const auto golden = golden_mad(v, data_pattern(1));
    const auto m = ours(v, data_pattern(1));

    std::vector<std::uint8_t> buf(kMadSize, 0xEE);
    m.header.pack(buf);
    CHECK(std::equal(buf.begin(), buf.begin() + 24, golden.begin()));
    CHECK(std::all_of(buf.begin() + 24, buf.end(), [](auto b) { return b == 0xEE; }));

    std::vector<std::uint8_t> buf2(kMadSize, 0xEE);
    m.rmpp.pack(buf2);
    CHECK(std::all_of(buf2.begin(), buf2.begin() + 24, [](auto b) { return b == 0xEE; }));
    CHECK(std::equal(buf2.begin() + 24, buf2.begin() + 36, golden.begin() + 24));
    CHECK(std::all_of(buf2.begin() + 36, buf2.end(), [](auto b) { return b == 0xEE; }));
}

TEST_CASE("codec: RmppHeader resp_time and flags are masked to 5 and 3 bits", "[codec][mad]") {
    RmppHeader r;
    r.resp_time = 0xFF;
    r.flags = 0;
    std::vector<std::uint8_t> buf(kMadSize);
    r.pack(buf);
    CHECK(mad_get_field(buf.data(), 0, IB_SA_RMPP_RESP_F) == 0x1F);
    CHECK(mad_get_field(buf.data(), 0, IB_SA_RMPP_FLAGS_F) == 0);
    r.resp_time = 0;
    r.flags = 0xFF;
    r.pack(buf);
    CHECK(mad_get_field(buf.data(), 0, IB_SA_RMPP_RESP_F) == 0);
    CHECK(mad_get_field(buf.data(), 0, IB_SA_RMPP_FLAGS_F) == 0x7);
    for (std::uint8_t f : {rmpp::kFlagActive, rmpp::kFlagFirst, rmpp::kFlagLast}) {
        std::vector<std::uint8_t> b(kMadSize);
        mad_set_field(b.data(), 0, IB_SA_RMPP_FLAGS_F, f);
        CHECK(int(RmppHeader::unpack(b).flags) == f);
        CHECK(RmppHeader::unpack(b).active() == (f == rmpp::kFlagActive));
    }
}

TEST_CASE("codec: SaMad unpack->pack round-trips random buffers byte for byte", "[codec][mad]") {
    std::mt19937 rng(0x5A5A1234);
    for (int i = 0; i < 500; ++i) {
        const auto buf = random_bytes(rng, kMadSize);
        const auto m = SaMad::unpack(buf);
        REQUIRE(m.has_value());
        REQUIRE(m->pack() == buf);
    }
    // Reassembled RMPP responses are longer than one MAD.
    for (std::size_t extra : {1u, 8u, 64u, 200u, 1000u, 4096u}) {
        const auto buf = random_bytes(rng, kMadSize + extra);
        const auto m = SaMad::unpack(buf);
        REQUIRE(m.has_value());
        CHECK(m->data.size() == kSaDataSize + extra);
        CHECK(m->pack() == buf);
    }
}

TEST_CASE("codec: SaMad pack->unpack round-trips random field values", "[codec][mad]") {
    std::mt19937_64 rng(77);
    for (int i = 0; i < 200; ++i) {
        SaMad m;
        m.header.base_version = rng();
        m.header.mgmt_class = rng();
        m.header.class_version = rng();
        m.header.method = rng();
        m.header.status = rng();
        m.header.class_specific = rng();
        m.header.tid = rng();
        m.header.attr_id = rng();
        m.header.reserved = rng();
        m.header.attr_mod = rng();
        m.rmpp.version = rng();
        m.rmpp.type = rng();
        m.rmpp.resp_time = rng() & 0x1f;
        m.rmpp.flags = rng() & 0x7;
        m.rmpp.status = rng();
        m.rmpp.segment = rng();
        m.rmpp.paylen_newwin = rng();
        m.sm_key = rng();
        m.attr_offset = rng();
        m.reserved = rng();
        m.comp_mask = rng();
        for (auto& b : m.data)
            b = rng();
        auto packed = m.pack();
        const auto back = SaMad::unpack(packed);
        REQUIRE(back.has_value());
        CHECK(back->header == m.header);
        CHECK(back->rmpp == m.rmpp);
        CHECK(back->sm_key == m.sm_key);
        CHECK(back->attr_offset == m.attr_offset);
        CHECK(back->reserved == m.reserved);
        CHECK(back->comp_mask == m.comp_mask);
        CHECK(back->data == m.data);
        // And the libibmad view of the packed bytes agrees.
        CHECK(mad_get_field64(packed.data(), 0, IB_MAD_TRID_F) == m.header.tid);
        CHECK(mad_get_field64(packed.data(), 0, IB_SA_COMPMASK_F) == m.comp_mask);
        CHECK(mad_get_field64(packed.data(), 0, IB_SA_MKEY_F) == m.sm_key);
        CHECK(mad_get_field(packed.data(), 0, IB_SA_ATTROFFS_F) == m.attr_offset);
        CHECK(mad_get_field(packed.data(), 0, IB_SA_RMPP_RESP_F) == m.rmpp.resp_time);
    }
}

TEST_CASE("codec: SaMad::unpack rejects buffers shorter than the SA header", "[codec][mad]") {
    std::mt19937 rng(3);
    const auto full = random_bytes(rng, kMadSize);
    for (std::size_t n = 0; n < kSaHeaderSize; ++n)
        CHECK_FALSE(SaMad::unpack(Bytes{full.data(), n}).has_value());
    const auto m = SaMad::unpack(Bytes{full.data(), kSaHeaderSize});
    REQUIRE(m.has_value());
    CHECK(m->data.empty());
    CHECK(m->comp_mask ==
          mad_get_field64(const_cast<std::uint8_t*>(full.data()), 0, IB_SA_COMPMASK_F));
    // A header-only MAD packs back to a full MAD: header kept, data area zero.
    const auto packed = m->pack();
    REQUIRE(packed.size() == kMadSize);
    CHECK(std::equal(packed.begin(), packed.begin() + kSaHeaderSize, full.begin()));
    CHECK(std::all_of(packed.begin() + kSaHeaderSize, packed.end(), [](auto b) { return b == 0; }));
}

TEST_CASE("codec: a default SaMad is an SA Get with a zeroed 200-byte data area", "[codec][mad]") {
    const auto packed = SaMad{}.pack();
    REQUIRE(packed.size() == kMadSize);
    auto* p = const_cast<std::uint8_t*>(packed.data());
    CHECK(mad_get_field(p, 0, IB_MAD_BASEVER_F) == 1);
    CHECK(mad_get_field(p, 0, IB_MAD_MGMTCLASS_F) == IB_SA_CLASS);
    CHECK(mad_get_field(p, 0, IB_MAD_CLASSVER_F) == UMAD_SA_CLASS_VERSION);
    CHECK(mad_get_field(p, 0, IB_MAD_METHOD_F) == IB_MAD_METHOD_GET);
    CHECK(mad_get_field(p, 0, IB_MAD_RESPONSE_F) == 0);
    CHECK(std::all_of(packed.begin() + 4, packed.end(), [](auto b) { return b == 0; }));
}

TEST_CASE("codec: SaMad::records splits the data area by attribute offset", "[codec][mad]") {
    SaMad m;
    for (std::size_t i = 0; i < m.data.size(); ++i)
        m.data[i] = static_cast<std::uint8_t>(i);

    SECTION("attribute offset 0: no records") {
        m.attr_offset = 0;
        CHECK(m.records().empty());
    }
    SECTION("PathRecord (8 units): three whole records in 200 bytes") {
        m.attr_offset = 8;
        const auto r = m.records();
        REQUIRE(r.size() == 3);
        for (std::size_t i = 0; i < 3; ++i) {
            CHECK(r[i].size() == 64);
            CHECK(r[i].data() == m.data.data() + 64 * i);
        }
    }
    SECTION("ClassPortInfo (9 units): two records") {
        m.attr_offset = 9;
        const auto r = m.records();
        REQUIRE(r.size() == 2);
        CHECK(r[1].data() == m.data.data() + 72);
        CHECK(r[1].size() == 72);
    }
    SECTION("record larger than the data: none") {
        m.attr_offset = 26; // 208 bytes
        CHECK(m.records().empty());
    }
    SECTION("exactly the data: one") {
        m.data.resize(200);
        m.attr_offset = 25;
        CHECK(m.records().size() == 1);
    }
    SECTION("reassembled data: every record") {
        m.data.assign(64 * 40 + 12, 0xAB);
        m.attr_offset = 8;
        const auto r = m.records();
        REQUIRE(r.size() == 40);
        CHECK(r.back().data() == m.data.data() + 64 * 39);
    }
    SECTION("records of an unpacked libibmad-built MAD") {
        umad_sa_packet pkt;
        std::memset(&pkt, 0, sizeof pkt);
        mad_set_field(&pkt, 0, IB_SA_ATTROFFS_F, 8);
        for (int i = 0; i < 3; ++i)
            mad_set_field(pkt.data + 64 * i, 0, IB_SA_PR_DLID_F, 0x100 + i);
        const auto u = SaMad::unpack(Bytes{reinterpret_cast<std::uint8_t*>(&pkt), sizeof pkt});
        REQUIRE(u.has_value());
        const auto r = u->records();
        REQUIRE(r.size() == 3);
        for (int i = 0; i < 3; ++i)
            CHECK(load_be16(r[i], 40) == 0x100 + i);
    }
}

TEST_CASE("codec: tid_of / set_tid address the libibmad TID field only", "[codec][mad]") {
    std::mt19937 rng(11);
    auto buf = random_bytes(rng, kMadSize);
    const auto before = buf;
    CHECK(tid_of(buf) == mad_get_field64(buf.data(), 0, IB_MAD_TRID_F));
    set_tid(buf, 0x0FEDCBA987654321ULL);
    CHECK(mad_get_field64(buf.data(), 0, IB_MAD_TRID_F) == 0x0FEDCBA987654321ULL);
    CHECK(tid_of(buf) == 0x0FEDCBA987654321ULL);
    for (std::size_t i = 0; i < buf.size(); ++i)
        if (i < 8 || i >= 16)
            REQUIRE(buf[i] == before[i]);
}

TEST_CASE("codec: MAD constants match libibmad and umad", "[codec][mad]") {
    CHECK(kMadSize == sizeof(umad_sa_packet));
    CHECK(kSaHeaderSize == IB_SA_DATA_OFFS);
    CHECK(kSaDataSize == UMAD_LEN_SA_DATA);
    CHECK(kRmppHeaderOffset == offsetof(umad_sa_packet, rmpp_hdr));
    CHECK(mgmt_class::kSubnAdm == IB_SA_CLASS);
    CHECK(mgmt_class::kSubnLid == IB_SMI_CLASS);
    CHECK(mgmt_class::kSubnDirected == IB_SMI_DIRECT_CLASS);
    CHECK(kSaClassVersion == UMAD_SA_CLASS_VERSION);
    CHECK(method::kGet == IB_MAD_METHOD_GET);
    CHECK(method::kSet == IB_MAD_METHOD_SET);
    CHECK(method::kGetResp == IB_MAD_METHOD_GET_RESPONSE);
    CHECK(method::kReport == IB_MAD_METHOD_REPORT);
    CHECK(method::kReportResp == IB_MAD_METHOD_REPORT_RESPONSE);
    CHECK(method::kTrap == IB_MAD_METHOD_TRAP);
    CHECK(method::kTrapRepress == IB_MAD_METHOD_TRAP_REPRESS);
    CHECK(method::kSend == IB_MAD_METHOD_SEND);
    CHECK(method::kGetTable == UMAD_SA_METHOD_GET_TABLE);
    CHECK(method::kGetTableResp == UMAD_SA_METHOD_GET_TABLE_RESP);
    CHECK(method::kDelete == UMAD_SA_METHOD_DELETE);
    CHECK(method::kGetMulti == UMAD_SA_METHOD_GET_MULTI);
    CHECK(method::kGetTraceTable == UMAD_SA_METHOD_GET_TRACE_TABLE);
    CHECK(status::kSaNoResources == UMAD_SA_STATUS_NO_RESOURCES << 8);
    CHECK(status::kSaReqInvalid == UMAD_SA_STATUS_REQ_INVALID << 8);
    CHECK(status::kSaNoRecords == UMAD_SA_STATUS_NO_RECORDS << 8);
    CHECK(status::kSaTooManyRecords == UMAD_SA_STATUS_TOO_MANY_RECORDS << 8);
    CHECK(status::kSaInvalidGid == UMAD_SA_STATUS_INVALID_GID << 8);
    CHECK(status::kSaInsufficientComponents == UMAD_SA_STATUS_INSUF_COMPS << 8);
    CHECK(status::kSaDenied == UMAD_SA_STATUS_REQ_DENIED << 8);
    CHECK(status::kBusy == UMAD_STATUS_BUSY);
    CHECK(status::kRedirect == UMAD_STATUS_REDIRECT);
    CHECK(status::kBadVersion == UMAD_STATUS_BAD_VERSION);
    CHECK(status::kUnsupportedMethod == UMAD_STATUS_METHOD_NOT_SUPPORTED);
    CHECK(status::kUnsupportedMethodAttr == UMAD_STATUS_ATTR_NOT_SUPPORTED);
    CHECK(status::kInvalidField == UMAD_STATUS_INVALID_ATTR_VALUE);
    CHECK(attr::kClassPortInfo == CLASS_PORT_INFO);
    CHECK(attr::kNotice == IB_SA_ATTR_NOTICE);
    CHECK(attr::kInformInfo == IB_SA_ATTR_INFORMINFO);
    CHECK(attr::kNodeRecord == UMAD_SA_ATTR_NODE_REC);
    CHECK(attr::kPortInfoRecord == UMAD_SA_ATTR_PORT_INFO_REC);
    CHECK(attr::kServiceRecord == UMAD_SA_ATTR_SERVICE_REC);
    CHECK(attr::kPathRecord == UMAD_SA_ATTR_PATH_REC);
    CHECK(attr::kMcMemberRecord == UMAD_SA_ATTR_MCMEMBER_REC);
    CHECK(attr::kMultiPathRecord == UMAD_SA_ATTR_MULTI_PATH_REC);
    CHECK(rmpp::kVersion == UMAD_RMPP_VERSION);
    CHECK(rmpp::kFlagActive == UMAD_RMPP_FLAG_ACTIVE);
    CHECK(method::is_response(method::kGetTableResp));
    CHECK_FALSE(method::is_response(method::kGetTable));
    CHECK(method::is_sa_request(method::kGetMulti));
    CHECK_FALSE(method::is_sa_request(method::kGetResp));
    CHECK_FALSE(method::is_sa_request(method::kTrap));
}

TEST_CASE("codec: method, attribute and status names", "[codec][mad]") {
    CHECK(method_name(0x01) == "Get");
    CHECK(method_name(0x81) == "GetResp");
    CHECK(method_name(0x92) == "GetTableResp");
    CHECK(method_name(0x95) == "DeleteResp");
    CHECK(method_name(0x7f) == "0x7f");
    CHECK(method_name(0xff) == "0x7fResp");
    CHECK(attr_name(0x0035) == "PathRecord");
    CHECK(attr_name(0x003A) == "MultiPathRecord");
    CHECK(attr_name(0x1234) == "0x1234");
    CHECK(status_name(0x0300) == "NO_RECORDS");
    CHECK(status_name(0x000C) == "UNSUP_METHOD_ATTR");
    CHECK(status_name(0x0900) == "0x0900");
}
