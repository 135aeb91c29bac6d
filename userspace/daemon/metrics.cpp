#include "daemon/metrics.hpp"

#include "engine/counters.hpp"

#include <algorithm>
#include <array>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace localsa {

namespace {

constexpr std::array kCounterNames = {
#define LOCALSA_COUNTER_NAME(name) std::string_view{#name},
    LOCALSA_COUNTERS(LOCALSA_COUNTER_NAME)
#undef LOCALSA_COUNTER_NAME
};

bool is_counter(std::string_view name) {
    return std::find(kCounterNames.begin(), kCounterNames.end(), name) != kCounterNames.end();
}

// Label values escape backslash, double quote and newline (exposition format).
std::string escaped(std::string_view v) {
    std::string out;
    for (const char c : v) {
        if (c == '\\' || c == '"')
            out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

std::string label_value(const nlohmann::json& v) {
    return escaped(v.is_string() ? v.get<std::string>() : v.dump());
}

// The patched kernel's sa_redirect of this port (daemon/kernel_redirect.hpp).
void kernel_redirect_text(std::ostringstream& out, const nlohmann::json& k,
                          const std::string& labels) {
    static constexpr std::array<std::pair<const char*, const char*>, 3> kCounters{{
        {"redirected", "SA queries the kernel sent to the redirect target"},
        {"fallen_back", "of those, sent again to the SM (no answer or refused)"},
        {"probed", "ClassPortInfo probes of a fixed redirect target"},
    }};
    for (const auto& [name, help] : kCounters) {
        if (!k.contains(name) || !k[name].is_number())
            continue;
        const std::string metric = std::string("localsa_kernel_") + name + "_total";
        out << "# HELP " << metric << " The kernel's sa_redirect: " << help
            << " (debugfs ib_sa/DEV/redirect).\n# TYPE " << metric << " counter\n"
            << metric << '{' << labels << "} " << k[name].dump() << '\n';
    }
    if (k.contains("target") && k["target"].is_number())
        out << "# HELP localsa_kernel_redirect_target The LID the kernel sends this port's SA "
               "queries to (0: not redirected).\n# TYPE localsa_kernel_redirect_target gauge\n"
               "localsa_kernel_redirect_target{"
            << labels << "} " << k["target"].dump() << '\n';
    if (k.contains("state") && k["state"].is_string()) {
        out << "# HELP localsa_kernel_redirect_state The kernel's sa_redirect state of this port: "
               "1 for the current state.\n# TYPE localsa_kernel_redirect_state gauge\n";
        for (const char* state : {"off", "redirect", "no-agent", "fallback"})
            out << "localsa_kernel_redirect_state{" << labels << ",state=\"" << state << "\"} "
                << (k["state"] == state ? 1 : 0) << '\n';
    }
}

} // namespace

std::string prometheus_text(const nlohmann::json& stats) {
    const auto port = stats.value("port", nlohmann::json::object());
    const std::string labels = "ca=\"" + label_value(port.value("ca", "")) + "\",port=\"" +
                               label_value(port.value("port", 0)) + "\"";
    std::ostringstream out;
    for (const auto& [name, value] : stats.items()) {
        if (!value.is_number())
            continue;
        const bool counter = is_counter(name);
        const std::string metric = "localsa_" + name + (counter ? "_total" : "");
        // The meaning of each name is documented once, in localsad(8), CONTROL.
        out << "# HELP " << metric << " localsad " << (counter ? "counter " : "gauge ") << name
            << " (localsad(8), CONTROL)\n";
        out << "# TYPE " << metric << (counter ? " counter\n" : " gauge\n");
        out << metric << '{' << labels << "} " << value.dump() << '\n';
    }
    if (const auto it = stats.find("preload_state"); it != stats.end() && it->is_string()) {
        out << "# HELP localsa_preload_state Preload of this port's paths: 1 for the current "
               "state.\n# TYPE localsa_preload_state gauge\n";
        for (const auto* state : {"disabled", "loading", "done", "partial", "warming", "warm"})
            out << "localsa_preload_state{" << labels << ",state=\"" << state << "\"} "
                << (*it == state ? 1 : 0) << '\n';
    }
    if (const auto it = stats.find("routing_epoch"); it != stats.end() && it->is_object()) {
        const auto& e = *it;
        out << "# HELP localsa_routing_epoch The master's routing epoch (0: none seen).\n"
               "# TYPE localsa_routing_epoch gauge\nlocalsa_routing_epoch{"
            << labels << ",source=\"" << e.value("source", std::string("none")) << "\"} "
            << e.value("value", std::uint64_t{0}) << '\n';
        out << "# HELP localsa_routing_epoch_trusted 1 while answers are kept until the routing "
               "epoch changes, 0 on the TTL rules.\n# TYPE localsa_routing_epoch_trusted gauge\n"
               "localsa_routing_epoch_trusted{"
            << labels << "} " << (e.value("trusted", false) ? 1 : 0) << '\n';
        out << "# HELP localsa_routing_epoch_age_seconds Seconds since the routing epoch last "
               "changed (-1: none seen).\n# TYPE localsa_routing_epoch_age_seconds gauge\n"
               "localsa_routing_epoch_age_seconds{"
            << labels << "} " << e.value("seconds_since_change", -1.0) << '\n';
    }
    if (!port.empty()) {
        out << "# HELP localsa_port_info The served port: LID, SM LID, state, GID.\n"
               "# TYPE localsa_port_info gauge\nlocalsa_port_info{"
            << labels << ",lid=\"" << label_value(port.value("lid", 0)) << "\",sm_lid=\""
            << label_value(port.value("sm_lid", 0)) << "\",state=\""
            << label_value(port.value("state", 0)) << "\",gid=\""
            << label_value(port.value("gid", "")) << "\"} 1\n";
    }
    if (const auto it = stats.find("kernel_redirect"); it != stats.end() && it->is_object())
        kernel_redirect_text(out, *it, labels);
    return out.str();
}

} // namespace localsa
