#include "engine/cache/preload_table.hpp"

#include <algorithm>
#include <cstring>

namespace localsa::cache {

using namespace sa::pr_mask;

void PreloadTable::index(Table& t) {
    t.by_dguid.clear();
    t.by_dlid.clear();
    for (std::size_t i = 0; i < t.records.size(); ++i) {
        t.by_dguid.emplace(mad::load_be64(t.records[i], 16), i);
        t.by_dlid.emplace(mad::load_be16(t.records[i], 40), i);
    }
}

void PreloadTable::replace(std::optional<std::uint16_t> pkey, mad::Bytes records,
                           Clock::time_point expires, Clock::time_point fetched) {
    Table t;
    t.expires = expires;
    t.fetched = fetched;
    for (std::size_t off = 0; off + sa::PathRecord::kSize <= records.size();
         off += sa::PathRecord::kSize) {
        Record r;
        std::copy_n(records.begin() + off, r.size(), r.begin());
        t.records.push_back(r);
    }
    index(t);
    tables_.insert_or_assign(pkey, std::move(t));
}

std::size_t PreloadTable::erase_gid(const sa::Gid& gid) {
    std::size_t n = 0;
    for (auto& [pkey, t] : tables_) {
        const auto before = t.records.size();
        std::erase_if(t.records, [&](const Record& r) {
            return std::memcmp(r.data() + 8, gid.raw.data(), 16) == 0 ||
                   std::memcmp(r.data() + 24, gid.raw.data(), 16) == 0;
        });
        n += before - t.records.size();
        index(t);
    }
    return n;
}

std::size_t PreloadTable::erase_lid(std::uint16_t lid) {
    std::size_t n = 0;
    for (auto& [pkey, t] : tables_) {
        const auto before = t.records.size();
        std::erase_if(t.records, [&](const Record& r) {
            return mad::load_be16(r, 40) == lid || mad::load_be16(r, 42) == lid;
        });
        n += before - t.records.size();
        index(t);
    }
    return n;
}

std::size_t PreloadTable::size_of(std::optional<std::uint16_t> pkey) const {
    const auto it = tables_.find(pkey);
    return it == tables_.end() ? 0 : it->second.records.size();
}

std::size_t PreloadTable::size() const {
    std::size_t n = 0;
    for (const auto& [pkey, t] : tables_)
        n += t.records.size();
    return n;
}

std::optional<PreloadTable::Record> PreloadTable::match(mad::Bytes req, std::uint64_t mask,
                                                        const sa::Gid& own, Clock::time_point now,
                                                        Clock::time_point* fetched) const {
    if (mask & ~kAnswerableMask)
        return std::nullopt;
    if (!(mask & (kDgid | kDlid)))
        return std::nullopt; // not one destination: a table question, for the master
    if (!(mask & (kSgid | kSlid)))
        return std::nullopt; // no source named: the master picks the sources
    if ((mask & kSgid) && std::memcmp(req.data() + 24, own.raw.data(), 16) != 0)
        return std::nullopt;
    if ((mask & kNumbPath) && (req[49] & 0x7f) == 0)
        return std::nullopt;
    const auto pkey =
        (mask & kPKey) ? std::optional<std::uint16_t>{mad::load_be16(req, 50)} : std::nullopt;
    auto it = tables_.find(pkey);
    if (it == tables_.end() || it->second.expires <= now)
        return std::nullopt;
    const auto& t = it->second;

    // A field the Get fixes must equal the table's value for it (the master computes the same).
    auto agrees = [&](const Record& r) {
        auto same = [&](std::size_t off, std::size_t len, std::uint8_t first_mask = 0xff) {
            if ((req[off] & first_mask) != (r[off] & first_mask))
                return false;
            return std::memcmp(req.data() + off + 1, r.data() + off + 1, len - 1) == 0;
        };
        if ((mask & kDgid) && !same(8, 16))
            return false;
        if ((mask & kDlid) && !same(40, 2))
            return false;
        if ((mask & kSlid) && !same(42, 2))
            return false;
        if ((mask & kReversible) && (req[49] & 0x80) && !(r[49] & 0x80))
            return false; // a reversible path is asked for, the table's is not
        const auto w44q = mad::load_be32(req, 44), w44r = mad::load_be32(r, 44);
        if ((mask & kFlowLabel) && ((w44q ^ w44r) & 0x0fffff00))
            return false;
        if ((mask & kHopLimit) && ((w44q ^ w44r) & 0xff))
            return false;
        if ((mask & kTClass) && req[48] != r[48])
            return false;
        const auto w52q = mad::load_be16(req, 52), w52r = mad::load_be16(r, 52);
        if ((mask & kQosClass) && ((w52q ^ w52r) & 0xfff0))
            return false;
        if ((mask & kSl) && ((w52q ^ w52r) & 0xf))
            return false;
        return true;
    };

    if (fetched)
        *fetched = t.fetched;
    std::optional<Record> found;
    auto consider = [&](std::size_t i) {
        if (!agrees(t.records[i]))
            return true;
        if (found)
            return false; // several paths: the master decides (TOO_MANY_RECORDS or its pick)
        found = t.records[i];
        return true;
    };
    if (mask & kDgid) {
        auto [b, e] = t.by_dguid.equal_range(mad::load_be64(req, 16));
        for (auto i = b; i != e; ++i)
            if (!consider(i->second))
                return std::nullopt;
    } else {
        auto [b, e] = t.by_dlid.equal_range(mad::load_be16(req, 40));
        for (auto i = b; i != e; ++i)
            if (!consider(i->second))
                return std::nullopt;
    }
    return found;
}

} // namespace localsa::cache
