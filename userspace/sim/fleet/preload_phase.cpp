#include "sim/fleet/preload_phase.hpp"

namespace localsa::fleet {

PreloadPhase::PreloadPhase(boost::asio::any_io_executor executor, std::vector<LocalSa*> sas)
    : executor_(std::move(executor)), sas_(std::move(sas)) {}

coherence::CoherenceConfig PreloadPhase::coherence_config() {
    coherence::CoherenceConfig c;
    c.subscribe = false;
    c.subscription_check = std::chrono::milliseconds{0};
    c.spread = std::chrono::milliseconds{0};
    c.port_poll = std::chrono::hours{1}; // a fleet node's port never changes
    c.preload = true;
    return c;
}

void PreloadPhase::start() {
    coherences_.clear();
    for (auto* sa : sas_) {
        sa->flush();
        coherences_.push_back(std::make_unique<coherence::Coherence>(
            executor_, sa->coherence_parts(), coherence_config()));
        coherences_.back()->start();
    }
}

bool PreloadPhase::finished() const {
    std::size_t ended = 0;
    for (const auto& c : coherences_) {
        const auto& state = c->preload_state();
        ended += state == "done" || state == "partial";
    }
    return ended == sas_.size();
}

std::map<std::string, std::size_t> PreloadPhase::states() const {
    std::map<std::string, std::size_t> count;
    for (const auto& c : coherences_)
        ++count[c->preload_state()];
    if (coherences_.size() < sas_.size())
        count["idle"] += sas_.size() - coherences_.size(); // not started yet
    return count;
}

} // namespace localsa::fleet
