#include "daemon/reload.hpp"

#include <spdlog/spdlog.h>

#include <sstream>

namespace localsa {

namespace {

template <typename T> std::string text(const T& v) {
    std::ostringstream out;
    if constexpr (requires { v.count(); })
        out << v.count();
    else
        out << v;
    return out.str();
}

// Notes a change of one value; returns true when it changed.
template <typename T>
bool note(std::vector<std::string>& list, const char* name, const T& was, const T& now) {
    if (was == now)
        return false;
    list.push_back(std::string(name) + ": " + text(was) + " -> " + text(now));
    return true;
}

} // namespace

ReloadOutcome apply_reload(DaemonOptions& running, const DaemonOptions& fresh, LocalSa& local_sa,
                           coherence::Coherence& coherence) {
    ReloadOutcome out;
    auto& a = out.applied;
    const auto& ou = running.local_sa.upstream;
    const auto& nu = fresh.local_sa.upstream;
    const auto& op = running.local_sa.path_record;
    const auto& np = fresh.local_sa.path_record;
    const auto& oc = running.coherence;
    const auto& nc = fresh.coherence;
    bool sa_changed = false, coherence_changed = false;
    sa_changed |= note(a, "upstream-timeout-ms", ou.try_timeout, nu.try_timeout);
    sa_changed |= note(a, "upstream-retries", ou.retries, nu.retries);
    sa_changed |= note(a, "max-outstanding", ou.max_outstanding, nu.max_outstanding);
    sa_changed |= note(a, "max-queued", ou.max_queued, nu.max_queued);
    sa_changed |= note(a, "path-ttl-s (ms)", op.positive_ttl, np.positive_ttl);
    sa_changed |= note(a, "negative-ttl-ms", op.negative_ttl, np.negative_ttl);
    sa_changed |= note(a, "max-staleness-s (ms)", op.max_staleness, np.max_staleness);
    sa_changed |= note(a, "master-rate", ou.background_rate, nu.background_rate);
    sa_changed |= note(a, "master-burst", ou.background_burst, nu.background_burst);
    sa_changed |= note(a, "requester-deadline-ms", op.requester_deadline, np.requester_deadline);
    coherence_changed |= note(a, "refresh-rate", oc.refresh_rate, nc.refresh_rate);
    coherence_changed |= note(a, "port-poll-ms", oc.port_poll, nc.port_poll);
    coherence_changed |= note(a, "idle-window-s (ms)", oc.idle_window, nc.idle_window);
    coherence_changed |= note(a, "spread-ms", oc.spread, nc.spread);
    coherence_changed |=
        note(a, "subscription-check-s (ms)", oc.subscription_check, nc.subscription_check);
    coherence_changed |= note(a, "master-capacity", oc.master_capacity, nc.master_capacity);
    coherence_changed |=
        note(a, "master-transactions", oc.master_transactions, nc.master_transactions);
    coherence_changed |=
        oc.preload_validity != nc.preload_validity || oc.try_timeout != nc.try_timeout;
    if (note(a, "log-level", running.log_level, fresh.log_level)) {
        spdlog::set_level(spdlog::level::from_str(fresh.log_level));
        running.log_level = fresh.log_level;
    }
    if (sa_changed) {
        running.local_sa.upstream = nu;
        running.local_sa.path_record = np;
        local_sa.reconfigure(running.local_sa);
    }
    if (coherence_changed) {
        running.coherence.refresh_rate = nc.refresh_rate;
        running.coherence.port_poll = nc.port_poll;
        running.coherence.subscription_check = nc.subscription_check;
        running.coherence.preload_validity = nc.preload_validity;
        running.coherence.idle_window = nc.idle_window;
        running.coherence.spread = nc.spread;
        running.coherence.try_timeout = nc.try_timeout;
        running.coherence.master_capacity = nc.master_capacity;
        running.coherence.master_transactions = nc.master_transactions;
        coherence.reconfigure(running.coherence);
    }

    auto& r = out.need_restart;
    note(r, "ca", running.ca, fresh.ca);
    note(r, "port", running.port, fresh.port);
    note(r, "control", running.control, fresh.control);
    note(r, "foreground", running.foreground, fresh.foreground);
    note(r, "sim", running.sim, fresh.sim);
    note(r, "user", running.user, fresh.user);
    note(r, "metrics-listen", running.metrics_listen, fresh.metrics_listen);
    note(r, "netlink", running.netlink, fresh.netlink);
    note(r, "cache-max-entries", running.local_sa.cache_max_entries,
         fresh.local_sa.cache_max_entries);
    note(r, "max-client-subscriptions", running.local_sa.max_client_subscriptions,
         fresh.local_sa.max_client_subscriptions);
    note(r, "no-subscribe", !oc.subscribe, !nc.subscribe);
    note(r, "no-preload", !oc.preload, !nc.preload);
    note(r, "sim-preload", running.sim_preload, fresh.sim_preload);
    note(r, "no-routing-epoch", !oc.routing_epoch, !nc.routing_epoch);
    note(r, "epoch-reread-s (ms)", oc.epoch_reread, nc.epoch_reread);
    // The preload's choice and its warm set are made at start.
    const auto max_ports = [](const coherence::CoherenceConfig& c) {
        return c.preload_max_ports ? std::to_string(*c.preload_max_ports) : std::string("auto");
    };
    note(r, "preload-max-ports", max_ports(oc), max_ports(nc));
    note(r, "warm-set-max", oc.warm_set_max, nc.warm_set_max);
    note(r, "burst-share", oc.burst_share_percent, nc.burst_share_percent);
    note(r, "burst-coalesce-ms", oc.burst_coalesce.count(), nc.burst_coalesce.count());
    note(r, "state-dir", running.state_dir, fresh.state_dir);
    note(r, "preload-dest (destinations)", oc.preload_destinations.size(),
         nc.preload_destinations.size());
    return out;
}

} // namespace localsa
