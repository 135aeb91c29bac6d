// SIGHUP: the configuration read again and applied to the running daemon, cache kept.
#pragma once

#include "daemon/options.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"

#include <string>
#include <vector>

namespace localsa {

struct ReloadOutcome {
    std::vector<std::string> applied;      // "name: old -> new" for each changed value applied
    std::vector<std::string> need_restart; // options that changed but only apply at start
};

// What differs between `running` and `fresh`: values that can change while running are
// applied to `local_sa`, `coherence` and the log level, and copied into `running`; the rest
// are listed in need_restart and keep their running values.
ReloadOutcome apply_reload(DaemonOptions& running, const DaemonOptions& fresh, LocalSa& local_sa,
                           coherence::Coherence& coherence);

} // namespace localsa
