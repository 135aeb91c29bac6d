// `localsactl dump`: every cached answer as JSON, {"entries": [...]}, written in slices.
#pragma once

#include "daemon/control_server.hpp"
#include "engine/cache/path_cache.hpp"
#include "engine/clock.hpp"

#include <cstddef>
#include <memory>

namespace localsa {

// Answers per slice: ~11 ms of the thread that serves MADs (tests/bench BM_DumpCache measures
// the longest slice), far below the kernel's sa_redirect_timeout_ms (200 ms).
inline constexpr std::size_t kDumpSliceEntries = 1024;

// The dump of `cache` (whose times are read on `clock`) as an answer line in slices of `per_slice`
// answers, taken in storage order
// while the cache goes on serving and changing (PathCache::scan says what such a dump holds). The
// cache must outlive the stream's use; a flush ends the dump.
std::unique_ptr<control::ReplyStream> cache_dump_stream(const cache::PathCache& cache,
                                                        const Clock& clock,
                                                        std::size_t per_slice = kDumpSliceEntries);

} // namespace localsa
