// The PathRecord answer cache. A key is the whole question: method, component mask and every
// field the mask constrains (not only the DGID); the value is the master's answer to exactly that
// question from this port: its status and its records.
#pragma once

#include "mad/bytes.hpp"
#include "sa/gid.hpp"
#include "sa/path_record.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

namespace localsa::cache {

using Clock = std::chrono::steady_clock;

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

struct PathAnswer {
    std::uint16_t status = 0;
    std::vector<std::uint8_t> records; // concatenated 64-byte PathRecords
    // When the master is asked again (routing changes raise no trap).
    Clock::time_point refresh_at;
    // When the answer stops being served even if the master could not be asked again.
    Clock::time_point expires;

    std::size_t record_count() const { return records.size() / sa::PathRecord::kSize; }
    bool negative() const { return status != 0 || records.empty(); }
};

class PathCache {
public:
    explicit PathCache(std::size_t max_entries) : max_entries_(max_entries) {}

    // The answer, unless absent or expired (an expired entry is dropped).
    const PathAnswer* find(const PathQueryKey& key, Clock::time_point now);
    // Stores an answer; when full, an arbitrary entry makes room (bounded memory beats LRU
    // bookkeeping on the hot path; refresh re-fetches what matters).
    void store(const PathQueryKey& key, PathAnswer answer);
    // Removes every entry `pred` selects; returns how many.
    std::size_t erase_if(const std::function<bool(const PathQueryKey&, const PathAnswer&)>& pred);
    void clear() { entries_.clear(); }
    std::size_t size() const { return entries_.size(); }
    void for_each(const std::function<void(const PathQueryKey&, const PathAnswer&)>& fn) const;

    // Keys whose refresh time has come, oldest first, at most `limit` of them. Each is handed out
    // once per store(); a key stored again is scheduled again.
    std::vector<PathQueryKey> due_for_refresh(Clock::time_point now, std::size_t limit);

private:
    std::size_t max_entries_;
    std::unordered_map<PathQueryKey, PathAnswer, PathQueryKeyHash> entries_;
    // (refresh time, key) in store order; entries erased or stored again since are skipped.
    std::deque<std::pair<Clock::time_point, PathQueryKey>> refresh_queue_;
};

// True when the key or any record of the answer names `gid` as source or destination.
bool answer_involves(const PathQueryKey& key, const PathAnswer& answer, const sa::Gid& gid);

} // namespace localsa::cache
