// Golden-byte tests for PathRecord (userspace/ib/path_record.*) and masked_path_record. Reference
// bytes: libibmad's IB_SA_PR_* fields where libibmad defines them (DGID, SGID, DLID, SLID,
// NumbPath, SL), umad_sa.h's selector packing for MTU/Rate/PacketLifeTime, and for the rest an
// MSB-first bit writer placed at the IBA PathRecord bit offsets (cross-checked with libibmad
// below).
#include "ib/bytes.hpp"
#include "ib/path_record.hpp"

#include <catch2/catch.hpp>
#include <infiniband/mad.h>
#include <infiniband/umad_sa.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

using namespace localsa;
using namespace localsa::sa;

namespace {

using Rec = std::array<std::uint8_t, 64>;

// IBA bit numbering: bit 0 is the most significant bit of byte 0.
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
std::uint64_t iba_get(const std::uint8_t* buf, unsigned bit, unsigned len) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < len; ++i) {
        const unsigned b = bit + i;
        v = v << 1 | ((buf[b / 8] >> (7 - b % 8)) & 1);
    }
    return v;
}

// Copies bits [bit, bit+len) of src into dst (any length).
void copy_bits(std::uint8_t* dst, const std::uint8_t* src, unsigned bit, unsigned len) {
    for (unsigned b = bit; b < bit + len; ++b)
        iba_set(dst, b, 1, iba_get(src, b, 1));
}
void set_ones(std::uint8_t* dst, unsigned bit, unsigned len) {
    for (unsigned b = bit; b < bit + len; ++b)
        iba_set(dst, b, 1, 1);
}

// IBA vol. 1 table "PathRecord" (component mask bit, bit offset, bit length).
struct PrField {
    const char* name;
    int mask_bit;
    unsigned bit;
    unsigned len;
};
constexpr PrField kPrFields[] = {
    {"ServiceID(high)", 0, 0, 32},
    {"ServiceID(low)", 1, 32, 32},
    {"DGID", 2, 64, 128},
    {"SGID", 3, 192, 128},
    {"DLID", 4, 320, 16},
    {"SLID", 5, 336, 16},
    {"RawTraffic", 6, 352, 1},
    {"FlowLabel", 8, 356, 20},
    {"HopLimit", 9, 376, 8},
    {"TClass", 10, 384, 8},
    {"Reversible", 11, 392, 1},
    {"NumbPath", 12, 393, 7},
    {"PKey", 13, 400, 16},
    {"QoSClass", 14, 416, 12},
    {"SL", 15, 428, 4},
    {"MTUSelector", 16, 432, 2},
    {"MTU", 17, 434, 6},
    {"RateSelector", 18, 440, 2},
    {"Rate", 19, 442, 6},
    {"PktLifeSelector", 20, 448, 2},
    {"PktLife", 21, 450, 6},
    {"Preference", 22, 456, 8},
};
constexpr unsigned kReservedBit = 353, kReservedLen = 3;  // after RawTraffic
constexpr unsigned kTailReservedBit = 464, kTailLen = 48; // bytes 58..63

struct PrValues {
    std::uint64_t service_id;
    std::array<std::uint8_t, 16> dgid, sgid;
    std::uint16_t dlid, slid;
    unsigned raw_traffic;
    std::uint32_t flow_label;
    std::uint8_t hop_limit, tclass;
    unsigned reversible;
    std::uint8_t numb_path;
    std::uint16_t pkey, qos_class;
    std::uint8_t sl, mtu_sel, mtu, rate_sel, rate, life_sel, life, preference;
    std::array<std::uint8_t, 6> reserved;
};

PrValues values_a() {
    return {0x0123456789ABCDEFULL,
            {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3},
            {0xfe, 0x80, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11, 0x22, 0x33, 0x44,
             0x55, 0x66},
            0xC001,
            0x8F2A,
            1,
            0xABCDE,
            0xA7,
            0x5C,
            1,
            0x55,
            0x8001,
            0xA5A,
            0xA,
            2,
            0x2A,
            1,
            0x15,
            2,
            0x25,
            0xC3,
            {0xde, 0xad, 0xbe, 0xef, 0x01, 0x80}};
}
template <typename T> T inv(T v, unsigned bits) {
    return static_cast<T>(~v & ((bits >= 64 ? ~0ULL : (1ULL << bits) - 1)));
}
PrValues complement(const PrValues& v) {
    PrValues c = v;
    c.service_id = ~v.service_id;
    for (auto& b : c.dgid)
        b = ~b;
    for (auto& b : c.sgid)
        b = ~b;
    for (auto& b : c.reserved)
        b = ~b;
    c.dlid = inv(v.dlid, 16);
    c.slid = inv(v.slid, 16);
    c.raw_traffic = !v.raw_traffic;
    c.flow_label = inv(v.flow_label, 20);
    c.hop_limit = inv(v.hop_limit, 8);
    c.tclass = inv(v.tclass, 8);
    c.reversible = !v.reversible;
    c.numb_path = inv(v.numb_path, 7);
    c.pkey = inv(v.pkey, 16);
    c.qos_class = inv(v.qos_class, 12);
    c.sl = inv(v.sl, 4);
    c.mtu_sel = inv(v.mtu_sel, 2);
    c.mtu = inv(v.mtu, 6);
    c.rate_sel = inv(v.rate_sel, 2);
    c.rate = inv(v.rate, 6);
    c.life_sel = inv(v.life_sel, 2);
    c.life = inv(v.life, 6);
    c.preference = inv(v.preference, 8);
    return c;
}
PrValues all_ones() {
    PrValues v{};
    return complement(v);
}

Rec golden_pr(const PrValues& v) {
    Rec r{};
    auto* b = r.data();
    iba_set(b, 0, 64, v.service_id);
    mad_set_array(b, 0, IB_SA_PR_DGID_F, const_cast<std::uint8_t*>(v.dgid.data()));
    mad_set_array(b, 0, IB_SA_PR_SGID_F, const_cast<std::uint8_t*>(v.sgid.data()));
    mad_set_field(b, 0, IB_SA_PR_DLID_F, v.dlid);
    mad_set_field(b, 0, IB_SA_PR_SLID_F, v.slid);
    iba_set(b, 352, 1, v.raw_traffic);
    iba_set(b, 356, 20, v.flow_label);
    iba_set(b, 376, 8, v.hop_limit);
    iba_set(b, 384, 8, v.tclass);
    iba_set(b, 392, 1, v.reversible);
    mad_set_field(b, 0, IB_SA_PR_NPATH_F, v.numb_path);
    iba_set(b, 400, 16, v.pkey);
    iba_set(b, 416, 12, v.qos_class);
    mad_set_field(b, 0, IB_SA_PR_SL_F, v.sl);
    b[54] = umad_sa_set_rate_mtu_or_life(v.mtu_sel, v.mtu);
    b[55] = umad_sa_set_rate_mtu_or_life(v.rate_sel, v.rate);
    b[56] = umad_sa_set_rate_mtu_or_life(v.life_sel, v.life);
    iba_set(b, 456, 8, v.preference);
    std::memcpy(b + 58, v.reserved.data(), 6);
    return r;
}

PathRecord expected_pr(const PrValues& v) {
    PathRecord p;
    p.service_id = v.service_id;
    p.dgid.raw = v.dgid;
    p.sgid.raw = v.sgid;
    p.dlid = v.dlid;
    p.slid = v.slid;
    p.raw_traffic = v.raw_traffic;
    p.flow_label = v.flow_label;
    p.hop_limit = v.hop_limit;
    p.tclass = v.tclass;
    p.reversible = v.reversible;
    p.numb_path = v.numb_path;
    p.pkey = v.pkey;
    p.qos_class = v.qos_class;
    p.sl = v.sl;
    p.mtu_selector = v.mtu_sel;
    p.mtu = v.mtu;
    p.rate_selector = v.rate_sel;
    p.rate = v.rate;
    p.packet_life_selector = v.life_sel;
    p.packet_life = v.life;
    p.preference = v.preference;
    p.reserved = v.reserved;
    return p;
}

Rec random_rec(std::mt19937& rng) {
    Rec r;
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& x : r)
        x = static_cast<std::uint8_t>(byte(rng));
    return r;
}

void check_fields(const PathRecord& p, const PrValues& v) {
    CHECK(p.service_id == v.service_id);
    CHECK(p.dgid.raw == v.dgid);
    CHECK(p.sgid.raw == v.sgid);
    CHECK(p.dlid == v.dlid);
    CHECK(p.slid == v.slid);
    CHECK(p.raw_traffic == bool(v.raw_traffic));
    CHECK(p.flow_label == v.flow_label);
    CHECK(int(p.hop_limit) == v.hop_limit);
    CHECK(int(p.tclass) == v.tclass);
    CHECK(p.reversible == bool(v.reversible));
    CHECK(int(p.numb_path) == v.numb_path);
    CHECK(p.pkey == v.pkey);
    CHECK(p.qos_class == v.qos_class);
    CHECK(int(p.sl) == v.sl);
    CHECK(int(p.mtu_selector) == v.mtu_sel);
    CHECK(int(p.mtu) == v.mtu);
    CHECK(int(p.rate_selector) == v.rate_sel);
    CHECK(int(p.rate) == v.rate);
    CHECK(int(p.packet_life_selector) == v.life_sel);
    CHECK(int(p.packet_life) == v.life);
    CHECK(int(p.preference) == v.preference);
    CHECK(p.reserved == v.reserved);
}

} // namespace

TEST_CASE("codec: the test's IBA bit writer agrees with libibmad's PathRecord fields",
          "[codec][path_record]") {
    // Guards the reference itself: where libibmad has a field, the IBA-offset writer matches it.
    struct {
        MAD_FIELDS f;
        unsigned bit, len;
    } const fields[] = {{IB_SA_PR_DLID_F, 320, 16},
                        {IB_SA_PR_SLID_F, 336, 16},
                        {IB_SA_PR_NPATH_F, 393, 7},
                        {IB_SA_PR_SL_F, 428, 4}};
    std::mt19937 rng(5);
    for (const auto& f : fields) {
        for (int i = 0; i < 20; ++i) {
            Rec a = random_rec(rng);
            Rec b = a;
            const std::uint32_t v = rng() & ((1u << f.len) - 1);
            mad_set_field(a.data(), 0, f.f, v);
            iba_set(b.data(), f.bit, f.len, v);
            REQUIRE(a == b);
            CHECK(iba_get(a.data(), f.bit, f.len) == mad_get_field(a.data(), 0, f.f));
        }
    }
    Rec g{};
    mad_set_array(g.data(), 0, IB_SA_PR_DGID_F, const_cast<std::uint8_t*>(values_a().dgid.data()));
    Rec h{};
    for (int i = 0; i < 16; ++i)
        iba_set(h.data(), 64 + 8 * i, 8, values_a().dgid[i]);
    CHECK(g == h);
}

TEST_CASE("codec: PathRecord::pack equals the libibmad-built record", "[codec][path_record]") {
    for (const auto& v : {values_a(), complement(values_a()), all_ones(), PrValues{}}) {
        const auto golden = golden_pr(v);
        CHECK(expected_pr(v).bytes() == golden);
        Rec buf;
        buf.fill(0x77);
        expected_pr(v).pack(buf);
        CHECK(buf == golden);
    }
    // The brief's marker values, one at a time on an otherwise zero record.
    PrValues z{};
    z.flow_label = 0xABCDE;
    z.sl = 0xF;
    z.qos_class = 0xFFF;
    CHECK(expected_pr(z).bytes() == golden_pr(z));
}

TEST_CASE("codec: PathRecord::unpack of the libibmad-built record yields the field values",
          "[codec][path_record]") {
    for (const auto& v : {values_a(), complement(values_a()), all_ones()}) {
        const auto golden = golden_pr(v);
        const auto p = PathRecord::unpack(golden);
        check_fields(p, v);
        CHECK(p == expected_pr(v));
        // libibmad reads back what the codec decoded.
        auto g = golden;
        CHECK(mad_get_field(g.data(), 0, IB_SA_PR_DLID_F) == p.dlid);
        CHECK(mad_get_field(g.data(), 0, IB_SA_PR_SLID_F) == p.slid);
        CHECK(mad_get_field(g.data(), 0, IB_SA_PR_NPATH_F) == p.numb_path);
        CHECK(mad_get_field(g.data(), 0, IB_SA_PR_SL_F) == p.sl);
        CHECK(umad_sa_get_rate_mtu_or_life(g[54]) == p.mtu);
        CHECK(umad_sa_get_rate_mtu_or_life(g[55]) == p.rate);
        CHECK(umad_sa_get_rate_mtu_or_life(g[56]) == p.packet_life);
    }
}

TEST_CASE("codec: each PathRecord field packs to exactly its IBA bits", "[codec][path_record]") {
    // Every field at its type's maximum on an otherwise zero record: only that field's bits set.
    struct Case {
        const char* name;
        void (*set)(PathRecord&);
        unsigned bit, len;
    };
    const Case cases[] = {
        {"ServiceID", [](PathRecord& p) { p.service_id = ~0ULL; }, 0, 64},
        {"DGID", [](PathRecord& p) { p.dgid.raw.fill(0xff); }, 64, 128},
        {"SGID", [](PathRecord& p) { p.sgid.raw.fill(0xff); }, 192, 128},
        {"DLID", [](PathRecord& p) { p.dlid = 0xffff; }, 320, 16},
        {"SLID", [](PathRecord& p) { p.slid = 0xffff; }, 336, 16},
        {"RawTraffic", [](PathRecord& p) { p.raw_traffic = true; }, 352, 1},
        {"FlowLabel", [](PathRecord& p) { p.flow_label = 0xffffffff; }, 356, 20},
        {"HopLimit", [](PathRecord& p) { p.hop_limit = 0xff; }, 376, 8},
        {"TClass", [](PathRecord& p) { p.tclass = 0xff; }, 384, 8},
        {"Reversible", [](PathRecord& p) { p.reversible = true; }, 392, 1},
        {"NumbPath", [](PathRecord& p) { p.numb_path = 0xff; }, 393, 7},
        {"PKey", [](PathRecord& p) { p.pkey = 0xffff; }, 400, 16},
        {"QoSClass", [](PathRecord& p) { p.qos_class = 0xffff; }, 416, 12},
        {"SL", [](PathRecord& p) { p.sl = 0xff; }, 428, 4},
        {"MTUSelector", [](PathRecord& p) { p.mtu_selector = 0xff; }, 432, 2},
        {"MTU", [](PathRecord& p) { p.mtu = 0xff; }, 434, 6},
        {"RateSelector", [](PathRecord& p) { p.rate_selector = 0xff; }, 440, 2},
        {"Rate", [](PathRecord& p) { p.rate = 0xff; }, 442, 6},
        {"PktLifeSelector", [](PathRecord& p) { p.packet_life_selector = 0xff; }, 448, 2},
        {"PktLife", [](PathRecord& p) { p.packet_life = 0xff; }, 450, 6},
        {"Preference", [](PathRecord& p) { p.preference = 0xff; }, 456, 8},
        {"Reserved", [](PathRecord& p) { p.reserved.fill(0xff); }, 464, 48},
    };
    for (const auto& c : cases) {
        INFO(c.name);
        PathRecord p;
        c.set(p);
        Rec expected{};
        set_ones(expected.data(), c.bit, c.len);
        CHECK(p.bytes() == expected);
    }
}

TEST_CASE("codec: PathRecord unpack->pack round-trips random records", "[codec][path_record]") {
    // PathRecord keeps the trailing 6 reserved bytes, not the 3 reserved bits after RawTraffic.
    std::mt19937 rng(0xC0DEC);
    for (int i = 0; i < 1000; ++i) {
        const auto in = random_rec(rng);
        auto expected = in;
        iba_set(expected.data(), kReservedBit, kReservedLen, 0);
        const auto p = PathRecord::unpack(in);
        REQUIRE(p.bytes() == expected);
        REQUIRE(PathRecord::unpack(p.bytes()) == p);
        // Each decoded value is what the IBA bit offsets say.
        REQUIRE(p.flow_label == iba_get(in.data(), 356, 20));
        REQUIRE(p.qos_class == iba_get(in.data(), 416, 12));
        REQUIRE(p.sl == iba_get(in.data(), 428, 4));
        REQUIRE(p.numb_path == iba_get(in.data(), 393, 7));
        REQUIRE(p.service_id == iba_get(in.data(), 0, 64));
    }
    // Unpack reads only the first 64 bytes of a longer buffer.
    std::array<std::uint8_t, 200> big{};
    const auto golden = golden_pr(values_a());
    std::copy(golden.begin(), golden.end(), big.begin());
    std::fill(big.begin() + 64, big.end(), 0xff);
    CHECK(PathRecord::unpack(big) == expected_pr(values_a()));
}

TEST_CASE("codec: pr_mask bits are the IBA component mask bits", "[codec][path_record]") {
    const std::uint64_t bits[] = {pr_mask::kServiceIdHigh,
                                  pr_mask::kServiceIdLow,
                                  pr_mask::kDgid,
                                  pr_mask::kSgid,
                                  pr_mask::kDlid,
                                  pr_mask::kSlid,
                                  pr_mask::kRawTraffic,
                                  pr_mask::kFlowLabel,
                                  pr_mask::kHopLimit,
                                  pr_mask::kTClass,
                                  pr_mask::kReversible,
                                  pr_mask::kNumbPath,
                                  pr_mask::kPKey,
                                  pr_mask::kQosClass,
                                  pr_mask::kSl,
                                  pr_mask::kMtuSelector,
                                  pr_mask::kMtu,
                                  pr_mask::kRateSelector,
                                  pr_mask::kRate,
                                  pr_mask::kPacketLifeSelector,
                                  pr_mask::kPacketLife,
                                  pr_mask::kPreference};
    std::uint64_t all = 0;
    std::size_t i = 0;
    for (const auto& f : kPrFields) {
        INFO(f.name);
        CHECK(bits[i++] == 1ULL << f.mask_bit);
        all |= 1ULL << f.mask_bit;
    }
    CHECK(pr_mask::kDefined == all);
    CHECK(pr_mask::kServiceId == 0x3);
    CHECK(pr_mask::kDefined == 0x7FFF7F);
}

// masked_path_record: one test case per component mask bit. The input is random; the output
// must hold exactly that field's bits (IBA offsets, checked against libibmad's where defined).
namespace {
void check_mask_bit(int mask_bit) {
    const PrField* f = nullptr;
    for (const auto& x : kPrFields)
        if (x.mask_bit == mask_bit)
            f = &x;
    REQUIRE(f != nullptr);
    INFO(f->name);
    std::mt19937 rng(1000 + mask_bit);
    for (int i = 0; i < 50; ++i) {
        auto in = i == 0 ? Rec{} : random_rec(rng);
        if (i == 1)
            in.fill(0xff);
        Rec expected{};
        copy_bits(expected.data(), in.data(), f->bit, f->len);
        REQUIRE(masked_path_record(in, 1ULL << mask_bit) == expected);
    }
    // Cross-check with libibmad where it defines the field.
    Rec ones;
    ones.fill(0xff);
    const auto m = masked_path_record(ones, 1ULL << mask_bit);
    auto* mp = const_cast<std::uint8_t*>(m.data());
    switch (mask_bit) {
    case 4:
        CHECK(mad_get_field(mp, 0, IB_SA_PR_DLID_F) == 0xffff);
        break;
    case 5:
        CHECK(mad_get_field(mp, 0, IB_SA_PR_SLID_F) == 0xffff);
        break;
    case 12:
        CHECK(mad_get_field(mp, 0, IB_SA_PR_NPATH_F) == 0x7f);
        break;
    case 15:
        CHECK(mad_get_field(mp, 0, IB_SA_PR_SL_F) == 0xf);
        break;
    case 16:
        CHECK(m[54] == umad_sa_set_rate_mtu_or_life(3, 0));
        break;
    case 17:
        CHECK(m[54] == umad_sa_set_rate_mtu_or_life(0, 0x3f));
        break;
    case 18:
        CHECK(m[55] == umad_sa_set_rate_mtu_or_life(3, 0));
        break;
    case 19:
        CHECK(m[55] == umad_sa_set_rate_mtu_or_life(0, 0x3f));
        break;
    case 20:
        CHECK(m[56] == umad_sa_set_rate_mtu_or_life(3, 0));
        break;
    case 21:
        CHECK(m[56] == umad_sa_set_rate_mtu_or_life(0, 0x3f));
        break;
    case 2: {
        std::array<std::uint8_t, 16> g{};
        mad_get_array(mp, 0, IB_SA_PR_DGID_F, g.data());
        CHECK(std::all_of(g.begin(), g.end(), [](auto b) { return b == 0xff; }));
        break;
    }
    case 3: {
        std::array<std::uint8_t, 16> g{};
        mad_get_array(mp, 0, IB_SA_PR_SGID_F, g.data());
        CHECK(std::all_of(g.begin(), g.end(), [](auto b) { return b == 0xff; }));
        break;
    }
    default:
        break;
    }
    std::size_t ones_count = 0;
    for (auto b : m)
        ones_count += static_cast<std::size_t>(__builtin_popcount(b));
    CHECK(ones_count == f->len);
}
} // namespace

#define MASK_BIT_TEST(bit, name)                                                                   \
    TEST_CASE("codec: masked_path_record keeps only " name " for mask bit " #bit,                  \
              "[codec][path_record][mask]") {                                                      \
        check_mask_bit(bit);                                                                       \
    }
MASK_BIT_TEST(0, "ServiceID high half")
MASK_BIT_TEST(1, "ServiceID low half")
MASK_BIT_TEST(2, "DGID")
MASK_BIT_TEST(3, "SGID")
MASK_BIT_TEST(4, "DLID")
MASK_BIT_TEST(5, "SLID")
MASK_BIT_TEST(6, "RawTraffic")
MASK_BIT_TEST(8, "FlowLabel")
MASK_BIT_TEST(9, "HopLimit")
MASK_BIT_TEST(10, "TClass")
MASK_BIT_TEST(11, "Reversible")
MASK_BIT_TEST(12, "NumbPath")
MASK_BIT_TEST(13, "PKey")
MASK_BIT_TEST(14, "QoSClass")
MASK_BIT_TEST(15, "SL")
MASK_BIT_TEST(16, "MTUSelector")
MASK_BIT_TEST(17, "MTU")
MASK_BIT_TEST(18, "RateSelector")
MASK_BIT_TEST(19, "Rate")
MASK_BIT_TEST(20, "PktLifeSelector")
MASK_BIT_TEST(21, "PktLife")
MASK_BIT_TEST(22, "Preference")

TEST_CASE("codec: masked_path_record with undefined or combined mask bits",
          "[codec][path_record][mask]") {
    Rec ones;
    ones.fill(0xff);
    SECTION("reserved bit 7 and bits 23-63 keep nothing") {
        CHECK(masked_path_record(ones, 1ULL << 7) == Rec{});
        for (int b = 23; b < 64; ++b)
            CHECK(masked_path_record(ones, 1ULL << b) == Rec{});
        CHECK(masked_path_record(ones, 0) == Rec{});
    }
    SECTION("every defined bit keeps every field, never the reserved bits") {
        std::mt19937 rng(99);
        for (int i = 0; i < 100; ++i) {
            const auto in = i == 0 ? ones : random_rec(rng);
            auto expected = in;
            iba_set(expected.data(), kReservedBit, kReservedLen, 0);
            iba_set(expected.data(), kTailReservedBit, kTailLen, 0);
            REQUIRE(masked_path_record(in, ~0ULL) == expected);
            REQUIRE(masked_path_record(in, pr_mask::kDefined) == expected);
        }
    }
    SECTION("a combination is the union of its fields") {
        std::mt19937 rng(1234);
        for (int i = 0; i < 200; ++i) {
            const auto in = random_rec(rng);
            const std::uint64_t mask = (std::uint64_t{rng()} << 32 | rng()) & pr_mask::kDefined;
            Rec expected{};
            for (const auto& f : kPrFields)
                if (mask & (1ULL << f.mask_bit))
                    copy_bits(expected.data(), in.data(), f.bit, f.len);
            INFO("mask " << mask);
            REQUIRE(masked_path_record(in, mask) == expected);
        }
    }
    SECTION("typical request: SGID+DGID+PKey+NumbPath") {
        const auto golden = golden_pr(values_a());
        const auto m = masked_path_record(golden, pr_mask::kSgid | pr_mask::kDgid | pr_mask::kPKey |
                                                      pr_mask::kNumbPath);
        const auto p = PathRecord::unpack(m);
        CHECK(p.sgid.raw == values_a().sgid);
        CHECK(p.dgid.raw == values_a().dgid);
        CHECK(p.pkey == values_a().pkey);
        CHECK(p.numb_path == values_a().numb_path);
        CHECK_FALSE(p.reversible);
        CHECK(p.dlid == 0);
        CHECK(p.flow_label == 0);
        CHECK(p.reserved == std::array<std::uint8_t, 6>{});
    }
}

TEST_CASE("codec: PathRecord in the data area of a libibmad-built SA MAD", "[codec][path_record]") {
    // libibmad addresses PathRecord fields from the SA data offset (IB_SA_DATA_OFFS).
    const auto v = values_a();
    std::array<std::uint8_t, 256> mad{};
    const auto rec = golden_pr(v);
    std::copy(rec.begin(), rec.end(), mad.begin() + IB_SA_DATA_OFFS);
    mad_set_field(mad.data(), IB_SA_DATA_OFFS, IB_SA_PR_DLID_F, 0x1234);
    mad_set_field(mad.data(), IB_SA_DATA_OFFS, IB_SA_PR_SL_F, 0x3);
    auto expected = expected_pr(v);
    expected.dlid = 0x1234;
    expected.sl = 0x3;
    const auto p = PathRecord::unpack(mad::Bytes{mad.data() + IB_SA_DATA_OFFS, 64});
    CHECK(p == expected);
    std::array<std::uint8_t, 256> out{};
    p.pack(mad::MutableBytes{out.data() + IB_SA_DATA_OFFS, 64});
    CHECK(mad_get_field(out.data(), IB_SA_DATA_OFFS, IB_SA_PR_DLID_F) == 0x1234);
    CHECK(mad_get_field(out.data(), IB_SA_DATA_OFFS, IB_SA_PR_SL_F) == 0x3);
    CHECK(mad_get_field(out.data(), IB_SA_DATA_OFFS, IB_SA_PR_NPATH_F) == v.numb_path);
    CHECK(std::equal(out.begin() + IB_SA_DATA_OFFS, out.end() - (256 - 56 - 64),
                     mad.begin() + IB_SA_DATA_OFFS));
}
