// The daemon's counters and gauges in the Prometheus text exposition format (version 0.0.4), for
// `localsactl stats --format prometheus` (node-exporter's textfile collector).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace localsa {

// `stats`: what the control socket's "stats" command answers. Every series carries the port's
// ca and port labels; the engine's counters become `localsa_<name>_total` counters, every other
// number a gauge, `preload_state` a one-hot gauge per state, `port` an info series,
// `kernel_redirect` (when present) the kernel's sa_redirect counters, target and state.
std::string prometheus_text(const nlohmann::json& stats);

} // namespace localsa
