// The PathRecord answer cache. A key is the whole question: method, component mask and every
// field the mask constrains (not only the DGID); the value is the master's answer to exactly that
// question from this port: its status and its records.
//
// Stored compactly (96 B per entry in 2 MiB chunks + 10-20 B of index + 8 B of refresh queue per
// path, instead of ~330 B with std::unordered_map nodes and a std::vector per answer):
// entries live in fixed-size chunks and never move; an open-addressing index (linear probing,
// backward-shift deletion) maps a 32-bit hash tag to the entry's number. (method, component
// mask) pairs are interned as shapes. The usual answer, one record, is stored inline, and the key
// is kept as its difference to that record: the master's record echoes most of what was asked
// (SGID, DGID, PKey, ...), so the difference is a few bytes or none. Otherwise (no record, several,
// or a key that differs from its record in many bytes) the entry holds the whole key and the
// records go to their own heap block. A look-up compares the whole 64-byte key either way: a hash
// collision never returns another question's answer.
//
// The master's Reports name a GID or a LID; the entries that name it are found through a second
// open-addressing table of *mentions* (hash tag of the GID or LID, entry and which of its GIDs or
// LIDs), one per GID or LID an entry names, so that a Report costs what it removes, not a scan
// of the cache. A GID or LID named by more than kMaxMentions entries (this port's own GID and
// LID, which nearly every answer names) is not mentioned but counted: a Report about it scans
// the cache, which it mostly empties. Entries that name more than two GIDs or LIDs, and the
// answers to GetTable and the open "no such path" answers (which trap 64 drops whatever they
// name), are listed apart and checked by every Report.
#pragma once

#include "engine/clock.hpp"
#include "ib/bytes.hpp"
#include "ib/gid.hpp"
#include "ib/path_record.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace localsa::cache {

struct PathQueryKey {
    std::uint8_t method = 0;
    std::uint64_t comp_mask = 0;
    std::array<std::uint8_t, sa::PathRecord::kSize> masked{};

    static PathQueryKey from_request(std::uint8_t method, std::uint64_t comp_mask,
                                     mad::Bytes record);
    bool operator==(const PathQueryKey&) const = default;
};

struct PathQueryKeyHash {
    std::size_t operator()(const PathQueryKey& k) const noexcept;
};

// An answer as it is handed to store() and to the for_each / erase_if / stale-check callbacks
// (the cache itself keeps it in the compact form above).
struct PathAnswer {
    std::uint16_t status = 0;
    std::vector<std::uint8_t> records; // concatenated 64-byte PathRecords
    // When the master is asked again (routing changes raise no trap).
    Clock::time_point refresh_at;
    // When the answer stops being served even if the master could not be asked again.
    Clock::time_point expires;
    // store(): when a requester last used the answer. Unset: a new entry counts as unused
    // since its store, an entry stored again keeps its last use (a refresh is no use).
    std::optional<Clock::time_point> used_at;
    // store() of an entry stored again without used_at: keep whether it was used since its last
    // store (a failed refresh put back for a later try), instead of starting unused.
    bool keep_use = false;

    std::size_t record_count() const { return records.size() / sa::PathRecord::kSize; }
    bool negative() const { return status != 0 || records.empty(); }
};

// An answer as find() hands it out: a view into the cache, valid until the cache next changes.
// refresh_at is kept to the millisecond (rounded down: never later than asked).
struct CachedAnswer {
    std::uint16_t status = 0;
    mad::Bytes records;
    Clock::time_point refresh_at;
    Clock::time_point expires;

    std::size_t record_count() const { return records.size() / sa::PathRecord::kSize; }
    bool negative() const { return status != 0 || records.empty(); }
    // A copy in the owning form (the stale check's and the callbacks' type).
    void copy_to(PathAnswer& out) const;
};

class PathCache {
public:
    explicit PathCache(std::size_t max_entries);
    ~PathCache();
    PathCache(const PathCache&) = delete;
    PathCache& operator=(const PathCache&) = delete;

    // The answer, unless absent or expired (an expired entry is dropped). A find is a use: the
    // answer is refreshed at its refresh time (see due_for_refresh).
    std::optional<CachedAnswer> find(const PathQueryKey& key, Clock::time_point now);
    // The answer as it is stored, expired or not, without counting as a use.
    std::optional<CachedAnswer> peek(const PathQueryKey& key) const;
    // Removes one answer; true if it was there.
    bool erase(const PathQueryKey& key);
    // Starts loading the index slot of `key` and returns the key's hash, for the find() below: a
    // caller with other work to do meanwhile hides part of a memory miss.
    std::uint64_t prefetch(const PathQueryKey& key) const;
    std::optional<CachedAnswer> find(const PathQueryKey& key, std::uint64_t hash,
                                     Clock::time_point now);
    // The second step: once the index slot of `hash` (prefetch) has had time to arrive, starts
    // loading the entry it names, so that the entry's miss too overlaps the caller's work.
    void prefetch_entry(std::uint64_t hash) const;
    // Stores an answer; when full, the least recently used of a few entries in storage order
    // makes room (idle answers go first; no LRU list on the hot path).
    void store(const PathQueryKey& key, const PathAnswer& answer);
    // Removes every entry `pred` selects; returns how many.
    std::size_t erase_if(const std::function<bool(const PathQueryKey&, const PathAnswer&)>& pred);
    // Removes every answer that names `gid` (answer_involves); returns how many.
    std::size_t erase_naming_gid(const sa::Gid& gid);
    // Removes every answer with a record from or to `lid` (its SLID or DLID); returns how many.
    std::size_t erase_naming_lid(std::uint16_t lid);
    // Removes every answer to a GetTable and every open "no such path" (open_negative): what a
    // port coming back may change whatever GID it names; returns how many.
    std::size_t erase_tables_and_open_negatives();
    void clear();
    std::size_t size() const { return size_; }
    void for_each(const std::function<void(const PathQueryKey&, const PathAnswer&)>& fn) const;

    // A scan of every entry in storage order that can pause and resume while the cache changes
    // (a dump served in slices between MADs): an entry present for the whole scan is visited
    // exactly once; one stored or erased meanwhile at most once, except that an answer erased
    // after its visit and stored again may be visited again. clear() ends the scan.
    struct ScanCursor {
        std::uint32_t next = 0; // entry number to look at next
    };
    // Visits up to `limit` entries from `cursor` on and advances it; false once it has passed
    // the last entry (nothing is left to visit).
    bool scan(ScanCursor& cursor, std::size_t limit,
              const std::function<void(const PathQueryKey&, const PathAnswer&)>& fn) const;

    // Keys whose refresh time has come and which a requester used within `idle_window` before
    // `now` (a zero window: since the answer was stored or last refreshed), earliest refresh
    // time first, at most `limit` of them. Each is handed out once per
    // store(); a key stored again is scheduled again. A due answer not used within the window is
    // dropped instead (counted in idle_expired()): refresh follows use, an idle cache costs the
    // master nothing. Entries are ordered by their own refresh time, so one that is late (a
    // refresh tried again later) never holds back the others.
    std::vector<PathQueryKey> due_for_refresh(Clock::time_point now, std::size_t limit,
                                              Clock::duration idle_window = Clock::duration::max());
    // Answers dropped by due_for_refresh for lack of use, since construction.
    std::uint64_t idle_expired() const { return idle_expired_; }
    // The earliest refresh time queued, if any (it may belong to an answer erased since: a
    // caller that wakes for it finds nothing due, and the time moves on).
    std::optional<Clock::time_point> next_refresh() const;
    // Called when a store queues a refresh earlier than every one queued before it, with that
    // time: whoever sleeps until next_refresh() wakes earlier.
    void on_earlier_refresh(std::function<void(Clock::time_point)> listener) {
        earlier_refresh_ = std::move(listener);
    }

    // Introspection for tests and the benchmark.
    std::size_t index_capacity() const { return index_.size(); }
    std::size_t shapes() const { return shape_ids_.size(); }
    std::size_t out_of_line_entries() const { return out_of_line_; }
    // Bytes of entry storage mapped outside the heap (the chunks; malloc statistics miss them).
    std::size_t mapped_bytes() const { return chunks_.size() * kChunkBytes; }
    std::size_t mention_capacity() const { return mentions_.size(); }
    // GIDs and LIDs named by so many entries that they are counted, not mentioned.
    std::size_t widespread() const { return widespread_.size(); }
    // Entries every Report checks: GetTable answers, open negative answers, and answers naming
    // more than two GIDs or LIDs.
    std::size_t unmentioned_entries() const { return unmentioned_.size(); }

    // More entries than this naming one GID or LID make it widespread (see the top).
    static constexpr std::size_t kMaxMentions = 64;

private:
    struct Entry;
    struct Slot {
        std::uint32_t tag = 0;   // the key hash's upper half
        std::uint32_t entry = 0; // entry number + 1; 0: empty
    };
    struct Shape {
        std::uint8_t method = 0;
        std::uint64_t comp_mask = 0;
        std::array<std::uint64_t, 8> field_mask{}; // the bytes the mask constrains
        std::uint32_t refs = 0;
    };
    // Entries live in chunks of 2 MiB, each one huge page where the kernel gives one
    // (transparent huge pages, madvise): a look-up at random over 100,000 entries then costs
    // no TLB miss beside its cache misses.
    static constexpr std::size_t kChunkBytes = std::size_t{2} << 20;
    static constexpr std::uint32_t kChunkEntries = 21'845; // 2 MiB / 96 B
    struct ChunkUnmap {
        void operator()(Entry* chunk) const;
    };
    using Chunk = std::unique_ptr<Entry[], ChunkUnmap>;
    static Chunk map_chunk(bool huge);

    Entry& entry(std::uint32_t n) const;
    std::optional<std::uint16_t> shape_of(std::uint8_t method, std::uint64_t comp_mask) const;
    std::optional<std::uint16_t> intern_shape(std::uint8_t method, std::uint64_t comp_mask);
    void release_shape(std::uint16_t id);
    bool matches(const Entry& e, std::uint16_t shape, const PathQueryKey& key) const;
    // The index slot of `key` (with hash `h`), or the empty slot where it would go.
    std::size_t probe(const PathQueryKey& key, std::uint64_t h, std::uint16_t shape) const;
    std::uint32_t allocate_entry();
    void erase_entry(std::uint32_t n);
    static void erase_slot(std::vector<Slot>& table, std::size_t slot);
    static void grow(std::vector<Slot>& table);
    // Erases entry `n` and the index slot that points at it (found from the entry's own key).
    void erase_stored(std::uint32_t n);
    PathQueryKey key_of(const Entry& e) const;
    CachedAnswer view_of(const Entry& e) const;

    // A GID or LID that Reports name.
    using Subject = std::variant<sa::Gid, std::uint16_t>;
    struct Subjects;
    static std::uint32_t tag_of(const Subject& s);
    // What an entry (or its new answer) names; an unmentioned entry's list may be incomplete.
    static Subjects subjects_of(const PathQueryKey& key, mad::Bytes records);
    Subjects subjects_of(std::uint32_t n) const;
    void mention(std::uint32_t n, const Subjects& s);
    void unmention(std::uint32_t n, const Subjects& s);
    void add_mention(std::uint32_t ref, const Subject& s);
    void remove_mention(std::uint32_t ref, const Subject& s);
    // Turns `s` widespread when at least kMaxMentions entries mention it (their mentions go).
    bool make_widespread(const Subject& s);
    // The mentions of `s` (entry number * 4 + which subject of it, + 1), verified.
    std::vector<std::uint32_t> mentioned(const Subject& s) const;
    std::size_t erase_naming(const Subject& s,
                             const std::function<bool(const PathQueryKey&, mad::Bytes)>& names);

    std::size_t max_entries_;
    std::size_t size_ = 0;
    std::size_t out_of_line_ = 0;
    std::vector<Slot> index_;
    std::vector<Chunk> chunks_;
    std::uint32_t high_water_ = 0;   // entries ever handed out (free or in use)
    std::uint32_t free_head_ = 0;    // entry number + 1 of the first free entry; 0: none
    std::uint32_t evict_cursor_ = 0; // where the search for a victim resumes when full
    std::vector<Shape> shapes_;
    std::map<std::pair<std::uint8_t, std::uint64_t>, std::uint16_t> shape_ids_;
    std::vector<std::uint16_t> free_shapes_;
    mutable std::uint16_t last_shape_ = 0; // one-entry memo: requests mostly share one shape
    // A min-heap on the refresh time, 8 bytes an item: the time in milliseconds from
    // queue_base_ (a window of 49 days, moved when a time falls outside it) and the entry.
    // An item is current while its entry is in use and waits for that very time (the entry's
    // queued_at); items of entries erased, stored again or handed out since are skipped.
    struct RefreshItem {
        std::uint32_t at;
        std::uint32_t entry;
        bool operator>(const RefreshItem& o) const { return at > o.at; }
    };
    static constexpr std::uint32_t kNotQueued = 0xffffffffu;
    // `t` in the queue's milliseconds, rounded up (a refresh time: never earlier than asked) or
    // down (the present), kept within the window.
    std::uint32_t queue_ms(Clock::time_point t, bool round_up) const;
    // Moves the window so that `t` falls in its middle (items and entries follow).
    void rebase_queue(Clock::time_point t);
    std::vector<RefreshItem> refresh_queue_;
    Clock::rep queue_base_ = 0;
    std::uint64_t idle_expired_ = 0;
    std::function<void(Clock::time_point)> earlier_refresh_;
    // The mentions: tag of the GID or LID, entry number * 4 + which of its subjects + 1 (slots
    // 0-1 its GIDs, 2-3 its LIDs); linear probing and backward-shift deletion as the index.
    std::vector<Slot> mentions_;
    std::size_t mention_count_ = 0;
    std::map<Subject, std::uint32_t> widespread_; // and how many entries name each
    std::unordered_set<std::uint32_t> unmentioned_;
};

// True when `fn` is true of a GID the question (where its mask constrains it) or any of the
// records names as source or destination; stops at the first.
template <class Fn> bool any_gid_named(const PathQueryKey& key, mad::Bytes records, Fn&& fn) {
    auto gid_at = [&](const std::uint8_t* p) {
        sa::Gid g;
        std::copy_n(p, g.raw.size(), g.raw.begin());
        return fn(g);
    };
    if (((key.comp_mask & sa::pr_mask::kDgid) &&
         gid_at(key.masked.data() + sa::pr_offset::kDgid)) ||
        ((key.comp_mask & sa::pr_mask::kSgid) && gid_at(key.masked.data() + sa::pr_offset::kSgid)))
        return true;
    for (std::size_t off = 0; off + sa::PathRecord::kSize <= records.size();
         off += sa::PathRecord::kSize)
        if (gid_at(records.data() + off + sa::pr_offset::kDgid) ||
            gid_at(records.data() + off + sa::pr_offset::kSgid))
            return true;
    return false;
}

// True when the key or any record of the answer names `gid` as source or destination.
bool answer_involves(const PathQueryKey& key, const PathAnswer& answer, const sa::Gid& gid);
// True for a "no such path" to a Get that does not name both ends by GID (by a LID, say): it
// may be about any port, also one whose GID it does not name.
bool open_negative(const PathQueryKey& key, mad::Bytes records);
// True when a record names `lid` as its SLID or DLID.
bool records_name_lid(mad::Bytes records, std::uint16_t lid);

} // namespace localsa::cache
