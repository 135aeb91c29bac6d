#include "engine/counters.hpp"

#include <nlohmann/json.hpp>

namespace localsa {

void to_json(nlohmann::json& j, const Counters& c) {
    j = nlohmann::json::object();
#define LOCALSA_COUNTER_JSON(name) j[#name] = c.name;
    LOCALSA_COUNTERS(LOCALSA_COUNTER_JSON)
#undef LOCALSA_COUNTER_JSON
}

} // namespace localsa
