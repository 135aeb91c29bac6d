// `localsactl dump`: every cached answer as JSON.
#pragma once

#include "engine/cache/path_cache.hpp"

#include <nlohmann/json.hpp>

namespace localsa {

// Runs on the thread that serves MADs and holds it for the whole cache (tests/bench
// BM_DumpCache measures how long).
nlohmann::json dump_cache(const cache::PathCache& cache);

} // namespace localsa
