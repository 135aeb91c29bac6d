// The questions this port used recently (its PathRecord Gets), kept across restarts so that a
// node asks the master at start for what it uses rather than for every path of the fabric
// (issue 25: above --preload-max-ports no full table is asked). Kept as the questions
// themselves (method, component mask, masked record), not their destinations: asked again,
// each answer lands under the very key its requester asks with. Also carries the fabric size
// seen by the last full table, which decides between the two preloads at the next start.
//
// The file is text, written whole to a temporary file and renamed over the old one:
//   localsa-warm 1
//   ports <N>                      (0: not known)
//   <comp_mask hex> <record hex>   (one question a line, most recently used first)
#pragma once

#include "engine/cache/path_cache.hpp"
#include "engine/clock.hpp"
#include "ib/gid.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace localsa::cache {

class WarmSet {
public:
    explicit WarmSet(std::size_t max) : max_(max) {}

    // A Get used at `when`; only the `max` most recent are kept.
    void note(const PathQueryKey& key, Clock::time_point when);
    // Most recently used first, `max` at most.
    std::vector<PathQueryKey> questions() const;
    std::size_t size() const { return std::min(used_.size(), max_); }
    void set_max(std::size_t max) { max_ = max; }
    // Ports of the fabric (records of this port's last full table); 0: not known.
    std::size_t fabric_ports = 0;

    std::string to_text() const;
    // Replaces the set by the text's; on garbage nothing changes and `error` says why.
    bool from_text(std::string_view text, std::string& error);
    // Atomic: a crash leaves the old file or the new one, never half of one.
    bool save(const std::filesystem::path& file, std::string& error) const;
    // A missing file is an empty set (true, `error` empty); an unreadable or corrupt one
    // leaves the set empty and returns false with `error` set.
    bool load(const std::filesystem::path& file, std::string& error);

private:
    // A question kept as what varies between the Gets of one port (its destination and
    // ServiceID) and the index of its "shape", the question with those zeroed: 32 bytes a
    // question where the question itself is 80 (an all-to-all job uses every other node).
    struct Used {
        std::uint64_t dguid = 0; // DGID's interface ID
        std::uint64_t service_id = 0;
        Clock::rep at = 0; // when last used, since the clock's epoch
        std::uint32_t shape = 0;
        std::uint16_t dlid = 0;
        auto order() const { return std::tie(dguid, dlid, service_id, shape); }
    };
    PathQueryKey question(const Used& u) const;
    void insert(const PathQueryKey& key, Clock::rep at);
    // Indexes into used_ of the `max` most recent, most recent first.
    std::vector<std::uint32_t> most_recent() const;
    // Keeps the `max` most recent and the shapes they use.
    void trim();

    std::size_t max_;
    std::vector<PathQueryKey> shapes_;
    std::vector<Used> used_; // sorted by order(): a lookup is a binary search
};

// An admin's destination (--preload-dest): a GID or a LID, optionally with the PKey to ask it in.
struct Destination {
    std::optional<sa::Gid> gid;
    std::uint16_t lid = 0;
    std::optional<std::uint16_t> pkey;
    // The Get asked for it from `own`: SGID and DGID (or DLID) and the PKey if given.
    PathQueryKey question(const sa::Gid& own) const;
};

// One destination a line ("GID [PKEY]" or "LID [PKEY]", numbers decimal or 0x hex; '#' starts
// a comment). nullopt on the first bad line, `error` naming it.
std::optional<std::vector<Destination>> parse_destinations(std::string_view text,
                                                           std::string& error);

} // namespace localsa::cache
