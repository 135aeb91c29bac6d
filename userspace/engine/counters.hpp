// The daemon's counters. One instance, owned by the Daemon and passed by reference to the parts
// that count; `localsactl stats` prints them as JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>

namespace localsa {

#define LOCALSA_COUNTERS(X)                                                                        \
    X(pr_requests)                                                                                 \
    X(pr_cache_hits)                                                                               \
    X(pr_cache_misses)                                                                             \
    X(pr_preload_hits)                                                                             \
    X(pr_coalesced)                                                                                \
    X(pr_forwarded)                                                                                \
    X(pr_errors_local)                                                                             \
    X(pr_waiters_overflow)                                                                         \
    X(pr_relayed_unparsed)                                                                         \
    X(upstream_requests)                                                                           \
    X(upstream_background_requests)                                                                \
    X(upstream_responses)                                                                          \
    X(upstream_timeouts)                                                                           \
    X(upstream_retries)                                                                            \
    X(upstream_busy)                                                                               \
    X(upstream_overflow)                                                                           \
    X(upstream_expired)                                                                            \
    X(upstream_late_responses)                                                                     \
    X(upstream_wrong_source)                                                                       \
    X(proxied_requests)                                                                            \
    X(proxied_responses)                                                                           \
    X(malformed_dropped)                                                                           \
    X(bad_version)                                                                                 \
    X(unsupported_method)                                                                          \
    X(stray_responses)                                                                             \
    X(stray_rmpp)                                                                                  \
    X(foreign_requests)                                                                            \
    X(foreign_reports)                                                                             \
    X(inform_denied)                                                                               \
    X(inform_key_probes)                                                                           \
    X(client_subscribed)                                                                           \
    X(client_unsubscribed)                                                                         \
    X(client_subscriptions_dropped)                                                                \
    X(reports_fanned_out)                                                                          \
    X(report_retries)                                                                              \
    X(reports_undelivered)                                                                         \
    X(send_errors)                                                                                 \
    X(send_timeouts)                                                                               \
    X(cpi_answered)                                                                                \
    X(reports_received)                                                                            \
    X(reports_duplicate)                                                                           \
    X(invalidated_entries)                                                                         \
    X(invalidated_in_flight)                                                                       \
    X(burst_tables)                                                                                \
    X(burst_held)                                                                                  \
    X(pr_busy)                                                                                     \
    X(refreshes)                                                                                   \
    X(refreshes_from_preload)                                                                      \
    X(refresh_changed)                                                                             \
    X(refresh_failed)                                                                              \
    X(resyncs)                                                                                     \
    X(subscription_checks)                                                                         \
    X(subscriptions_lost)                                                                          \
    X(preload_transactions)                                                                        \
    X(warm_queries)                                                                                \
    X(stale_served)                                                                                \
    X(stale_refused)                                                                               \
    X(nl_resolves)                                                                                 \
    X(nl_answered)                                                                                 \
    X(nl_errors)                                                                                   \
    X(nl_timeouts)                                                                                 \
    X(nl_given_up)                                                                                 \
    X(nl_other_port)                                                                               \
    X(nl_malformed)                                                                                \
    X(nl_foreign_replies)

struct Counters {
#define LOCALSA_COUNTER_FIELD(name) std::uint64_t name = 0;
    LOCALSA_COUNTERS(LOCALSA_COUNTER_FIELD)
#undef LOCALSA_COUNTER_FIELD
};

void to_json(nlohmann::json& j, const Counters& c);

} // namespace localsa
