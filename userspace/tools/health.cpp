#include "tools/health.hpp"

#include <vector>

namespace localsa::tools {

namespace {

constexpr int kPortActive = 4; // PortInfo PortState

std::string joined(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts)
        out += (out.empty() ? "" : "; ") + p;
    return out;
}

} // namespace

HealthVerdict evaluate_health(const nlohmann::json& stats,
                              const std::optional<std::string>& kernel_redirect) {
    const auto port = stats.value("port", nlohmann::json::object());
    const auto ca = port.value("ca", std::string("?"));
    const auto port_number = port.value("port", 0);
    const auto state = port.value("state", 0);
    std::vector<std::string> critical, warning, facts;

    facts.push_back("localsad on " + ca + " port " + std::to_string(port_number) + " (LID " +
                    std::to_string(port.value("lid", 0)) + ")");
    if (state != kPortActive)
        critical.push_back("port " + ca + "/" + std::to_string(port_number) + " is in state " +
                           std::to_string(state) + ", not ACTIVE: nothing can be served");

    const auto sm_lid = std::to_string(port.value("sm_lid", 0));
    if (stats.value("master_known", false))
        facts.push_back("master SA at LID " + sm_lid + " answered");
    else
        warning.push_back("the master SA at LID " + sm_lid +
                          " has not answered yet: every query is relayed or waits");

    const auto preload = stats.value("preload_state", std::string());
    if (preload == "partial")
        warning.push_back("the preload of this port's paths is partial");
    else if (!preload.empty())
        facts.push_back("preload " + preload);

    if (const auto e = stats.value("routing_epoch", nlohmann::json::object()); !e.empty()) {
        if (e.value("trusted", false))
            facts.push_back(
                "routing epoch " + std::to_string(e.value("value", std::uint64_t{0})) + " (" +
                e.value("source", std::string()) + ", changed " +
                std::to_string(static_cast<long>(e.value("seconds_since_change", 0.0))) +
                " s ago)");
        else
            facts.push_back("no routing epoch (" + e.value("source", std::string("none")) +
                            "): TTL refresh");
    }

    if (!kernel_redirect)
        facts.push_back("kernel: stock ib_core (no sa_redirect)");
    else if (kernel_redirect->empty())
        warning.push_back("ib_core.sa_redirect is empty: the kernel's SA queries bypass localsad");
    else
        facts.push_back("kernel sa_redirect " + *kernel_redirect);

    const auto requests = stats.value("pr_requests", std::uint64_t{0});
    if (requests) {
        const auto hits = stats.value("pr_cache_hits", std::uint64_t{0}) +
                          stats.value("pr_preload_hits", std::uint64_t{0});
        facts.push_back("hit rate " + std::to_string(hits * 100 / requests) + "% of " +
                        std::to_string(requests));
    }

    if (!critical.empty())
        return {Health::critical, "CRITICAL: " + joined(critical)};
    if (!warning.empty())
        return {Health::warning, "WARNING: " + joined(warning) + " (" + joined(facts) + ")"};
    return {Health::ok, "OK: " + joined(facts)};
}

HealthVerdict unreachable(const std::string& socket, const std::string& why) {
    return {Health::critical, "CRITICAL: localsad does not answer on " + socket + ": " + why};
}

} // namespace localsa::tools
