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

PreloadTable::Record PreloadTable::Table::record(const Entry& e) const {
    auto r = shapes[e.shape];
    mad::store_be64(r, pr_offset::kDgidInterfaceId, e.dguid);
    mad::store_be16(r, pr_offset::kDlid, e.dlid);
    return r;
}

std::pair<const PreloadTable::Entry*, const PreloadTable::Entry*>
PreloadTable::Table::with_dguid(std::uint64_t dguid) const {
    const auto [b, e] =
        std::equal_range(entries.begin(), entries.end(), Entry{.dguid = dguid},
                         [](const Entry& a, const Entry& b) { return a.dguid < b.dguid; });
    return {std::to_address(b), std::to_address(e)};
}

std::pair<const std::uint32_t*, const std::uint32_t*>
PreloadTable::Table::with_dlid(std::uint16_t dlid) const {
    const auto b = std::partition_point(by_dlid.begin(), by_dlid.end(),
                                        [&](std::uint32_t i) { return entries[i].dlid < dlid; });
    const auto e = std::partition_point(b, by_dlid.end(),
                                        [&](std::uint32_t i) { return entries[i].dlid == dlid; });
    return {std::to_address(b), std::to_address(e)};
}

void PreloadTable::build(Table& t, mad::Bytes records) {
    std::map<Record, std::uint32_t> shape_of;
    t.shapes.clear();
    t.entries.clear();
    t.entries.reserve(records.size() / sa::PathRecord::kSize);
    for (std::size_t off = 0; off + sa::PathRecord::kSize <= records.size();
         off += sa::PathRecord::kSize) {
        Record shape;
        std::copy_n(records.begin() + static_cast<std::ptrdiff_t>(off), shape.size(),
                    shape.begin());
        Entry e{.dguid = mad::load_be64(shape, pr_offset::kDgidInterfaceId),
                .dlid = mad::load_be16(shape, pr_offset::kDlid)};
        mad::store_be64(shape, pr_offset::kDgidInterfaceId, 0);
        mad::store_be16(shape, pr_offset::kDlid, 0);
        const auto [it, fresh] =
            shape_of.try_emplace(shape, static_cast<std::uint32_t>(t.shapes.size()));
        if (fresh)
            t.shapes.push_back(shape);
        e.shape = it->second;
        t.entries.push_back(e);
    }
    t.shapes.shrink_to_fit();
    // Stable: records to one destination stay in the master's order.
    std::stable_sort(t.entries.begin(), t.entries.end(),
                     [](const Entry& a, const Entry& b) { return a.dguid < b.dguid; });
    compact(t);
}

void PreloadTable::compact(Table& t) {
    std::erase_if(t.entries, [](const Entry& e) { return e.removed; });
    t.entries.shrink_to_fit();
    t.live = t.entries.size();
    t.by_dlid.resize(t.entries.size());
    for (std::size_t i = 0; i < t.by_dlid.size(); ++i)
        t.by_dlid[i] = static_cast<std::uint32_t>(i);
    std::stable_sort(t.by_dlid.begin(), t.by_dlid.end(), [&](std::uint32_t a, std::uint32_t b) {
        return t.entries[a].dlid < t.entries[b].dlid;
    });
    t.by_dlid.shrink_to_fit();
    t.sgids.clear();
    t.slids.clear();
    for (const auto& e : t.entries) {
        const auto& shape = t.shapes[e.shape];
        ++t.sgids[gid_at(shape, pr_offset::kSgid)];
        ++t.slids[mad::load_be16(shape, pr_offset::kSlid)];
    }
}

void PreloadTable::remove(Table& t, std::size_t i) {
    auto& e = t.entries[i];
    const auto& shape = t.shapes[e.shape];
    count_down(t.sgids, gid_at(shape, pr_offset::kSgid));
    count_down(t.slids, mad::load_be16(shape, pr_offset::kSlid));
    e.removed = true;
    --t.live;
}

template <class Names> std::size_t PreloadTable::remove_all(Table& t, Names names) {
    std::size_t n = 0;
    for (auto& e : t.entries) {
        if (!e.removed && names(t.record(e))) {
            e.removed = true;
            ++n;
        }
    }
    if (n != 0)
        compact(t);
    return n;
}

bool PreloadTable::same_records(const Table& a, const Table& b) {
    if (a.live != b.live)
        return false;
    auto next = [](const Table& t, std::size_t& i) {
        while (t.entries[i].removed)
            ++i;
        return t.record(t.entries[i++]);
    };
    for (std::size_t i = 0, j = 0, n = 0; n < a.live; ++n)
        if (next(a, i) != next(b, j))
            return false;
    return true;
}

bool PreloadTable::replace(std::optional<std::uint16_t> pkey, mad::Bytes records,
                           Clock::time_point expires, Clock::time_point fetched) {
    Table t;
    t.expires = expires;
    t.fetched = fetched;
    build(t, records);
    const auto old = tables_.find(pkey);
    const bool changed = old == tables_.end() || !same_records(old->second, t);
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
        const auto [b, e] = t.with_dguid(gid.guid());
        for (auto it = b; it != e; ++it) {
            if (!it->removed && gid_at(t.record(*it), pr_offset::kDgid) == gid) {
                remove(t, static_cast<std::size_t>(it - t.entries.data()));
                ++n;
            }
        }
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
        const auto [b, e] = t.with_dlid(lid);
        for (auto it = b; it != e; ++it) {
            if (!t.entries[*it].removed) {
                remove(t, *it);
                ++n;
            }
        }
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
    auto consider = [&](const Entry& e) {
        if (e.removed)
            return true;
        const auto r = t.record(e);
        if (!agrees(r))
            return true;
        if (found)
            return false; // several paths: the master decides (TOO_MANY_RECORDS or its pick)
        found = r;
        return true;
    };
    if (mask & kDgid) {
        const auto [b, e] = t.with_dguid(mad::load_be64(req, pr_offset::kDgidInterfaceId));
        for (auto i = b; i != e; ++i)
            if (!consider(*i))
                return std::nullopt;
    } else {
        const auto [b, e] = t.with_dlid(mad::load_be16(req, pr_offset::kDlid));
        for (auto i = b; i != e; ++i)
            if (!consider(t.entries[*i]))
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
