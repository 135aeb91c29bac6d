#include "sim/fleet/preload_phase.hpp"

#include <algorithm>

namespace localsa::fleet {

namespace {
bool ended(const coherence::Coherence& c) {
    const auto& state = c.preload_state();
    return state == "done" || state == "partial";
}
// How often waiting nodes look for a free place: short against a table's transfer (~0.1 s on
// a fabric, ~0.7 s in a TCG guest), so the port stays busy.
constexpr std::chrono::milliseconds kAdmitPoll{10};
} // namespace

PreloadPhase::PreloadPhase(boost::asio::any_io_executor executor, Clock& clock,
                           std::vector<LocalSa*> sas, std::size_t at_once)
    : executor_(executor), sas_(std::move(sas)), at_once_(at_once ? at_once : sas_.size()),
      admit_timer_(clock, executor) {}

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
    admit_timer_.cancel();
    preloading_.clear();
    coherences_.clear();
    max_preloading_seen_ = 0;
    for (auto* sa : sas_)
        sa->flush();
    admit();
}

void PreloadPhase::admit() {
    std::erase_if(preloading_, [](const coherence::Coherence* c) { return ended(*c); });
    while (preloading_.size() < at_once_ && coherences_.size() < sas_.size()) {
        auto* sa = sas_[coherences_.size()];
        coherences_.push_back(std::make_unique<coherence::Coherence>(
            executor_, sa->coherence_parts(), coherence_config()));
        coherences_.back()->start();
        preloading_.push_back(coherences_.back().get());
    }
    max_preloading_seen_ = std::max(max_preloading_seen_, preloading_.size());
    if (coherences_.size() == sas_.size())
        return; // every node started
    admit_timer_.expires_after(kAdmitPoll);
    admit_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec)
            admit();
    });
}

bool PreloadPhase::finished() const {
    return coherences_.size() == sas_.size() &&
           std::all_of(coherences_.begin(), coherences_.end(),
                       [](const auto& c) { return ended(*c); });
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
