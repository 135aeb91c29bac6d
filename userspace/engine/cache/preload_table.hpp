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
    // A table keeps each record as its destination (DGID's interface ID, DLID) and the index
    // of its "shape": the record with those two fields zeroed, which the paths from one port
    // share but for their SL, MTU, rate and lifetime. 20 bytes a path with the DLID index,
    // where the record itself is 64 (an all-to-all job's node holds a path to every other).
    struct Entry {
        std::uint64_t dguid = 0;
        std::uint32_t shape = 0;
        std::uint16_t dlid = 0;
        // A Report removed it: it keeps its place, so that the indexes stay valid (a Report
        // costs the records it removes, not the table), and no lookup finds it.
        bool removed = false;
    };
    struct Table {
        std::vector<Record> shapes;
        // Sorted by DGID interface ID, then in the master's order: the DGID index itself.
        std::vector<Entry> entries;
        std::vector<std::uint32_t> by_dlid; // entries' indexes sorted by DLID, then index
        std::size_t live = 0;
        // The live records per source: this port's GID and LIDs, as a rule.
        std::map<sa::Gid, std::size_t> sgids;
        std::map<std::uint16_t, std::size_t> slids;
        Clock::time_point expires;
        Clock::time_point fetched;
        mutable bool used = false; // match() found a record in it since it came

        Record record(const Entry& e) const;
        // The entries whose DGID interface ID is `dguid`, removed ones included.
        std::pair<const Entry*, const Entry*> with_dguid(std::uint64_t dguid) const;
        // The indexes of the entries whose DLID is `dlid`, removed ones included.
        std::pair<const std::uint32_t*, const std::uint32_t*> with_dlid(std::uint16_t dlid) const;
    };
    // Builds a table's entries, shapes and indexes from the master's records (concatenated, in
    // its order).
    static void build(Table& t, mad::Bytes records);
    // Drops the removed records and builds the indexes of the rest.
    static void compact(Table& t);
    // Removes the live entry `i`: marked removed (lookups skip it), out of the counts.
    static void remove(Table& t, std::size_t i);
    // Removes, in one pass and a new index, every record `names` selects; returns how many.
    template <class Names> static std::size_t remove_all(Table& t, Names names);
    static bool same_records(const Table& a, const Table& b);

    std::map<std::optional<std::uint16_t>, Table> tables_;
};

} // namespace localsa::cache
