#include "engine/cache/path_cache.hpp"

#include "ib/constants.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <new>

#include <sys/mman.h>

namespace localsa::cache {

namespace {

constexpr std::size_t kRecord = sa::PathRecord::kSize;
constexpr std::uint16_t kFree = 0x7fff;      // an entry on the free list
constexpr std::uint16_t kOutOfLine = 0x8000; // shape bit: the block holds the key, not a record
constexpr std::uint16_t kMaxShapes = 0x7ffe;
constexpr std::size_t kInlineDiffs = 4; // (offset, xor) byte pairs that fit the aux word
// Top bit of refresh_lead_ms: a requester used the answer since it was stored (or refreshed).
constexpr std::uint32_t kUsedSinceStore = 0x80000000u;

// Milliseconds of the steady clock, modulo 2^32: an age up to 49 days is their difference.
std::uint32_t ms32(Clock::time_point t) {
    return static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

std::uint64_t load64(const std::uint8_t* p) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
}

std::uint64_t hash_key(std::uint8_t method, std::uint64_t comp_mask, const std::uint8_t* masked) {
    // Two independent multiply-xorshift lanes over the 64 bytes (half the dependency chain of
    // one), then a final avalanche: GIDs differ mostly in their last bytes.
    constexpr std::uint64_t k1 = 0x9e3779b97f4a7c15ULL, k2 = 0xc2b2ae3d27d4eb4fULL;
    std::uint64_t a = comp_mask ^ k1, b = (std::uint64_t{method} + 1) * k2;
    for (std::size_t off = 0; off < kRecord; off += 16) {
        a = (a ^ load64(masked + off)) * k1;
        a ^= a >> 32;
        b = (b ^ load64(masked + off + 8)) * k2;
        b ^= b >> 29;
    }
    std::uint64_t h = a ^ std::rotl(b, 31);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

// Records of an entry that does not hold them inline: one heap block, its byte count first.
std::uint64_t* make_records_block(mad::Bytes records) {
    auto* block = new std::uint64_t[1 + (records.size() + 7) / 8];
    block[0] = records.size();
    std::memcpy(block + 1, records.data(), records.size());
    return block;
}
mad::Bytes records_of_block(std::uint64_t aux) {
    if (aux == 0)
        return {};
    const auto* block = reinterpret_cast<const std::uint64_t*>(aux);
    return {reinterpret_cast<const std::uint8_t*>(block + 1), static_cast<std::size_t>(block[0])};
}
void free_records_block(std::uint64_t aux) {
    delete[] reinterpret_cast<std::uint64_t*>(aux);
}

} // namespace

struct PathCache::Entry {
    // Inline: the answer's one record. Out of line: the key's masked record.
    std::array<std::uint8_t, kRecord> block{};
    // Inline: up to 4 (byte offset, xor) pairs that turn the record's constrained bytes into the
    // key (xor 0: unused). Out of line: the records' heap block (0: none). Free: next free + 1.
    std::uint64_t aux = 0;
    Clock::rep expires = 0;
    std::uint32_t refresh_lead_ms = 0;     // refresh_at = expires - this; | kUsedSinceStore
    std::uint32_t queued_at = 0xffffffffu; // the refresh queue's time of its item (kNotQueued)
    std::uint32_t last_used_ms = 0;        // ms32() of the last find() (or store with used_at)
    std::uint16_t shape = kFree;           // shape id, | kOutOfLine
    std::uint16_t status = 0;
};

struct PathCache::Subjects {
    std::array<sa::Gid, 2> gids{};
    std::array<std::uint16_t, 2> lids{};
    std::uint8_t gid_count = 0;
    std::uint8_t lid_count = 0;
    // A GetTable answer, an open negative one, or one naming more than two GIDs or LIDs:
    // listed apart (the lists above may then be incomplete).
    bool unmentioned = false;

    bool operator==(const Subjects&) const = default;
    // Slots 0-1: the GIDs, 2-3: the LIDs.
    Subject at(std::uint32_t slot) const {
        return slot < 2 ? Subject{gids[slot]} : Subject{lids[slot - 2]};
    }
};

PathQueryKey PathQueryKey::from_request(std::uint8_t method, std::uint64_t comp_mask,
                                        mad::Bytes record) {
    PathQueryKey k;
    k.method = method;
    k.comp_mask = comp_mask;
    k.masked = sa::masked_path_record(record, comp_mask);
    return k;
}

std::size_t PathQueryKeyHash::operator()(const PathQueryKey& k) const noexcept {
    return static_cast<std::size_t>(hash_key(k.method, k.comp_mask, k.masked.data()));
}

void CachedAnswer::copy_to(PathAnswer& out) const {
    out.status = status;
    out.records.assign(records.begin(), records.end());
    out.refresh_at = refresh_at;
    out.expires = expires;
}

PathCache::PathCache(std::size_t max_entries)
    // An entry's number times 4, plus 4, must fit a mention's 32 bits.
    : max_entries_(std::min<std::size_t>(max_entries, std::uint32_t{0x3ffffffe})) {
    static_assert(sizeof(Entry) <= 96, "an entry must stay within the per-path memory budget");
}

PathCache::~PathCache() {
    clear();
}

PathCache::Entry& PathCache::entry(std::uint32_t n) const {
    return chunks_[n / kChunkEntries][n % kChunkEntries];
}

void PathCache::ChunkUnmap::operator()(Entry* chunk) const {
    static_assert(std::is_trivially_destructible_v<Entry>);
    ::munmap(chunk, kChunkBytes);
}

PathCache::Chunk PathCache::map_chunk(bool huge) {
    static_assert(kChunkEntries * sizeof(Entry) <= kChunkBytes &&
                  (kChunkEntries + 1) * sizeof(Entry) > kChunkBytes);
    // Twice the size, then the unaligned ends go: a chunk on a 2 MiB boundary, which a huge
    // page can back. Its entries are constructed as they are handed out (allocate_entry), so
    // only the pages a cache has used are resident: a cache of a few paths costs a few pages,
    // not 2 MiB (a node of a 16,384-node fleet holds tens of answers). Only the chunks after
    // the first ask for huge pages: a cache that has filled one chunk is a large one.
    const auto span = 2 * kChunkBytes;
    void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    const auto aligned = (start + kChunkBytes - 1) & ~(kChunkBytes - 1);
    if (aligned > start)
        ::munmap(p, aligned - start);
    if (const auto tail = start + span - (aligned + kChunkBytes))
        ::munmap(reinterpret_cast<void*>(aligned + kChunkBytes), tail);
    auto* chunk = reinterpret_cast<void*>(aligned);
    if (huge)
        ::madvise(chunk, kChunkBytes, MADV_HUGEPAGE); // a hint: without it, small pages
    return Chunk{static_cast<Entry*>(chunk)};
}

std::optional<std::uint16_t> PathCache::shape_of(std::uint8_t method,
                                                 std::uint64_t comp_mask) const {
    if (last_shape_ < shapes_.size()) {
        const auto& s = shapes_[last_shape_];
        if (s.refs != 0 && s.method == method && s.comp_mask == comp_mask)
            return last_shape_;
    }
    const auto it = shape_ids_.find({method, comp_mask});
    if (it == shape_ids_.end())
        return std::nullopt;
    last_shape_ = it->second;
    return it->second;
}

std::optional<std::uint16_t> PathCache::intern_shape(std::uint8_t method, std::uint64_t comp_mask) {
    if (const auto id = shape_of(method, comp_mask)) {
        ++shapes_[*id].refs;
        return id;
    }
    // Shapes come from requests: bounded, so that odd masks cannot grow the table without end
    // (a question of a shape beyond the bound is simply not cached).
    if (shape_ids_.size() >= kMaxShapes)
        return std::nullopt;
    std::uint16_t id;
    if (!free_shapes_.empty()) {
        id = free_shapes_.back();
        free_shapes_.pop_back();
    } else {
        id = static_cast<std::uint16_t>(shapes_.size());
        shapes_.emplace_back();
    }
    auto& s = shapes_[id];
    s.method = method;
    s.comp_mask = comp_mask;
    std::array<std::uint8_t, kRecord> ones;
    ones.fill(0xff);
    const auto fm = sa::masked_path_record(ones, comp_mask);
    for (std::size_t w = 0; w < 8; ++w)
        s.field_mask[w] = load64(fm.data() + 8 * w);
    s.refs = 1;
    shape_ids_.emplace(std::pair{method, comp_mask}, id);
    return id;
}

void PathCache::release_shape(std::uint16_t id) {
    auto& s = shapes_[id];
    if (--s.refs != 0)
        return;
    shape_ids_.erase({s.method, s.comp_mask});
    free_shapes_.push_back(id);
}

bool PathCache::matches(const Entry& e, std::uint16_t shape, const PathQueryKey& key) const {
    if ((e.shape & ~kOutOfLine) != shape)
        return false;
    if (e.shape & kOutOfLine)
        return std::memcmp(e.block.data(), key.masked.data(), kRecord) == 0;
    // The key is the record's constrained bytes with the stored differences applied.
    const auto& fm = shapes_[shape].field_mask;
    std::array<std::uint8_t, kRecord> expect;
    for (std::size_t w = 0; w < 8; ++w) {
        const auto v = load64(e.block.data() + 8 * w) & fm[w];
        std::memcpy(expect.data() + 8 * w, &v, 8);
    }
    for (std::size_t i = 0; i < kInlineDiffs; ++i)
        expect[(e.aux >> (16 * i)) & 0x3f] ^= static_cast<std::uint8_t>(e.aux >> (16 * i + 8));
    return std::memcmp(expect.data(), key.masked.data(), kRecord) == 0;
}

std::size_t PathCache::probe(const PathQueryKey& key, std::uint64_t h, std::uint16_t shape) const {
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    const auto mask = index_.size() - 1;
    for (auto i = tag & mask;; i = (i + 1) & mask) {
        const auto& s = index_[i];
        if (s.entry == 0 || (s.tag == tag && matches(entry(s.entry - 1), shape, key)))
            return i;
    }
}

void PathCache::grow(std::vector<Slot>& table) {
    std::vector<Slot> old(std::max<std::size_t>(16, table.size() * 2));
    old.swap(table);
    const auto mask = table.size() - 1;
    for (const auto& s : old) {
        if (s.entry == 0)
            continue;
        auto i = s.tag & mask;
        while (table[i].entry != 0)
            i = (i + 1) & mask;
        table[i] = s;
    }
}

void PathCache::erase_slot(std::vector<Slot>& table, std::size_t i) {
    // Backward-shift deletion: no tombstones, probe sequences stay as short as after inserts.
    const auto mask = table.size() - 1;
    table[i] = {};
    for (auto j = (i + 1) & mask; table[j].entry != 0; j = (j + 1) & mask) {
        const auto home = table[j].tag & mask;
        // Slot j may move to i when its home is not in the cyclic range (i, j].
        const bool stays = i < j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        table[i] = table[j];
        table[j] = {};
        i = j;
    }
}

std::uint32_t PathCache::allocate_entry() {
    if (free_head_ != 0) {
        const auto n = free_head_ - 1;
        free_head_ = static_cast<std::uint32_t>(entry(n).aux);
        return n;
    }
    if (high_water_ == chunks_.size() * kChunkEntries)
        chunks_.push_back(map_chunk(!chunks_.empty()));
    std::construct_at(&entry(high_water_)); // first touch of its memory
    return high_water_++;
}

void PathCache::erase_stored(std::uint32_t n) {
    const auto key = key_of(entry(n));
    const auto h = hash_key(key.method, key.comp_mask, key.masked.data());
    const auto mask = index_.size() - 1;
    auto i = static_cast<std::size_t>(h >> 32) & mask;
    while (index_[i].entry != n + 1)
        i = (i + 1) & mask;
    erase_slot(index_, i);
    erase_entry(n);
}

void PathCache::erase_entry(std::uint32_t n) {
    unmention(n, subjects_of(n));
    auto& e = entry(n);
    if (e.shape & kOutOfLine) {
        free_records_block(e.aux);
        --out_of_line_;
    }
    release_shape(e.shape & ~kOutOfLine);
    e.shape = kFree;
    e.aux = free_head_;
    free_head_ = n + 1;
    --size_;
}

PathQueryKey PathCache::key_of(const Entry& e) const {
    const auto& s = shapes_[e.shape & ~kOutOfLine];
    PathQueryKey k;
    k.method = s.method;
    k.comp_mask = s.comp_mask;
    if (e.shape & kOutOfLine) {
        k.masked = e.block;
        return k;
    }
    for (std::size_t w = 0; w < 8; ++w) {
        const auto v = load64(e.block.data() + 8 * w) & s.field_mask[w];
        std::memcpy(k.masked.data() + 8 * w, &v, 8);
    }
    for (std::size_t i = 0; i < kInlineDiffs; ++i)
        k.masked[(e.aux >> (16 * i)) & 0x3f] ^= static_cast<std::uint8_t>(e.aux >> (16 * i + 8));
    return k;
}

CachedAnswer PathCache::view_of(const Entry& e) const {
    CachedAnswer a;
    a.status = e.status;
    a.records = (e.shape & kOutOfLine) ? records_of_block(e.aux) : mad::Bytes{e.block};
    a.expires = Clock::time_point{Clock::duration{e.expires}};
    a.refresh_at = a.expires - std::chrono::milliseconds{e.refresh_lead_ms & ~kUsedSinceStore};
    return a;
}

std::uint64_t PathCache::prefetch(const PathQueryKey& key) const {
    const auto h = hash_key(key.method, key.comp_mask, key.masked.data());
    if (!index_.empty())
        __builtin_prefetch(&index_[(h >> 32) & (index_.size() - 1)]);
    return h;
}

void PathCache::prefetch_entry(std::uint64_t hash) const {
    if (index_.empty())
        return;
    const auto& slot = index_[(hash >> 32) & (index_.size() - 1)];
    if (slot.entry != 0 && slot.tag == static_cast<std::uint32_t>(hash >> 32))
        __builtin_prefetch(&entry(slot.entry - 1));
}

std::optional<CachedAnswer> PathCache::find(const PathQueryKey& key, Clock::time_point now) {
    return find(key, hash_key(key.method, key.comp_mask, key.masked.data()), now);
}

std::optional<CachedAnswer> PathCache::find(const PathQueryKey& key, std::uint64_t hash,
                                            Clock::time_point now) {
    if (size_ == 0)
        return std::nullopt;
    const auto shape = shape_of(key.method, key.comp_mask);
    if (!shape)
        return std::nullopt; // no question of this shape is cached
    const auto i = probe(key, hash, *shape);
    if (index_[i].entry == 0)
        return std::nullopt;
    const auto n = index_[i].entry - 1;
    auto& e = entry(n);
    if (e.expires <= now.time_since_epoch().count()) {
        erase_slot(index_, i);
        erase_entry(n);
        return std::nullopt;
    }
    e.last_used_ms = ms32(now);
    e.refresh_lead_ms |= kUsedSinceStore;
    return view_of(e);
}

std::optional<CachedAnswer> PathCache::peek(const PathQueryKey& key) const {
    if (size_ == 0)
        return std::nullopt;
    const auto shape = shape_of(key.method, key.comp_mask);
    if (!shape)
        return std::nullopt;
    const auto i = probe(key, hash_key(key.method, key.comp_mask, key.masked.data()), *shape);
    if (index_[i].entry == 0)
        return std::nullopt;
    return view_of(entry(index_[i].entry - 1));
}

bool PathCache::erase(const PathQueryKey& key) {
    if (size_ == 0)
        return false;
    const auto shape = shape_of(key.method, key.comp_mask);
    if (!shape)
        return false;
    const auto i = probe(key, hash_key(key.method, key.comp_mask, key.masked.data()), *shape);
    if (index_[i].entry == 0)
        return false;
    const auto n = index_[i].entry - 1;
    erase_slot(index_, i);
    erase_entry(n);
    return true;
}

void PathCache::store(const PathQueryKey& key, const PathAnswer& answer) {
    if (max_entries_ == 0)
        return;
    const auto shape = intern_shape(key.method, key.comp_mask);
    if (!shape)
        return;
    const auto h = hash_key(key.method, key.comp_mask, key.masked.data());
    if ((size_ + 1) * 5 > index_.size() * 4) // load factor <= 0.8
        grow(index_);
    auto i = probe(key, h, *shape);
    std::uint32_t n;
    const bool stored_again = index_[i].entry != 0;
    const auto subjects = subjects_of(key, answer.records);
    bool mentioned = false; // as `subjects` says
    if (stored_again) {
        // Stored again: the old answer goes, the entry and its index slot stay; its mentions
        // too where the new answer names the same GIDs and LIDs (a refresh, as a rule).
        n = index_[i].entry - 1;
        if (const auto old = subjects_of(n); old == subjects)
            mentioned = true;
        else
            unmention(n, old);
        auto& e = entry(n);
        if (e.shape & kOutOfLine) {
            free_records_block(e.aux);
            --out_of_line_;
        }
        release_shape(e.shape & ~kOutOfLine);
    } else {
        if (size_ >= max_entries_) {
            // Full: of the next few entries in storage order, the one unused for longest makes
            // room (idle answers go first; a hit only writes its entry's use time).
            constexpr int kCandidates = 8;
            const auto now_ms = ms32(answer.used_at.value_or(answer.refresh_at));
            std::uint32_t victim = 0, oldest_age = 0;
            for (int c = 0; c < kCandidates; ++c) {
                while (entry(evict_cursor_ % high_water_).shape == kFree)
                    ++evict_cursor_;
                const auto n = static_cast<std::uint32_t>(evict_cursor_++ % high_water_);
                const auto age = now_ms - entry(n).last_used_ms;
                if (c == 0 || age > oldest_age) {
                    victim = n;
                    oldest_age = age;
                }
            }
            erase_stored(victim);
            i = probe(key, h, *shape); // the shift may have moved the empty slot
        }
        n = allocate_entry();
        index_[i] = {static_cast<std::uint32_t>(h >> 32), n + 1};
        ++size_;
    }

    auto& e = entry(n);
    e.status = answer.status;
    e.expires = answer.expires.time_since_epoch().count();
    const auto lead = answer.expires - answer.refresh_at;
    // Rounded up to whole milliseconds, so that the refresh comes no later than asked.
    const auto lead_ms = lead <= Clock::duration::zero()
                             ? 0
                             : (lead + std::chrono::milliseconds{1} - Clock::duration{1}) /
                                   std::chrono::milliseconds{1};
    const bool used_before = stored_again && (e.refresh_lead_ms & kUsedSinceStore);
    e.refresh_lead_ms = static_cast<std::uint32_t>(std::min<std::int64_t>(lead_ms, 0x7fffffff));
    if (answer.used_at || (answer.keep_use && used_before))
        e.refresh_lead_ms |= kUsedSinceStore;
    e.queued_at = kNotQueued;
    if (answer.used_at)
        e.last_used_ms = ms32(*answer.used_at);
    else if (!stored_again) // unused since its store: idle once the window has passed
        e.last_used_ms = ms32(answer.refresh_at) - 0x7fffffffu;

    // Inline when there is one record and the key differs from its constrained bytes in at most
    // kInlineDiffs bytes (the master echoes what was asked, NumbPath aside).
    bool inline_ok = answer.records.size() == kRecord;
    std::uint64_t diffs = 0;
    if (inline_ok) {
        const auto& fm = shapes_[*shape].field_mask;
        std::size_t count = 0;
        for (std::size_t w = 0; w < 8 && inline_ok; ++w) {
            const auto d =
                (load64(answer.records.data() + 8 * w) & fm[w]) ^ load64(key.masked.data() + 8 * w);
            for (std::size_t b = 0; b < 8 && d != 0; ++b) {
                const auto x = static_cast<std::uint8_t>(d >> (8 * b));
                if (x == 0)
                    continue;
                if (count == kInlineDiffs) {
                    inline_ok = false;
                    break;
                }
                diffs |= (std::uint64_t{x} << 8 | (8 * w + b)) << (16 * count++);
            }
        }
    }
    if (inline_ok) {
        std::memcpy(e.block.data(), answer.records.data(), kRecord);
        e.aux = diffs;
        e.shape = *shape;
    } else {
        e.block = key.masked;
        e.aux = answer.records.empty()
                    ? 0
                    : reinterpret_cast<std::uint64_t>(make_records_block(answer.records));
        e.shape = *shape | kOutOfLine;
        ++out_of_line_;
    }
    if (!mentioned)
        mention(n, subjects);

    if (answer.refresh_at < answer.expires) {
        const auto rel = answer.refresh_at.time_since_epoch().count() - queue_base_;
        constexpr Clock::rep kWindow =
            std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds{kNotQueued - 1})
                .count();
        if (refresh_queue_.empty() || rel < 0 || rel >= kWindow)
            rebase_queue(answer.refresh_at);
        e.queued_at = queue_ms(answer.refresh_at, true);
        const bool earliest = refresh_queue_.empty() || e.queued_at < refresh_queue_.front().at;
        refresh_queue_.push_back({e.queued_at, n});
        std::push_heap(refresh_queue_.begin(), refresh_queue_.end(), std::greater<>{});
        if (earliest && earlier_refresh_)
            earlier_refresh_(*next_refresh());
    }
    // Bound the queue: stale items (erased or re-stored entries) are dropped when it doubles.
    if (refresh_queue_.size() > 2 * size_ + 1024) {
        std::erase_if(refresh_queue_, [this](const auto& item) {
            const auto& q = entry(item.entry);
            return q.shape == kFree || q.queued_at != item.at;
        });
        std::make_heap(refresh_queue_.begin(), refresh_queue_.end(), std::greater<>{});
    }
}

std::uint32_t PathCache::queue_ms(Clock::time_point t, bool round_up) const {
    const auto rel = Clock::duration{t.time_since_epoch().count() - queue_base_};
    if (rel <= Clock::duration::zero())
        return 0;
    constexpr auto ms = std::chrono::milliseconds{1};
    const auto n = round_up ? (rel + ms - Clock::duration{1}) / ms : rel / ms;
    return static_cast<std::uint32_t>(std::min<std::int64_t>(n, kNotQueued - 1));
}

void PathCache::rebase_queue(Clock::time_point t) {
    const auto half = std::chrono::duration_cast<Clock::duration>(
                          std::chrono::milliseconds{std::int64_t{1} << 31})
                          .count();
    auto new_base = t.time_since_epoch().count() - half;
    if (refresh_queue_.empty()) {
        queue_base_ = new_base;
        return;
    }
    // Where the queued times and `t` all fit the window (refresh times lie within a day or so
    // of each other), the window is centred on them all and nothing is clamped.
    constexpr auto ms = std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds{1});
    const auto [lo_item, hi_item] =
        std::minmax_element(refresh_queue_.begin(), refresh_queue_.end(),
                            [](const RefreshItem& a, const RefreshItem& b) { return a.at < b.at; });
    const auto lo =
        std::min(queue_base_ + Clock::rep{lo_item->at} * ms.count(), t.time_since_epoch().count());
    const auto hi =
        std::max(queue_base_ + Clock::rep{hi_item->at} * ms.count(), t.time_since_epoch().count());
    const auto window = Clock::rep{kNotQueued - 1} * ms.count();
    if (hi - lo < window)
        new_base = lo - (window - (hi - lo)) / 2;
    // Every queued time moves by the same amount (clamped to the window: monotonic, so the heap
    // stays a heap), in the items and in their entries alike.
    const auto shift_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              Clock::duration{new_base - queue_base_})
                              .count();
    auto moved = [shift_ms](std::uint32_t at) {
        return static_cast<std::uint32_t>(
            std::clamp<std::int64_t>(std::int64_t{at} - shift_ms, 0, std::int64_t{kNotQueued} - 1));
    };
    for (auto& item : refresh_queue_)
        item.at = moved(item.at);
    for (std::uint32_t n = 0; n < high_water_; ++n) {
        auto& e = entry(n);
        if (e.shape != kFree && e.queued_at != kNotQueued)
            e.queued_at = moved(e.queued_at);
    }
    queue_base_ +=
        shift_ms *
        std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds{1}).count();
}

std::optional<Clock::time_point> PathCache::next_refresh() const {
    if (refresh_queue_.empty())
        return std::nullopt;
    return Clock::time_point{Clock::duration{queue_base_}} +
           std::chrono::milliseconds{refresh_queue_.front().at};
}

std::vector<PathQueryKey> PathCache::due_for_refresh(Clock::time_point now, std::size_t limit,
                                                     Clock::duration idle_window) {
    std::vector<PathQueryKey> due;
    const auto now_ms = ms32(now);
    const auto window_ms = std::chrono::duration_cast<std::chrono::milliseconds>(idle_window);
    const auto now_at = queue_ms(now, false);
    while (!refresh_queue_.empty() && due.size() < limit) {
        const auto item = refresh_queue_.front();
        auto& e = entry(item.entry);
        const bool current = e.shape != kFree && e.queued_at == item.at;
        if (current && item.at > now_at)
            break;
        std::pop_heap(refresh_queue_.begin(), refresh_queue_.end(), std::greater<>{});
        refresh_queue_.pop_back();
        if (!current)
            continue;             // erased, stored again or handed out since
        e.queued_at = kNotQueued; // handed out once per store
        const bool idle =
            window_ms.count() == 0
                ? !(e.refresh_lead_ms & kUsedSinceStore)
                : window_ms.count() < 0x7fffffff &&
                      now_ms - e.last_used_ms >= static_cast<std::uint32_t>(window_ms.count());
        if (idle) {
            erase_stored(item.entry);
            ++idle_expired_;
            continue;
        }
        due.push_back(key_of(e));
    }
    return due;
}

std::size_t
PathCache::erase_if(const std::function<bool(const PathQueryKey&, const PathAnswer&)>& pred) {
    std::size_t erased = 0;
    PathAnswer answer; // one buffer for all entries
    for (std::uint32_t n = 0; n < high_water_; ++n) {
        const auto& e = entry(n);
        if (e.shape == kFree)
            continue;
        const auto key = key_of(e);
        view_of(e).copy_to(answer);
        if (!pred(key, answer))
            continue;
        erase_stored(n);
        ++erased;
    }
    return erased;
}

void PathCache::clear() {
    for (std::uint32_t n = 0; n < high_water_; ++n) {
        const auto& e = entry(n);
        if (e.shape != kFree && (e.shape & kOutOfLine))
            free_records_block(e.aux);
    }
    chunks_.clear();
    std::vector<Slot>{}.swap(index_);
    std::vector<Slot>{}.swap(mentions_);
    mention_count_ = 0;
    widespread_.clear();
    unmentioned_.clear();
    shapes_.clear();
    shape_ids_.clear();
    free_shapes_.clear();
    refresh_queue_.clear();
    size_ = out_of_line_ = 0;
    high_water_ = free_head_ = evict_cursor_ = 0;
    queue_base_ = 0;
    last_shape_ = 0;
}

void PathCache::for_each(
    const std::function<void(const PathQueryKey&, const PathAnswer&)>& fn) const {
    PathAnswer answer;
    for (std::uint32_t n = 0; n < high_water_; ++n) {
        const auto& e = entry(n);
        if (e.shape == kFree)
            continue;
        view_of(e).copy_to(answer);
        fn(key_of(e), answer);
    }
}

bool PathCache::scan(ScanCursor& cursor, std::size_t limit,
                     const std::function<void(const PathQueryKey&, const PathAnswer&)>& fn) const {
    PathAnswer answer;
    for (std::size_t visited = 0; cursor.next < high_water_ && visited < limit; ++cursor.next) {
        const auto& e = entry(cursor.next);
        if (e.shape == kFree)
            continue;
        view_of(e).copy_to(answer);
        fn(key_of(e), answer);
        ++visited;
    }
    return cursor.next < high_water_;
}

std::uint32_t PathCache::tag_of(const Subject& s) {
    std::uint64_t h;
    if (const auto* g = std::get_if<sa::Gid>(&s))
        h = load64(g->raw.data()) * 0x9e3779b97f4a7c15ULL ^ load64(g->raw.data() + 8);
    else
        h = std::get<std::uint16_t>(s) ^ 0x5bd1e9955bd1e995ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return static_cast<std::uint32_t>(h >> 32);
}

PathCache::Subjects PathCache::subjects_of(const PathQueryKey& key, mad::Bytes records) {
    Subjects s;
    if (key.method == mad::method::kGetTable || open_negative(key, records)) {
        s.unmentioned = true; // trap 64 drops them all: they are listed whatever they name
        return s;
    }
    auto add_gid = [&s](const std::uint8_t* p) {
        sa::Gid g;
        std::copy_n(p, g.raw.size(), g.raw.begin());
        if (std::find(s.gids.begin(), s.gids.begin() + s.gid_count, g) !=
            s.gids.begin() + s.gid_count)
            return;
        if (s.gid_count == s.gids.size())
            s.unmentioned = true;
        else
            s.gids[s.gid_count++] = g;
    };
    auto add_lid = [&s](std::uint16_t lid) {
        if (std::find(s.lids.begin(), s.lids.begin() + s.lid_count, lid) !=
            s.lids.begin() + s.lid_count)
            return;
        if (s.lid_count == s.lids.size())
            s.unmentioned = true;
        else
            s.lids[s.lid_count++] = lid;
    };
    // The places answer_involves and records_name_lid look at.
    if (key.comp_mask & sa::pr_mask::kDgid)
        add_gid(key.masked.data() + sa::pr_offset::kDgid);
    if (key.comp_mask & sa::pr_mask::kSgid)
        add_gid(key.masked.data() + sa::pr_offset::kSgid);
    for (std::size_t off = 0; off + kRecord <= records.size() && !s.unmentioned; off += kRecord) {
        add_gid(records.data() + off + sa::pr_offset::kDgid);
        add_gid(records.data() + off + sa::pr_offset::kSgid);
        add_lid(mad::load_be16(records, off + sa::pr_offset::kDlid));
        add_lid(mad::load_be16(records, off + sa::pr_offset::kSlid));
    }
    return s;
}

PathCache::Subjects PathCache::subjects_of(std::uint32_t n) const {
    const auto& e = entry(n);
    return subjects_of(key_of(e), view_of(e).records);
}

void PathCache::mention(std::uint32_t n, const Subjects& s) {
    if (s.unmentioned) {
        unmentioned_.insert(n);
        return;
    }
    for (std::uint32_t i = 0; i < s.gid_count; ++i)
        add_mention(n * 4 + i + 1, s.at(i));
    for (std::uint32_t i = 0; i < s.lid_count; ++i)
        add_mention(n * 4 + 2 + i + 1, s.at(2 + i));
}

void PathCache::unmention(std::uint32_t n, const Subjects& s) {
    if (s.unmentioned) {
        unmentioned_.erase(n);
        return;
    }
    for (std::uint32_t i = 0; i < s.gid_count; ++i)
        remove_mention(n * 4 + i + 1, s.at(i));
    for (std::uint32_t i = 0; i < s.lid_count; ++i)
        remove_mention(n * 4 + 2 + i + 1, s.at(2 + i));
}

void PathCache::add_mention(std::uint32_t ref, const Subject& s) {
    if (!widespread_.empty()) {
        if (const auto it = widespread_.find(s); it != widespread_.end()) {
            ++it->second;
            return;
        }
    }
    if ((mention_count_ + 1) * 5 > mentions_.size() * 4) // load factor <= 0.8
        grow(mentions_);
    const auto tag = tag_of(s);
    const auto mask = mentions_.size() - 1;
    std::size_t alike = 0; // the mentions of `s` all lie between its home and the next gap
    auto i = tag & mask;
    for (; mentions_[i].entry != 0; i = (i + 1) & mask)
        alike += mentions_[i].tag == tag;
    if (alike >= kMaxMentions && make_widespread(s)) {
        ++widespread_[s];
        return;
    }
    mentions_[i] = {tag, ref};
    ++mention_count_;
}

void PathCache::remove_mention(std::uint32_t ref, const Subject& s) {
    if (!widespread_.empty()) {
        if (const auto it = widespread_.find(s); it != widespread_.end()) {
            if (--it->second == 0)
                widespread_.erase(it); // mentioned again from the next entry on
            return;
        }
    }
    if (mentions_.empty())
        return;
    const auto mask = mentions_.size() - 1;
    for (auto i = tag_of(s) & mask; mentions_[i].entry != 0; i = (i + 1) & mask) {
        if (mentions_[i].entry == ref) {
            erase_slot(mentions_, i);
            --mention_count_;
            return;
        }
    }
}

bool PathCache::make_widespread(const Subject& s) {
    const auto refs = mentioned(s);
    if (refs.size() < kMaxMentions)
        return false; // the tags are alike, not the GIDs or LIDs
    for (const auto ref : refs)
        remove_mention(ref, s);
    widespread_.emplace(s, static_cast<std::uint32_t>(refs.size()));
    return true;
}

std::vector<std::uint32_t> PathCache::mentioned(const Subject& s) const {
    std::vector<std::uint32_t> refs;
    if (mentions_.empty())
        return refs;
    const auto tag = tag_of(s);
    const auto mask = mentions_.size() - 1;
    for (auto i = tag & mask; mentions_[i].entry != 0; i = (i + 1) & mask) {
        const auto ref = mentions_[i].entry;
        if (mentions_[i].tag == tag && subjects_of((ref - 1) / 4).at((ref - 1) % 4) == s)
            refs.push_back(ref);
    }
    return refs;
}

std::size_t
PathCache::erase_naming(const Subject& s,
                        const std::function<bool(const PathQueryKey&, mad::Bytes)>& names) {
    std::vector<std::uint32_t> doomed;
    auto check = [&](std::uint32_t n) {
        const auto& e = entry(n);
        if (names(key_of(e), view_of(e).records))
            doomed.push_back(n);
    };
    if (const auto it = widespread_.find(s); it != widespread_.end()) {
        if (it->second == size_) { // named by every entry: all go, at once
            const auto n = size_;
            clear();
            return n;
        }
        // Named by most of the cache (this port's own GID or LID): a scan, which empties it.
        for (std::uint32_t n = 0; n < high_water_; ++n)
            if (entry(n).shape != kFree)
                check(n);
    } else {
        for (const auto ref : mentioned(s))
            doomed.push_back((ref - 1) / 4); // an entry mentions a GID or LID once
        for (const auto n : unmentioned_)
            check(n);
    }
    for (const auto n : doomed)
        erase_stored(n);
    return doomed.size();
}

std::size_t PathCache::erase_naming_gid(const sa::Gid& gid) {
    return erase_naming(gid, [&](const PathQueryKey& key, mad::Bytes records) {
        return any_gid_named(key, records, [&](const sa::Gid& g) { return g == gid; });
    });
}

std::size_t PathCache::erase_naming_lid(std::uint16_t lid) {
    return erase_naming(lid, [&](const PathQueryKey&, mad::Bytes records) {
        return records_name_lid(records, lid);
    });
}

std::size_t PathCache::erase_tables_and_open_negatives() {
    std::vector<std::uint32_t> doomed;
    for (const auto n : unmentioned_) {
        const auto& e = entry(n);
        if (shapes_[e.shape & ~kOutOfLine].method == mad::method::kGetTable ||
            open_negative(key_of(e), view_of(e).records))
            doomed.push_back(n);
    }
    for (const auto n : doomed)
        erase_stored(n);
    return doomed.size();
}

bool answer_involves(const PathQueryKey& key, const PathAnswer& answer, const sa::Gid& gid) {
    return any_gid_named(key, answer.records, [&](const sa::Gid& g) { return g == gid; });
}

bool open_negative(const PathQueryKey& key, mad::Bytes records) {
    constexpr auto kBothGids = sa::pr_mask::kSgid | sa::pr_mask::kDgid;
    return records.empty() && key.method == mad::method::kGet &&
           (key.comp_mask & kBothGids) != kBothGids;
}

bool records_name_lid(mad::Bytes records, std::uint16_t lid) {
    for (std::size_t off = 0; off + kRecord <= records.size(); off += kRecord)
        if (mad::load_be16(records, off + sa::pr_offset::kDlid) == lid ||
            mad::load_be16(records, off + sa::pr_offset::kSlid) == lid)
            return true;
    return false;
}

} // namespace localsa::cache
