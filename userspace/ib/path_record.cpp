#include "ib/path_record.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace localsa::sa {

using namespace mad;

PathRecord PathRecord::unpack(Bytes b) {
    PathRecord r;
    r.service_id = load_be64(b, 0);
    std::copy_n(b.begin() + 8, 16, r.dgid.raw.begin());
    std::copy_n(b.begin() + 24, 16, r.sgid.raw.begin());
    r.dlid = load_be16(b, 40);
    r.slid = load_be16(b, 42);
    const auto w44 = load_be32(b, 44);
    r.raw_traffic = (w44 >> 31) & 1;
    r.flow_label = (w44 >> 8) & 0xfffff;
    r.hop_limit = w44 & 0xff;
    r.tclass = b[48];
    r.reversible = (b[49] >> 7) & 1;
    r.numb_path = b[49] & 0x7f;
    r.pkey = load_be16(b, 50);
    const auto w52 = load_be16(b, 52);
    r.qos_class = w52 >> 4;
    r.sl = w52 & 0xf;
    r.mtu_selector = b[54] >> 6;
    r.mtu = b[54] & 0x3f;
    r.rate_selector = b[55] >> 6;
    r.rate = b[55] & 0x3f;
    r.packet_life_selector = b[56] >> 6;
    r.packet_life = b[56] & 0x3f;
    r.preference = b[57];
    std::copy_n(b.begin() + 58, 6, r.reserved.begin());
    return r;
}

void PathRecord::pack(MutableBytes b) const {
    store_be64(b, 0, service_id);
    std::copy(dgid.raw.begin(), dgid.raw.end(), b.begin() + 8);
    std::copy(sgid.raw.begin(), sgid.raw.end(), b.begin() + 24);
    store_be16(b, 40, dlid);
    store_be16(b, 42, slid);
    store_be32(b, 44, std::uint32_t{raw_traffic} << 31 | (flow_label & 0xfffff) << 8 | hop_limit);
    b[48] = tclass;
    b[49] = static_cast<std::uint8_t>(reversible << 7 | (numb_path & 0x7f));
    store_be16(b, 50, pkey);
    store_be16(b, 52, static_cast<std::uint16_t>((qos_class & 0xfff) << 4 | (sl & 0xf)));
    b[54] = static_cast<std::uint8_t>(mtu_selector << 6 | (mtu & 0x3f));
    b[55] = static_cast<std::uint8_t>(rate_selector << 6 | (rate & 0x3f));
    b[56] = static_cast<std::uint8_t>(packet_life_selector << 6 | (packet_life & 0x3f));
    b[57] = preference;
    std::copy(reserved.begin(), reserved.end(), b.begin() + 58);
}

std::array<std::uint8_t, PathRecord::kSize> PathRecord::bytes() const {
    std::array<std::uint8_t, kSize> out{};
    pack(out);
    return out;
}

namespace {

// (byte offset, byte length, bit mask within the bytes when the field is not whole bytes)
struct Field {
    std::uint64_t bit;
    std::size_t offset;
    std::size_t length;
    std::uint32_t mask; // applied big-endian over `length` bytes (length <= 4) when non-zero
};
constexpr Field kFields[] = {
    {pr_mask::kServiceIdHigh, pr_offset::kServiceId, 4, 0},
    {pr_mask::kServiceIdLow, pr_offset::kServiceId + 4, 4, 0},
    {pr_mask::kDgid, pr_offset::kDgid, 16, 0},
    {pr_mask::kSgid, pr_offset::kSgid, 16, 0},
    {pr_mask::kDlid, pr_offset::kDlid, 2, 0},
    {pr_mask::kSlid, pr_offset::kSlid, 2, 0},
    {pr_mask::kRawTraffic, pr_offset::kRawTrafficFlowLabelHopLimit, 4, 0x80000000},
    {pr_mask::kFlowLabel, pr_offset::kRawTrafficFlowLabelHopLimit, 4, 0x0fffff00},
    {pr_mask::kHopLimit, pr_offset::kRawTrafficFlowLabelHopLimit, 4, 0x000000ff},
    {pr_mask::kTClass, pr_offset::kTClass, 1, 0},
    {pr_mask::kReversible, pr_offset::kReversibleNumbPath, 1, 0x80},
    {pr_mask::kNumbPath, pr_offset::kReversibleNumbPath, 1, 0x7f},
    {pr_mask::kPKey, pr_offset::kPKey, 2, 0},
    {pr_mask::kQosClass, pr_offset::kQosClassSl, 2, 0xfff0},
    {pr_mask::kSl, pr_offset::kQosClassSl, 2, 0x000f},
    {pr_mask::kMtuSelector, pr_offset::kMtu, 1, 0xc0},
    {pr_mask::kMtu, pr_offset::kMtu, 1, 0x3f},
    {pr_mask::kRateSelector, pr_offset::kRate, 1, 0xc0},
    {pr_mask::kRate, pr_offset::kRate, 1, 0x3f},
    {pr_mask::kPacketLifeSelector, pr_offset::kPacketLife, 1, 0xc0},
    {pr_mask::kPacketLife, pr_offset::kPacketLife, 1, 0x3f},
    {pr_mask::kPreference, pr_offset::kPreference, 1, 0},
};

using Words = std::array<std::uint64_t, PathRecord::kSize / 8>;

// Per component mask bit, the record bytes it constrains, as 8 machine words: masking a request
// is then an OR over the set bits and 8 ANDs (this runs for every request).
constexpr std::array<Words, 64> kBitWords = [] {
    std::array<Words, 64> out{};
    for (const auto& f : kFields) {
        std::array<std::uint8_t, PathRecord::kSize> bytes{};
        for (std::size_t i = 0; i < f.length; ++i)
            bytes[f.offset + i] =
                f.mask == 0 ? 0xff : static_cast<std::uint8_t>(f.mask >> (8 * (f.length - 1 - i)));
        const auto bit = static_cast<std::size_t>(std::countr_zero(f.bit));
        for (std::size_t w = 0; w < out[bit].size(); ++w) {
            std::array<std::uint8_t, 8> word{};
            std::copy_n(bytes.begin() + 8 * w, 8, word.begin());
            out[bit][w] = std::bit_cast<std::uint64_t>(word);
        }
    }
    return out;
}();

} // namespace

std::array<std::uint8_t, PathRecord::kSize> masked_path_record(Bytes record,
                                                               std::uint64_t comp_mask) {
    Words m{};
    for (auto bits = comp_mask & pr_mask::kDefined; bits != 0; bits &= bits - 1) {
        const auto& w = kBitWords[static_cast<std::size_t>(std::countr_zero(bits))];
        for (std::size_t i = 0; i < m.size(); ++i)
            m[i] |= w[i];
    }
    std::array<std::uint8_t, PathRecord::kSize> in{};
    std::copy_n(record.begin(), std::min(record.size(), in.size()), in.begin());
    std::array<std::uint8_t, PathRecord::kSize> out;
    for (std::size_t i = 0; i < m.size(); ++i) {
        std::uint64_t v;
        std::memcpy(&v, in.data() + 8 * i, 8);
        v &= m[i];
        std::memcpy(out.data() + 8 * i, &v, 8);
    }
    return out;
}

} // namespace localsa::sa
