// The master's answers to GetTable(PathRecord, SGID = this port [, PKey = p]): every path from
// this port, indexed by destination. A later Get is answered from it only where the master's
// answer is certain: the Get constrains nothing the table does not fix, and exactly one record
// matches (more than one, or a selector, a ServiceID or a field the master computes from its
// QoS policy, and the Get goes to the master as a miss).
#pragma once

#include "engine/cache/path_cache.hpp"
#include "ib/bytes.hpp"
#include "ib/gid.hpp"
#include "ib/path_record.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <vector>

namespace localsa::cache {

class PreloadTable {
public:
    using Record = std::array<std::uint8_t, sa::PathRecord::kSize>;

    // Replaces the table of one PKey (nullopt: the table asked without a PKey), fetched from
    // the master at `fetched`.
    // Returns whether the records differ from the table it replaces (or there was none): a
    // renewal that changed nothing lets the next one wait longer (Preloader's back-off).
    bool replace(std::optional<std::uint16_t> pkey, mad::Bytes records, Clock::time_point expires,
                 Clock::time_point fetched = {});
    // Counts the tables unused again: a renewal that failed waits for a new use.
    void forget_use();
    // Every table answers until `expires` (a trusted routing epoch: until it changes).
    void set_expiry(Clock::time_point expires);
    void clear() { tables_.clear(); }
    // Drops every record to or from `gid`; returns how many.
    std::size_t erase_gid(const sa::Gid& gid);
    // Drops every record to or from `lid`; returns how many.
    std::size_t erase_lid(std::uint16_t lid);
    // Records of the table of `pkey`, if there is one (for the PKey sizing the next transfer).
    std::size_t size_of(std::optional<std::uint16_t> pkey) const;
    std::size_t size() const;
    // Whether any table answered (match() found its record) since it was replaced: the
    // demand that renews a table (Coherence).
    bool used() const;
    // Whether any table still answers at `now`.
    bool live(Clock::time_point now) const;

    // The one record that answers SubnAdmGet(PathRecord) with this mask and record, asked by
    // the port whose GID is `own`; nullopt when the table cannot answer with certainty. The Get
    // must name its source by SGID: without one, the master chooses the source GUID (with SLID
    // only, the port's first alias GUID in its table). `fetched`, if given, receives when the
    // master sent the table. `count_use`: false for the refresh of an answer taken from the table,
    // which is no demand of its own. A table fetched before `fetched_since` does not answer (nor
    // count the use).
    std::optional<Record> match(mad::Bytes request_record, std::uint64_t comp_mask,
                                const sa::Gid& own, Clock::time_point now,
                                Clock::time_point* fetched = nullptr, bool count_use = true,
                                Clock::time_point fetched_since = {}) const;

    // The table (by PKey; nullopt inside: the one asked without a PKey) that would answer a Get
    // with this mask and record from the port whose GID is `own`; nullopt when no table could.
    static std::optional<std::optional<std::uint16_t>>
    table_for(mad::Bytes request_record, std::uint64_t comp_mask, const sa::Gid& own);

    // The component mask bits a Get may use to be answered from the table.
    static constexpr std::uint64_t kAnswerableMask =
        sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kDlid | sa::pr_mask::kSlid |
        sa::pr_mask::kPKey | sa::pr_mask::kNumbPath | sa::pr_mask::kReversible | sa::pr_mask::kSl |
        sa::pr_mask::kTClass | sa::pr_mask::kFlowLabel | sa::pr_mask::kHopLimit |
        sa::pr_mask::kQosClass;

private:
    // A multimap from a destination's key to record indexes, sorted in one vector: 16 bytes an
    // entry where a hash multimap takes about 50 (a 16,384-port table has 16,384 of each).
    template <class Key> class SortedIndex {
    public:
        using Entry = std::pair<Key, std::uint32_t>;
        using Iterator = typename std::vector<Entry>::const_iterator;
        void clear() { entries_.clear(); }
        void add(Key key, std::size_t i) {
            entries_.emplace_back(key, static_cast<std::uint32_t>(i));
        }
        // After the adds: sorted by key, then index (a Get's records in the table's order).
        void seal() {
            std::sort(entries_.begin(), entries_.end());
            entries_.shrink_to_fit();
        }
        std::pair<Iterator, Iterator> equal_range(Key key) const {
            return std::equal_range(
                entries_.begin(), entries_.end(), Entry{key, 0},
                [](const Entry& a, const Entry& b) { return a.first < b.first; });
        }
        // Removes the entry mapping `key` to record `i`, if there is one.
        void erase(Key key, std::size_t i) {
            const auto it = std::lower_bound(entries_.begin(), entries_.end(),
                                             Entry{key, static_cast<std::uint32_t>(i)});
            if (it != entries_.end() && it->first == key && it->second == i)
                entries_.erase(it);
        }

    private:
        std::vector<Entry> entries_;
    };
    struct Table {
        std::vector<Record> records;
        // Records a Report removed: they keep their place, so that the index stays valid, and
        // leave the index (a Report costs the records it removes, not the table).
        std::vector<bool> removed;
        std::size_t live = 0;
        SortedIndex<std::uint64_t> by_dguid; // DGID's interface ID
        SortedIndex<std::uint16_t> by_dlid;
        // The live records per source: this port's GID and LIDs, as a rule.
        std::map<sa::Gid, std::size_t> sgids;
        std::map<std::uint16_t, std::size_t> slids;
        Clock::time_point expires;
        Clock::time_point fetched;
        mutable bool used = false; // match() found a record in it since it came
    };
    // Drops the removed records and builds the index of the rest.
    static void index(Table& t);
    // Removes the live record `i`: marked removed, out of the index and the counts.
    static void remove(Table& t, std::size_t i);
    // Removes, in one pass and a new index, every record `names` selects; returns how many.
    template <class Names> static std::size_t remove_all(Table& t, Names names);
    static bool same_records(const Table& t, const std::vector<Record>& records);

    std::map<std::optional<std::uint16_t>, Table> tables_;
};

} // namespace localsa::cache
