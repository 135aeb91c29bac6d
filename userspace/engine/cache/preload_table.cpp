#include "engine/cache/preload_table.hpp"

#include <algorithm>
#include <cstring>

namespace localsa::cache {

using namespace sa::pr_mask;
namespace pr_offset = sa::pr_offset;

namespace {

sa::Gid gid_at(const PreloadTable::Record& r, std::size_t off) {
    sa::Gid g;
    std::copy_n(r.begin() + static_cast<std::ptrdiff_t>(off), g.raw.size(), g.raw.begin());
    return g;
}

template <class Map, class Key> void count_down(Map& counts, const Key& key) {
    const auto it = counts.find(key);
    if (it != counts.end() && --it->second == 0)
        counts.erase(it);
}

} // namespace

void PreloadTable::index(Table& t) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < t.records.size(); ++i)
        if (i >= t.removed.size() || !t.removed[i])
            t.records[kept++] = t.records[i];
    t.records.resize(kept);
    t.removed.assign(kept, false);
    t.live = kept;
    t.by_dguid.clear();
    t.by_dlid.clear();
    t.sgids.clear();
    t.slids.clear();
    for (std::size_t i = 0; i < t.records.size(); ++i) {
        const auto& r = t.records[i];
        t.by_dguid.add(mad::load_be64(r, pr_offset::kDgidInterfaceId), i);
        t.by_dlid.add(mad::load_be16(r, pr_offset::kDlid), i);
        ++t.sgids[gid_at(r, pr_offset::kSgid)];
        ++t.slids[mad::load_be16(r, pr_offset::kSlid)];
    }
    t.by_dguid.seal();
    t.by_dlid.seal();
}

void PreloadTable::remove(Table& t, std::size_t i) {
    const auto& r = t.records[i];
    t.by_dguid.erase(mad::load_be64(r, pr_offset::kDgidInterfaceId), i);
    t.by_dlid.erase(mad::load_be16(r, pr_offset::kDlid), i);
    count_down(t.sgids, gid_at(r, pr_offset::kSgid));
    count_down(t.slids, mad::load_be16(r, pr_offset::kSlid));
    t.removed[i] = true;
    --t.live;
}

template <class Names> std::size_t PreloadTable::remove_all(Table& t, Names names) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < t.records.size(); ++i) {
        if (!t.removed[i] && names(t.records[i])) {
            t.removed[i] = true;
            ++n;
        }
    }
    if (n != 0)
        index(t);
    return n;
}

bool PreloadTable::same_records(const Table& t, const std::vector<Record>& records) {
    if (t.live != records.size())
        return false;
    std::size_t j = 0;
    for (std::size_t i = 0; i < t.records.size(); ++i)
        if (!t.removed[i] && t.records[i] != records[j++])
            return false;
    return true;
}

bool PreloadTable::replace(std::optional<std::uint16_t> pkey, mad::Bytes records,
                           Clock::time_point expires, Clock::time_point fetched) {
    Table t;
    t.expires = expires;
    t.fetched = fetched;
    t.records.reserve(records.size() / sa::PathRecord::kSize);
    for (std::size_t off = 0; off + sa::PathRecord::kSize <= records.size();
         off += sa::PathRecord::kSize) {
        Record r;
        std::copy_n(records.begin() + off, r.size(), r.begin());
        t.records.push_back(r);
    }
    index(t);
    const auto old = tables_.find(pkey);
    const bool changed = old == tables_.end() || !same_records(old->second, t.records);
    tables_.insert_or_assign(pkey, std::move(t));
    return changed;
}

void PreloadTable::forget_use() {
    for (auto& [pkey, t] : tables_)
        t.used = false;
}

void PreloadTable::set_expiry(Clock::time_point expires) {
    for (auto& [pkey, t] : tables_)
        t.expires = expires;
}

std::size_t PreloadTable::erase_gid(const sa::Gid& gid) {
    std::size_t n = 0;
    for (auto& [pkey, t] : tables_) {
        if (t.sgids.contains(gid)) {
            // This port's own GID: the whole table goes, in one pass.
            n += remove_all(t, [&](const Record& r) {
                return gid_at(r, pr_offset::kDgid) == gid || gid_at(r, pr_offset::kSgid) == gid;
            });
            continue;
        }
        const auto [b, e] = t.by_dguid.equal_range(gid.guid());
        std::vector<std::size_t> doomed;
        for (auto it = b; it != e; ++it)
            if (gid_at(t.records[it->second], pr_offset::kDgid) == gid)
                doomed.push_back(it->second);
        for (const auto i : doomed)
            remove(t, i);
        n += doomed.size();
    }
    return n;
}

std::size_t PreloadTable::erase_lid(std::uint16_t lid) {
    std::size_t n = 0;
    for (auto& [pkey, t] : tables_) {
        if (t.slids.contains(lid)) {
            n += remove_all(t, [&](const Record& r) {
                return mad::load_be16(r, pr_offset::kDlid) == lid ||
                       mad::load_be16(r, pr_offset::kSlid) == lid;
            });
            continue;
        }
        const auto [b, e] = t.by_dlid.equal_range(lid);
        std::vector<std::size_t> doomed;
        for (auto it = b; it != e; ++it)
            doomed.push_back(it->second);
        for (const auto i : doomed)
            remove(t, i);
        n += doomed.size();
    }
    return n;
}

std::size_t PreloadTable::size_of(std::optional<std::uint16_t> pkey) const {
    const auto it = tables_.find(pkey);
    return it == tables_.end() ? 0 : it->second.live;
}

bool PreloadTable::used() const {
    return std::any_of(tables_.begin(), tables_.end(), [](const auto& t) { return t.second.used; });
}

bool PreloadTable::live(Clock::time_point now) const {
    return std::any_of(tables_.begin(), tables_.end(),
                       [&](const auto& t) { return t.second.expires > now; });
}

std::size_t PreloadTable::size() const {
    std::size_t n = 0;
    for (const auto& [pkey, t] : tables_)
        n += t.live;
    return n;
}

std::optional<std::optional<std::uint16_t>>
PreloadTable::table_for(mad::Bytes req, std::uint64_t mask, const sa::Gid& own) {
    if (mask & ~kAnswerableMask)
        return std::nullopt;
    if (!(mask & (kDgid | kDlid)))
        return std::nullopt; // not one destination: a table question, for the master
    // No SGID: the master picks the source's GUID. Without SLID it walks every port; with it,
    // OpenSM (osm_pr_rcv_process) takes the first of that port's GUIDs in its alias GUID table,
    // which with alias GUIDs need not be the port GUID the table's records carry.
    if (!(mask & kSgid))
        return std::nullopt;
    if (std::memcmp(req.data() + pr_offset::kSgid, own.raw.data(), 16) != 0)
        return std::nullopt;
    if ((mask & kNumbPath) && (req[pr_offset::kReversibleNumbPath] & 0x7f) == 0)
        return std::nullopt;
    return (mask & kPKey) ? std::optional<std::uint16_t>{mad::load_be16(req, pr_offset::kPKey)}
                          : std::nullopt;
}

std::optional<PreloadTable::Record> PreloadTable::match(mad::Bytes req, std::uint64_t mask,
                                                        const sa::Gid& own, Clock::time_point now,
                                                        Clock::time_point* fetched, bool count_use,
                                                        Clock::time_point fetched_since) const {
    const auto table = table_for(req, mask, own);
    if (!table)
        return std::nullopt;
    const auto& pkey = *table;
    auto it = tables_.find(pkey);
    if (it == tables_.end() || it->second.expires <= now || it->second.fetched < fetched_since)
        return std::nullopt;
    const auto& t = it->second;

    // A field the Get fixes must equal the table's value for it (the master computes the same).
    auto agrees = [&](const Record& r) {
        auto same = [&](std::size_t off, std::size_t len, std::uint8_t first_mask = 0xff) {
            if ((req[off] & first_mask) != (r[off] & first_mask))
                return false;
            return std::memcmp(req.data() + off + 1, r.data() + off + 1, len - 1) == 0;
        };
        if ((mask & kDgid) && !same(pr_offset::kDgid, 16))
            return false;
        if ((mask & kDlid) && !same(pr_offset::kDlid, 2))
            return false;
        if ((mask & kSlid) && !same(pr_offset::kSlid, 2))
            return false;
        constexpr auto kRevNumb = pr_offset::kReversibleNumbPath;
        if ((mask & kReversible) && (req[kRevNumb] & 0x80) && !(r[kRevNumb] & 0x80))
            return false; // a reversible path is asked for, the table's is not
        constexpr auto kW44 = pr_offset::kRawTrafficFlowLabelHopLimit;
        const auto w44q = mad::load_be32(req, kW44), w44r = mad::load_be32(r, kW44);
        if ((mask & kFlowLabel) && ((w44q ^ w44r) & 0x0fffff00))
            return false;
        if ((mask & kHopLimit) && ((w44q ^ w44r) & 0xff))
            return false;
        if ((mask & kTClass) && req[pr_offset::kTClass] != r[pr_offset::kTClass])
            return false;
        constexpr auto kW52 = pr_offset::kQosClassSl;
        const auto w52q = mad::load_be16(req, kW52), w52r = mad::load_be16(r, kW52);
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
        auto [b, e] = t.by_dguid.equal_range(mad::load_be64(req, pr_offset::kDgidInterfaceId));
        for (auto i = b; i != e; ++i)
            if (!consider(i->second))
                return std::nullopt;
    } else {
        auto [b, e] = t.by_dlid.equal_range(mad::load_be16(req, pr_offset::kDlid));
        for (auto i = b; i != e; ++i)
            if (!consider(i->second))
                return std::nullopt;
    }
    if (found) {
        if (count_use)
            t.used = true;
        // The answer to a Get: OpenSM's first round (pr_rcv_get_port_pair_paths) starts at the
        // pair the Get fixes, or the first LIDs, and a Get stops at its first path, Preference
        // 0. The table's Preference 2 is that of an off-diagonal pair in a GetTable.
        (*found)[pr_offset::kPreference] = 0;
    }
    return found;
}

} // namespace localsa::cache
