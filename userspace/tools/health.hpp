// `localsactl health`: one verdict and one line of why, for NHC, Slurm's HealthCheckProgram or a
// monitoring check. Exit status as monitoring plugins use it: 0 OK, 1 WARNING, 2 CRITICAL.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace localsa::tools {

enum class Health { ok = 0, warning = 1, critical = 2 };

struct HealthVerdict {
    Health health = Health::ok;
    std::string line; // "OK: ...", "WARNING: ...", "CRITICAL: ..."
};

// `stats`: the daemon's answer to "stats"; `kernel_redirect`: the contents of
// /sys/module/ib_core/parameters/sa_redirect, or nullopt when the running ib_core has no
// sa_redirect (a stock kernel).
HealthVerdict evaluate_health(const nlohmann::json& stats,
                              const std::optional<std::string>& kernel_redirect);

// The daemon did not answer on its control socket.
HealthVerdict unreachable(const std::string& socket, const std::string& why);

} // namespace localsa::tools
