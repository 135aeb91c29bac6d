// Golden-byte tests for the SA records other than PathRecord (ClassPortInfo, InformInfo, Notice,
// MCMemberRecord), Gid and resp_time_value_for_ms. Reference bytes: libibmad's IB_CPI_*,
// IB_NOTICE_*, IB_SA_MCM_* fields; rdma-core's umad_class_port_info / umad_sa_mcmember_record
// layouts and helpers; for InformInfo (libibmad has no InformInfo fields) an MSB-first bit writer
// at the IBA bit offsets.
#include "ib/bytes.hpp"
#include "ib/class_port_info.hpp"
#include "ib/gid.hpp"
#include "ib/inform_info.hpp"
#include "ib/mc_member_record.hpp"
#include "ib/notice.hpp"

#include <catch2/catch.hpp>
#include <infiniband/mad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sa_mcm.h>
#include <infiniband/umad_types.h>

#include <endian.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

using namespace localsa;
using namespace localsa::sa;

namespace {

void iba_set(std::uint8_t* buf, unsigned bit, unsigned len, std::uint64_t v) {
    for (unsigned i = 0; i < len; ++i) {
        const unsigned b = bit + i;
        const auto m = static_cast<std::uint8_t>(0x80u >> (b % 8));
        if ((v >> (len - 1 - i)) & 1)
            buf[b / 8] |= m;
        else
            buf[b / 8] &= static_cast<std::uint8_t>(~m);
    }
}

template <std::size_t N> std::array<std::uint8_t, N> random_array(std::mt19937& rng) {
    std::array<std::uint8_t, N> a;
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& x : a)
        x = static_cast<std::uint8_t>(byte(rng));
    return a;
}

Gid gid_pattern(std::uint8_t seed) {
    Gid g;
    for (std::size_t i = 0; i < 16; ++i)
        g.raw[i] = static_cast<std::uint8_t>(seed ^ (i * 0x1F));
    return g;
}
Gid inverted(const Gid& g) {
    Gid r;
    for (std::size_t i = 0; i < 16; ++i)
        r.raw[i] = static_cast<std::uint8_t>(~g.raw[i]);
    return r;
}

// ---------------------------------------------------------------- ClassPortInfo

struct CpiValues {
    std::uint8_t base, cls;
    std::uint16_t cap;
    std::uint32_t cap2; // 27
    std::uint8_t resp;  // 5
    Gid rgid;
    std::uint8_t rtc, rsl; // 8, 4
    std::uint32_t rfl;     // 20
    std::uint16_t rlid, rpkey;
    std::uint32_t rqp, rqkey; // 24, 32
    Gid tgid;
    std::uint8_t ttc, tsl;
    std::uint32_t tfl;
    std::uint16_t tlid, tpkey;
    std::uint8_t thl;
    std::uint32_t tqp, tqkey;
};
CpiValues cpi_a() {
    return {0x5A,    0xA5,   0xA5C3, 0x5A5A5A5, 0x15,       gid_pattern(0x3C), 0xA5, 0xA,
            0x5A5A5, 0xC33C, 0x8001, 0x5A5A5A,  0x80010001, gid_pattern(0xC3), 0x3C, 0x5,
            0xA5A5A, 0x0FF0, 0x7FFE, 0xA5,      0x123456,   0x0BADCAFE};
}
CpiValues cpi_complement(const CpiValues& v) {
    CpiValues c;
    c.base = ~v.base;
    c.cls = ~v.cls;
    c.cap = ~v.cap;
    c.cap2 = ~v.cap2 & 0x7ffffff;
    c.resp = ~v.resp & 0x1f;
    c.rgid = inverted(v.rgid);
    c.rtc = ~v.rtc;
    c.rsl = ~v.rsl & 0xf;
    c.rfl = ~v.rfl & 0xfffff;
    c.rlid = ~v.rlid;
    c.rpkey = ~v.rpkey;
    c.rqp = ~v.rqp & 0xffffff;
    c.rqkey = ~v.rqkey;
    c.tgid = inverted(v.tgid);
    c.ttc = ~v.ttc;
    c.tsl = ~v.tsl & 0xf;
    c.tfl = ~v.tfl & 0xfffff;
    c.tlid = ~v.tlid;
    c.tpkey = ~v.tpkey;
    c.thl = ~v.thl;
    c.tqp = ~v.tqp & 0xffffff;
    c.tqkey = ~v.tqkey;
    return c;
}

std::array<std::uint8_t, 72> golden_cpi(const CpiValues& v) {
    std::array<std::uint8_t, 72> r{};
    auto* b = r.data();
    mad_set_field(b, 0, IB_CPI_BASEVER_F, v.base);
    mad_set_field(b, 0, IB_CPI_CLASSVER_F, v.cls);
    mad_set_field(b, 0, IB_CPI_CAPMASK_F, v.cap);
    mad_set_field(b, 0, IB_CPI_CAPMASK2_F, v.cap2);
    mad_set_field(b, 0, IB_CPI_RESP_TIME_VALUE_F, v.resp);
    mad_set_array(b, 0, IB_CPI_REDIRECT_GID_F, const_cast<std::uint8_t*>(v.rgid.raw.data()));
    // libibmad's *_FL_F fields are 24 bits wide and cover SL too: set FL before SL.
    mad_set_field(b, 0, IB_CPI_REDIRECT_FL_F, v.rfl);
    mad_set_field(b, 0, IB_CPI_REDIRECT_SL_F, v.rsl);
    mad_set_field(b, 0, IB_CPI_REDIRECT_TC_F, v.rtc);
    mad_set_field(b, 0, IB_CPI_REDIRECT_LID_F, v.rlid);
    mad_set_field(b, 0, IB_CPI_REDIRECT_PKEY_F, v.rpkey);
    mad_set_field(b, 0, IB_CPI_REDIRECT_QP_F, v.rqp);
    mad_set_field(b, 0, IB_CPI_REDIRECT_QKEY_F, v.rqkey);
    mad_set_array(b, 0, IB_CPI_TRAP_GID_F, const_cast<std::uint8_t*>(v.tgid.raw.data()));
    mad_set_field(b, 0, IB_CPI_TRAP_FL_F, v.tfl);
    mad_set_field(b, 0, IB_CPI_TRAP_SL_F, v.tsl);
    mad_set_field(b, 0, IB_CPI_TRAP_TC_F, v.ttc);
    mad_set_field(b, 0, IB_CPI_TRAP_LID_F, v.tlid);
    mad_set_field(b, 0, IB_CPI_TRAP_PKEY_F, v.tpkey);
    mad_set_field(b, 0, IB_CPI_TRAP_HL_F, v.thl);
    mad_set_field(b, 0, IB_CPI_TRAP_QP_F, v.tqp);
    mad_set_field(b, 0, IB_CPI_TRAP_QKEY_F, v.tqkey);
    return r;
}

ClassPortInfo expected_cpi(const CpiValues& v) {
    ClassPortInfo c;
    c.base_version = v.base;
    c.class_version = v.cls;
    c.capability_mask = v.cap;
    c.capability_mask2 = v.cap2;
    c.resp_time_value = v.resp;
    c.redirect_gid = v.rgid;
    c.redirect_tc_sl_fl = std::uint32_t{v.rtc} << 24 | std::uint32_t{v.rsl} << 20 | v.rfl;
    c.redirect_lid = v.rlid;
    c.redirect_pkey = v.rpkey;
    c.redirect_qp = v.rqp;
    c.redirect_qkey = v.rqkey;
    c.trap_gid = v.tgid;
    c.trap_tc_sl_fl = std::uint32_t{v.ttc} << 24 | std::uint32_t{v.tsl} << 20 | v.tfl;
    c.trap_lid = v.tlid;
    c.trap_pkey = v.tpkey;
    c.trap_hl_qp = std::uint32_t{v.thl} << 24 | v.tqp;
    c.trap_qkey = v.tqkey;
    return c;
}

} // namespace

TEST_CASE("codec: ClassPortInfo pack equals the libibmad-built attribute", "[codec][cpi]") {
    for (const auto& v : {cpi_a(), cpi_complement(cpi_a())}) {
        const auto golden = golden_cpi(v);
        std::array<std::uint8_t, 72> buf;
        buf.fill(0x99);
        expected_cpi(v).pack(buf);
        CHECK(buf == golden);
    }
}

TEST_CASE("codec: ClassPortInfo unpack of libibmad-built bytes yields the field values",
          "[codec][cpi]") {
    for (const auto& v : {cpi_a(), cpi_complement(cpi_a())}) {
        const auto golden = golden_cpi(v);
        const auto c = ClassPortInfo::unpack(golden);
        CHECK(c == expected_cpi(v));
        CHECK(int(c.base_version) == v.base);
        CHECK(int(c.class_version) == v.cls);
        CHECK(c.capability_mask == v.cap);
        CHECK(c.capability_mask2 == v.cap2);
        CHECK(int(c.resp_time_value) == v.resp);
        CHECK(c.redirect_qp == v.rqp);
        CHECK(c.trap_hl_qp == (std::uint32_t{v.thl} << 24 | v.tqp));
        // umad_class_port_info's accessors agree.
        umad_class_port_info u;
        std::memcpy(&u, golden.data(), sizeof u);
        static_assert(sizeof u == ClassPortInfo::kSize);
        CHECK(umad_class_cap_mask2(&u) == c.capability_mask2);
        CHECK(umad_class_resp_time(&u) == c.resp_time_value);
        CHECK(be16toh(u.cap_mask) == c.capability_mask);
        CHECK(be32toh(u.redir_tc_sl_fl) == c.redirect_tc_sl_fl);
        CHECK(be32toh(u.trap_hl_qp) == c.trap_hl_qp);
        CHECK(be32toh(u.redir_qkey) == c.redirect_qkey);
    }
}

TEST_CASE("codec: ClassPortInfo masks oversized values to their field widths", "[codec][cpi]") {
    ClassPortInfo c;
    c.base_version = 0;
    c.class_version = 0;
    c.capability_mask2 = 0xffffffff;
    std::array<std::uint8_t, 72> b{};
    c.pack(b);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_CAPMASK2_F) == 0x7ffffff);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_RESP_TIME_VALUE_F) == 0);
    c.capability_mask2 = 0;
    c.resp_time_value = 0xff;
    c.pack(b);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_CAPMASK2_F) == 0);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_RESP_TIME_VALUE_F) == 0x1f);
    c.resp_time_value = 0;
    c.redirect_qp = 0xffffffff;
    b.fill(0);
    c.pack(b);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_REDIRECT_QP_F) == 0xffffff);
    CHECK(b[32] == 0); // the reserved byte before RedirectQP
}

TEST_CASE("codec: ClassPortInfo unpack->pack round-trips random bytes", "[codec][cpi]") {
    // Kept: everything but the reserved byte in front of RedirectQP (byte 32).
    std::mt19937 rng(0xC1A55);
    for (int i = 0; i < 500; ++i) {
        const auto in = random_array<72>(rng);
        auto expected = in;
        expected[32] = 0;
        std::array<std::uint8_t, 72> out{};
        ClassPortInfo::unpack(in).pack(out);
        REQUIRE(out == expected);
    }
}

TEST_CASE("codec: OpenSM's default ClassPortInfo values encode as libibmad expects",
          "[codec][cpi]") {
    ClassPortInfo c;
    c.capability_mask = 0x2602;
    c.resp_time_value = 16;
    std::array<std::uint8_t, 72> b{};
    c.pack(b);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_BASEVER_F) == 1);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_CLASSVER_F) == 2);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_CAPMASK_F) == 0x2602);
    CHECK(mad_get_field(b.data(), 0, IB_CPI_RESP_TIME_VALUE_F) == 16);
    CHECK(std::all_of(b.begin() + 8, b.end(), [](auto x) { return x == 0; }));
}

// ---------------------------------------------------------------- InformInfo

namespace {
struct IiValues {
    Gid gid;
    std::uint16_t begin, end, reserved;
    std::uint8_t is_generic, subscribe;
    std::uint16_t type, trap;
    std::uint32_t qpn;      // 24
    std::uint8_t resp;      // 5
    std::uint32_t producer; // 24
};
IiValues ii_a() {
    return {gid_pattern(0x5A), 0xC001, 0x3FFE,  0xA55A, 0x01, 0xA5, 0x5A3C, 0x0040,
            0xA5A5A5,          0x15,   0x5A5A5A};
}
IiValues ii_complement(const IiValues& v) {
    return {inverted(v.gid),
            static_cast<std::uint16_t>(~v.begin),
            static_cast<std::uint16_t>(~v.end),
            static_cast<std::uint16_t>(~v.reserved),
            static_cast<std::uint8_t>(~v.is_generic),
            static_cast<std::uint8_t>(~v.subscribe),
            static_cast<std::uint16_t>(~v.type),
            static_cast<std::uint16_t>(~v.trap),
            ~v.qpn & 0xffffff,
            static_cast<std::uint8_t>(~v.resp & 0x1f),
            ~v.producer & 0xffffff};
}
// IBA vol. 1 13.4.8.3, InformInfo: GID 0/128, LIDRangeBegin 128/16, LIDRangeEnd 144/16,
// Reserved 160/16, IsGeneric 176/8, Subscribe 184/8, Type 192/16, TrapNumber|DeviceID 208/16,
// QPN 224/24, Reserved 248/3, RespTimeValue 251/5, Reserved 256/8, ProducerType|VendorID 264/24.
std::array<std::uint8_t, 36> golden_ii(const IiValues& v) {
    std::array<std::uint8_t, 36> r{};
    auto* b = r.data();
    for (int i = 0; i < 16; ++i)
        iba_set(b, 8 * i, 8, v.gid.raw[i]);
    iba_set(b, 128, 16, v.begin);
    iba_set(b, 144, 16, v.end);
    iba_set(b, 160, 16, v.reserved);
    iba_set(b, 176, 8, v.is_generic);
    iba_set(b, 184, 8, v.subscribe);
    iba_set(b, 192, 16, v.type);
    iba_set(b, 208, 16, v.trap);
    iba_set(b, 224, 24, v.qpn);
    iba_set(b, 251, 5, v.resp);
    iba_set(b, 264, 24, v.producer);
    return r;
}
InformInfo expected_ii(const IiValues& v) {
    InformInfo i;
    i.gid = v.gid;
    i.lid_range_begin = v.begin;
    i.lid_range_end = v.end;
    i.reserved = v.reserved;
    i.is_generic = v.is_generic;
    i.subscribe = v.subscribe;
    i.type = v.type;
    i.trap_number = v.trap;
    i.qpn = v.qpn;
    i.resp_time_value = v.resp;
    i.producer_type = v.producer;
    return i;
}
} // namespace

TEST_CASE("codec: InformInfo pack and unpack match the IBA layout", "[codec][inform_info]") {
    for (const auto& v : {ii_a(), ii_complement(ii_a())}) {
        const auto golden = golden_ii(v);
        std::array<std::uint8_t, 36> buf;
        buf.fill(0x66);
        expected_ii(v).pack(buf);
        CHECK(buf == golden);
        const auto i = InformInfo::unpack(golden);
        CHECK(i == expected_ii(v));
        CHECK(i.qpn == v.qpn);
        CHECK(int(i.resp_time_value) == v.resp);
        CHECK(i.producer_type == v.producer);
        CHECK(i.trap_number == v.trap);
    }
}

TEST_CASE("codec: InformInfo for SM traps 64-67 (GID 0, LIDRangeBegin 0xFFFF)",
          "[codec][inform_info]") {
    InformInfo i;
    i.lid_range_begin = 0xFFFF;
    i.is_generic = 1;
    i.subscribe = 1;
    i.type = 0xFFFF;
    i.trap_number = 0xFFFF;
    i.producer_type = 0xFFFFFF;
    std::array<std::uint8_t, 36> b{};
    i.pack(b);
    std::array<std::uint8_t, 36> g{};
    iba_set(g.data(), 128, 16, 0xFFFF);
    iba_set(g.data(), 176, 8, 1);
    iba_set(g.data(), 184, 8, 1);
    iba_set(g.data(), 192, 16, 0xFFFF);
    iba_set(g.data(), 208, 16, 0xFFFF);
    iba_set(g.data(), 264, 24, 0xFFFFFF);
    CHECK(b == g);
}

TEST_CASE("codec: InformInfo masks oversized QPN, RespTimeValue, ProducerType",
          "[codec][inform_info]") {
    InformInfo i;
    i.qpn = 0xffffffff;
    i.resp_time_value = 0xff;
    i.producer_type = 0xffffffff;
    std::array<std::uint8_t, 36> b{};
    i.pack(b);
    std::array<std::uint8_t, 36> g{};
    iba_set(g.data(), 224, 24, 0xffffff);
    iba_set(g.data(), 251, 5, 0x1f);
    iba_set(g.data(), 264, 24, 0xffffff);
    CHECK(b == g);
}

TEST_CASE("codec: InformInfo unpack->pack round-trips random bytes", "[codec][inform_info]") {
    // Kept: everything but the 3 reserved bits before RespTimeValue and the reserved byte 32.
    std::mt19937 rng(0x1F0);
    for (int k = 0; k < 500; ++k) {
        const auto in = random_array<36>(rng);
        auto expected = in;
        iba_set(expected.data(), 248, 3, 0);
        expected[32] = 0;
        std::array<std::uint8_t, 36> out{};
        InformInfo::unpack(in).pack(out);
        REQUIRE(out == expected);
    }
}

// ---------------------------------------------------------------- Notice

namespace {
struct NoticeValues {
    unsigned generic;
    std::uint8_t type;      // 7
    std::uint32_t producer; // 24
    std::uint16_t trap, issuer_lid;
    unsigned toggle;
    std::uint16_t count; // 15
    std::array<std::uint8_t, 54> details;
    Gid issuer_gid;
};
NoticeValues notice_a() {
    NoticeValues v{1, 0x5A, 0xA5A5A5, 0x00C3, 0x3CC3, 1, 0x5A5A, {}, gid_pattern(0x77)};
    for (std::size_t i = 0; i < v.details.size(); ++i)
        v.details[i] = static_cast<std::uint8_t>(0xA5 ^ (i * 13));
    return v;
}
NoticeValues notice_complement(const NoticeValues& v) {
    NoticeValues c = v;
    c.generic = !v.generic;
    c.type = ~v.type & 0x7f;
    c.producer = ~v.producer & 0xffffff;
    c.trap = ~v.trap;
    c.issuer_lid = ~v.issuer_lid;
    c.toggle = !v.toggle;
    c.count = ~v.count & 0x7fff;
    for (auto& b : c.details)
        b = ~b;
    c.issuer_gid = inverted(v.issuer_gid);
    return c;
}
std::array<std::uint8_t, 80> golden_notice(const NoticeValues& v) {
    std::array<std::uint8_t, 80> r{};
    auto* b = r.data();
    mad_set_field(b, 0, IB_NOTICE_IS_GENERIC_F, v.generic);
    mad_set_field(b, 0, IB_NOTICE_TYPE_F, v.type);
    mad_set_field(b, 0, IB_NOTICE_PRODUCER_F, v.producer);
    mad_set_field(b, 0, IB_NOTICE_TRAP_NUMBER_F, v.trap);
    mad_set_field(b, 0, IB_NOTICE_ISSUER_LID_F, v.issuer_lid);
    // libibmad's NoticeCount is 16 bits wide and covers NoticeToggle: set it first.
    mad_set_field(b, 0, IB_NOTICE_COUNT_F, v.count);
    mad_set_field(b, 0, IB_NOTICE_TOGGLE_F, v.toggle);
    mad_set_array(b, 0, IB_NOTICE_DATA_DETAILS_F, const_cast<std::uint8_t*>(v.details.data()));
    // IssuerGID (bits 512-639) has no libibmad field.
    for (int i = 0; i < 16; ++i)
        iba_set(b, 512 + 8 * i, 8, v.issuer_gid.raw[i]);
    return r;
}
Notice expected_notice(const NoticeValues& v) {
    Notice n;
    n.is_generic = v.generic;
    n.type = v.type;
    n.producer_type = v.producer;
    n.trap_number = v.trap;
    n.issuer_lid = v.issuer_lid;
    n.toggle = v.toggle;
    n.count = v.count;
    n.data_details = v.details;
    n.issuer_gid = v.issuer_gid;
    return n;
}
} // namespace

TEST_CASE("codec: Notice pack equals the libibmad-built attribute", "[codec][notice]") {
    for (const auto& v : {notice_a(), notice_complement(notice_a())}) {
        std::array<std::uint8_t, 80> buf;
        buf.fill(0x55);
        expected_notice(v).pack(buf);
        CHECK(buf == golden_notice(v));
    }
}

TEST_CASE("codec: Notice unpack of libibmad-built bytes yields the field values",
          "[codec][notice]") {
    for (const auto& v : {notice_a(), notice_complement(notice_a())}) {
        auto golden = golden_notice(v);
        const auto n = Notice::unpack(golden);
        CHECK(n == expected_notice(v));
        CHECK(n.is_generic == bool(v.generic));
        CHECK(int(n.type) == v.type);
        CHECK(n.producer_type == v.producer);
        CHECK(n.trap_number == v.trap);
        CHECK(n.issuer_lid == v.issuer_lid);
        CHECK(n.toggle == bool(v.toggle));
        CHECK(n.count == v.count);
        CHECK(n.trap_number == mad_get_field(golden.data(), 0, IB_NOTICE_TRAP_NUMBER_F));
    }
}

TEST_CASE("codec: Notice masks oversized Type, ProducerType and Count", "[codec][notice]") {
    Notice n;
    n.is_generic = false;
    n.type = 0xff;
    n.producer_type = 0xffffffff;
    n.count = 0xffff;
    std::array<std::uint8_t, 80> b{};
    n.pack(b);
    CHECK(mad_get_field(b.data(), 0, IB_NOTICE_IS_GENERIC_F) == 0);
    CHECK(mad_get_field(b.data(), 0, IB_NOTICE_TYPE_F) == 0x7f);
    CHECK(mad_get_field(b.data(), 0, IB_NOTICE_PRODUCER_F) == 0xffffff);
    CHECK(mad_get_field(b.data(), 0, IB_NOTICE_TOGGLE_F) == 0);
    CHECK(mad_get_field(b.data(), 0, IB_NOTICE_COUNT_F) == 0x7fff);
}

TEST_CASE("codec: Notice unpack->pack round-trips random bytes", "[codec][notice]") {
    std::mt19937 rng(0x2071CE);
    for (int k = 0; k < 500; ++k) {
        const auto in = random_array<80>(rng);
        std::array<std::uint8_t, 80> out{};
        Notice::unpack(in).pack(out);
        REQUIRE(out == in);
    }
}

TEST_CASE("codec: Notice::subject_gid reads the GID of traps 64-67", "[codec][notice]") {
    // Trap 64 DataDetails: 48 reserved bits, then GIDADDR (notice bits 128-255).
    const Gid g = *Gid::parse("fe80::2:c903:a:b1c2");
    std::array<std::uint8_t, 80> b{};
    mad_set_field(b.data(), 0, IB_NOTICE_IS_GENERIC_F, 1);
    mad_set_field(b.data(), 0, IB_NOTICE_TYPE_F, 4);
    mad_set_field(b.data(), 0, IB_NOTICE_PRODUCER_F, 4); // class manager
    mad_set_field(b.data(), 0, IB_NOTICE_TRAP_NUMBER_F, trap::kGidInService);
    for (int i = 0; i < 16; ++i)
        iba_set(b.data(), 128 + 8 * i, 8, g.raw[i]);
    const auto n = Notice::unpack(b);
    CHECK(n.trap_number == 64);
    CHECK(n.subject_gid() == g);
    CHECK(n.subject_gid().str() == "fe80::2:c903:a:b1c2");
}

// ---------------------------------------------------------------- MCMemberRecord

namespace {
struct McmValues {
    Gid mgid, port_gid;
    std::uint32_t qkey;
    std::uint16_t mlid;
    std::uint8_t mtu_sel, mtu, tclass;
    std::uint16_t pkey;
    std::uint8_t rate_sel, rate, life_sel, life, sl;
    std::uint32_t flow;
    std::uint8_t hop, scope, join;
    unsigned proxy;
};
McmValues mcm_a() {
    return {gid_pattern(0xFF),
            gid_pattern(0x12),
            0x80010002,
            0xC00A,
            2,
            0x2A,
            0xA5,
            0x8001,
            1,
            0x15,
            2,
            0x25,
            0xA,
            0xABCDE,
            0x5A,
            0x5,
            0xA,
            1};
}
McmValues mcm_complement(const McmValues& v) {
    McmValues c = v;
    c.mgid = inverted(v.mgid);
    c.port_gid = inverted(v.port_gid);
    c.qkey = ~v.qkey;
    c.mlid = ~v.mlid;
    c.mtu_sel = ~v.mtu_sel & 3;
    c.mtu = ~v.mtu & 0x3f;
    c.tclass = ~v.tclass;
    c.pkey = ~v.pkey;
    c.rate_sel = ~v.rate_sel & 3;
    c.rate = ~v.rate & 0x3f;
    c.life_sel = ~v.life_sel & 3;
    c.life = ~v.life & 0x3f;
    c.sl = ~v.sl & 0xf;
    c.flow = ~v.flow & 0xfffff;
    c.hop = ~v.hop;
    c.scope = ~v.scope & 0xf;
    c.join = ~v.join & 0xf;
    c.proxy = !v.proxy;
    return c;
}
std::array<std::uint8_t, 52> golden_mcm(const McmValues& v) {
    umad_sa_mcmember_record r;
    std::memset(&r, 0, sizeof r);
    std::memcpy(r.mgid, v.mgid.raw.data(), 16);
    std::memcpy(r.portgid, v.port_gid.raw.data(), 16);
    r.qkey = htobe32(v.qkey);
    r.mlid = htobe16(v.mlid);
    r.mtu = umad_sa_set_rate_mtu_or_life(v.mtu_sel, v.mtu);
    r.tclass = v.tclass;
    r.pkey = htobe16(v.pkey);
    r.rate = umad_sa_set_rate_mtu_or_life(v.rate_sel, v.rate);
    r.pkt_life = umad_sa_set_rate_mtu_or_life(v.life_sel, v.life);
    r.sl_flow_hop = umad_sa_mcm_set_sl_flow_hop(v.sl, v.flow, v.hop);
    r.scope_state = umad_sa_mcm_set_scope_state(v.scope, v.join);
    r.proxy_join = v.proxy ? 0x80 : 0;
    std::array<std::uint8_t, 52> out;
    std::memcpy(out.data(), &r, out.size());
    return out;
}
McMemberRecord expected_mcm(const McmValues& v) {
    McMemberRecord m;
    m.mgid = v.mgid;
    m.port_gid = v.port_gid;
    m.qkey = v.qkey;
    m.mlid = v.mlid;
    m.mtu_selector = v.mtu_sel;
    m.mtu = v.mtu;
    m.tclass = v.tclass;
    m.pkey = v.pkey;
    m.rate_selector = v.rate_sel;
    m.rate = v.rate;
    m.packet_life_selector = v.life_sel;
    m.packet_life = v.life;
    m.sl = v.sl;
    m.flow_label = v.flow;
    m.hop_limit = v.hop;
    m.scope = v.scope;
    m.join_state = v.join;
    m.proxy_join = v.proxy;
    return m;
}
} // namespace

TEST_CASE("codec: MCMemberRecord pack equals the umad_sa_mcmember_record-built record",
          "[codec][mcm]") {
    for (const auto& v : {mcm_a(), mcm_complement(mcm_a())}) {
        std::array<std::uint8_t, 52> buf;
        buf.fill(0x44);
        expected_mcm(v).pack(buf);
        CHECK(buf == golden_mcm(v));
    }
}

TEST_CASE("codec: MCMemberRecord unpack yields the values libibmad reads", "[codec][mcm]") {
    for (const auto& v : {mcm_a(), mcm_complement(mcm_a())}) {
        auto golden = golden_mcm(v);
        const auto m = McMemberRecord::unpack(golden);
        CHECK(m == expected_mcm(v));
        auto* g = golden.data();
        CHECK(mad_get_field(g, 0, IB_SA_MCM_QKEY_F) == m.qkey);
        CHECK(mad_get_field(g, 0, IB_SA_MCM_MLID_F) == m.mlid);
        CHECK(mad_get_field(g, 0, IB_SA_MCM_MTU_F) == m.mtu);
        CHECK(mad_get_field(g, 0, IB_SA_MCM_TCLASS_F) == m.tclass);
        CHECK(mad_get_field(g, 0, IB_SA_MCM_PKEY_F) == m.pkey);
        CHECK(mad_get_field(g, 0, IB_SA_MCM_RATE_F) == m.rate);
        CHECK(mad_get_field(g, 0, IB_SA_MCM_SL_F) == m.sl);
        // libibmad's McastMemFlowLbl is 24 bits and includes SL.
        CHECK((mad_get_field(g, 0, IB_SA_MCM_FLOW_LABEL_F) & 0xfffff) == m.flow_label);
        CHECK(mad_get_field(g, 0, IB_SA_MCM_JOIN_STATE_F) == m.join_state);
        CHECK(mad_get_field(g, 0, IB_SA_MCM_PROXY_JOIN_F) == unsigned(m.proxy_join));
        std::array<std::uint8_t, 16> mgid{};
        mad_get_array(g, 0, IB_SA_MCM_MGID_F, mgid.data());
        CHECK(mgid == m.mgid.raw);
        std::array<std::uint8_t, 16> pgid{};
        mad_get_array(g, 0, IB_SA_MCM_PORTGID_F, pgid.data());
        CHECK(pgid == m.port_gid.raw);
        CHECK(int(m.packet_life) == v.life);
        CHECK(int(m.packet_life_selector) == v.life_sel);
        CHECK(int(m.scope) == v.scope);
        CHECK(int(m.hop_limit) == v.hop);
    }
}

TEST_CASE("codec: MCMemberRecord unpack->pack round-trips random bytes", "[codec][mcm]") {
    // Kept: everything but the 23 reserved bits after ProxyJoin (written as zero).
    std::mt19937 rng(0x3C3);
    for (int k = 0; k < 500; ++k) {
        const auto in = random_array<52>(rng);
        auto expected = in;
        iba_set(expected.data(), 393, 23, 0);
        std::array<std::uint8_t, 52> out;
        out.fill(0xEE);
        McMemberRecord::unpack(in).pack(out);
        REQUIRE(out == expected);
    }
}

// ---------------------------------------------------------------- Gid

TEST_CASE("codec: Gid parse, str, prefix and guid", "[codec][gid]") {
    const auto g = Gid::parse("fe80::2:c903:0:1");
    REQUIRE(g.has_value());
    CHECK(g->prefix() == 0xfe80000000000000ULL);
    CHECK(g->guid() == 0x0002c90300000001ULL);
    CHECK(g->str() == "fe80::2:c903:0:1");
    CHECK_FALSE(g->is_zero());

    // Same bytes as libibmad's GID prefix / GUID fields.
    std::array<std::uint8_t, 16> raw{};
    mad_set_field64(raw.data(), 0, IB_GID_PREFIX_F, 0xfe80000000000000ULL);
    mad_set_field64(raw.data(), 0, IB_GID_GUID_F, 0x0002c90300000001ULL);
    CHECK(g->raw == raw);
    CHECK(Gid::from_parts(0xfe80000000000000ULL, 0x0002c90300000001ULL) == *g);

    const auto f = Gid::from_parts(0x0123456789abcdefULL, 0xfedcba9876543210ULL);
    CHECK(mad_get_field64(const_cast<std::uint8_t*>(f.raw.data()), 0, IB_GID_PREFIX_F) ==
          0x0123456789abcdefULL);
    CHECK(mad_get_field64(const_cast<std::uint8_t*>(f.raw.data()), 0, IB_GID_GUID_F) ==
          0xfedcba9876543210ULL);
    CHECK(f.str() == "123:4567:89ab:cdef:fedc:ba98:7654:3210");
    CHECK(Gid::parse(f.str()) == f);

    CHECK(Gid{}.is_zero());
    CHECK(Gid{}.str() == "::");
    CHECK(Gid::parse("::") == Gid{});
    CHECK(Gid::parse("FE80:0000:0000:0000:0002:C903:0000:0001") == g);
    CHECK(Gid::parse("ff12:401b:ffff::1")->prefix() == 0xff12401bffff0000ULL);

    for (const char* bad : {"", "fe80", "fe80::1::2", "1.2.3.4", "fe80:0:0:0:0:0:0:0:1", "gggg::1",
                            " fe80::1", "fe80::1 "})
        CHECK_FALSE(Gid::parse(bad).has_value());

    // Ordering is by bytes, prefix first.
    CHECK(Gid::from_parts(1, 0xffffffffffffffffULL) < Gid::from_parts(2, 0));
    CHECK(Gid::from_parts(1, 1) < Gid::from_parts(1, 2));
}

TEST_CASE("codec: Gid str/parse round-trips random GIDs", "[codec][gid]") {
    std::mt19937_64 rng(0x61D);
    for (int i = 0; i < 500; ++i) {
        const auto g = Gid::from_parts(rng(), rng());
        const auto back = Gid::parse(g.str());
        REQUIRE(back.has_value());
        REQUIRE(*back == g);
    }
}

// ---------------------------------------------------------------- resp_time_value_for_ms

TEST_CASE("codec: resp_time_value_for_ms is the smallest covering 4.096us*2^v", "[codec][cpi]") {
    CHECK(resp_time_value_for_ms(0) == 0);
    CHECK(resp_time_value_for_ms(1) == 8);    // 4.096us*2^8 = 1.048 ms
    CHECK(resp_time_value_for_ms(2) == 9);    // 2.097 ms
    CHECK(resp_time_value_for_ms(268) == 16); // OpenSM's default 16 = 268.4 ms
    CHECK(resp_time_value_for_ms(269) == 17);
    CHECK(resp_time_value_for_ms(1000) == 18); // 1.07 s
    CHECK(resp_time_value_for_ms(2000) == 19); // 2.15 s
    CHECK(resp_time_value_for_ms(4398046) == 30);
    CHECK(resp_time_value_for_ms(4398047) == 31);
    CHECK(resp_time_value_for_ms(0xffffffffu) == 31);
    for (unsigned ms = 0; ms < 100000; ms += 7) {
        const auto v = resp_time_value_for_ms(ms);
        INFO("ms " << ms << " v " << int(v));
        REQUIRE(v <= 31);
        REQUIRE(4.096 * std::ldexp(1.0, v) >= ms * 1000.0);
        if (v > 0)
            REQUIRE(4.096 * std::ldexp(1.0, v - 1) < ms * 1000.0);
    }
}
