// The fleet's cold start with preload: one coherence::Coherence per LocalSa, as localsad starts
// it (no subscriptions; the fleet's ports never change), each preloading its node's table (one
// GetTable(PathRecord, SGID = the node's GID) per PKey) through the shared port.
#pragma once

#include "engine/clock.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace localsa::fleet {

class PreloadPhase {
public:
    // `sas` must outlive the phase.
    PreloadPhase(boost::asio::any_io_executor executor, std::vector<LocalSa*> sas);
    PreloadPhase(const PreloadPhase&) = delete;
    PreloadPhase& operator=(const PreloadPhase&) = delete;

    void start();
    // Every node's preload has ended (done or partial).
    bool finished() const;
    // Nodes per preload state (Preloader::state()).
    std::map<std::string, std::size_t> states() const;

    // The Coherence config of the phase: localsad's start-up preload without subscriptions.
    static coherence::CoherenceConfig coherence_config();

private:
    boost::asio::any_io_executor executor_;
    std::vector<LocalSa*> sas_;
    std::vector<std::unique_ptr<coherence::Coherence>> coherences_;
};

} // namespace localsa::fleet
