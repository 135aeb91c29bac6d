#include "cache/path_cache.hpp"

#include <algorithm>
#include <cstring>

namespace localsa::cache {

PathQueryKey PathQueryKey::from_request(std::uint8_t method, std::uint64_t comp_mask,
                                        mad::Bytes record) {
    PathQueryKey k;
    k.method = method;
    k.comp_mask = comp_mask;
    k.masked = sa::masked_path_record(record, comp_mask);
    return k;
}

std::size_t PathQueryKeyHash::operator()(const PathQueryKey& k) const noexcept {
    // Word by word, multiply-xorshift mixing: GIDs differ mostly in their last bytes.
    auto mix = [](std::uint64_t h, std::uint64_t w) {
        h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        return h * 0xff51afd7ed558ccdULL;
    };
    std::uint64_t h = mix(k.method, k.comp_mask);
    for (std::size_t off = 0; off < k.masked.size(); off += 8) {
        std::uint64_t w;
        std::memcpy(&w, k.masked.data() + off, 8);
        h = mix(h, w);
    }
    return static_cast<std::size_t>(h ^ (h >> 32));
}

const PathAnswer* PathCache::find(const PathQueryKey& key, Clock::time_point now) {
    auto it = entries_.find(key);
    if (it == entries_.end())
        return nullptr;
    if (it->second.expires <= now) {
        entries_.erase(it);
        return nullptr;
    }
    return &it->second;
}

void PathCache::store(const PathQueryKey& key, PathAnswer answer) {
    if (max_entries_ == 0)
        return;
    if (entries_.size() >= max_entries_ && !entries_.contains(key))
        entries_.erase(entries_.begin());
    if (answer.refresh_at < answer.expires)
        refresh_queue_.emplace_back(answer.refresh_at, key);
    entries_.insert_or_assign(key, std::move(answer));
    // Bound the queue: stale items (erased or re-stored keys) are dropped when it doubles.
    if (refresh_queue_.size() > 2 * entries_.size() + 1024) {
        std::erase_if(refresh_queue_, [this](const auto& item) {
            auto it = entries_.find(item.second);
            return it == entries_.end() || it->second.refresh_at != item.first;
        });
    }
}

std::vector<PathQueryKey> PathCache::due_for_refresh(Clock::time_point now, std::size_t limit) {
    std::vector<PathQueryKey> due;
    while (!refresh_queue_.empty() && due.size() < limit &&
           refresh_queue_.front().first <= now) {
        auto [when, key] = std::move(refresh_queue_.front());
        refresh_queue_.pop_front();
        auto it = entries_.find(key);
        if (it != entries_.end() && it->second.refresh_at == when)
            due.push_back(std::move(key));
    }
    return due;
}

std::size_t
PathCache::erase_if(const std::function<bool(const PathQueryKey&, const PathAnswer&)>& pred) {
    return std::erase_if(entries_, [&](const auto& kv) { return pred(kv.first, kv.second); });
}

void PathCache::for_each(
    const std::function<void(const PathQueryKey&, const PathAnswer&)>& fn) const {
    for (const auto& [k, v] : entries_)
        fn(k, v);
}

bool answer_involves(const PathQueryKey& key, const PathAnswer& answer, const sa::Gid& gid) {
    auto gid_at = [&](const std::uint8_t* p) { return std::memcmp(p, gid.raw.data(), 16) == 0; };
    if (((key.comp_mask & sa::pr_mask::kDgid) && gid_at(key.masked.data() + 8)) ||
        ((key.comp_mask & sa::pr_mask::kSgid) && gid_at(key.masked.data() + 24)))
        return true;
    for (std::size_t off = 0; off + sa::PathRecord::kSize <= answer.records.size();
         off += sa::PathRecord::kSize)
        if (gid_at(answer.records.data() + off + 8) || gid_at(answer.records.data() + off + 24))
            return true;
    return false;
}

} // namespace localsa::cache
