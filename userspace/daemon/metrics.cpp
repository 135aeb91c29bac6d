#include "daemon/metrics.hpp"

#include "engine/counters.hpp"

#include <algorithm>
#include <array>
#include <sstream>
#include <string_view>

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
        for (const auto* state : {"disabled", "loading", "done", "partial"})
            out << "localsa_preload_state{" << labels << ",state=\"" << state << "\"} "
                << (*it == state ? 1 : 0) << '\n';
    }
    if (!port.empty()) {
        out << "# HELP localsa_port_info The served port: LID, SM LID, state, GID.\n"
               "# TYPE localsa_port_info gauge\nlocalsa_port_info{"
            << labels << ",lid=\"" << label_value(port.value("lid", 0)) << "\",sm_lid=\""
            << label_value(port.value("sm_lid", 0)) << "\",state=\""
            << label_value(port.value("state", 0)) << "\",gid=\""
            << label_value(port.value("gid", "")) << "\"} 1\n";
    }
    return out.str();
}

} // namespace localsa
