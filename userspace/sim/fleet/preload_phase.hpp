// The fleet's cold start with preload: one coherence::Coherence per LocalSa, as localsad starts
// it (no subscriptions; the fleet's ports never change), each preloading its node's table (one
// GetTable(PathRecord, SGID = the node's GID) per PKey) through the shared port.
//
// The nodes' starts are paced by the shared port. On a fabric each node sends its GetTable at
// once on its own port, and localsad spreads the nodes' starts over --spread-ms (a random delay
// each) so that they do not reach the master together. The fleet's nodes share one port that
// carries max_in_flight requests at a time: started all at once, they would wait in its queue,
// a queue no fabric has, and each LocalSa's try timer (8.6 s for a table of unknown size) would
// run during the wait, so the nodes late in the queue would time out before their GetTable was
// even sent and send it again. So a node starts when fewer than `at_once` nodes are preloading:
// its GetTable goes on the wire when its try starts, as on its own port, and the master gets
// the nodes' tables apart, as from a fabric whose nodes spread their starts.
#pragma once

#include "engine/clock.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace localsa::fleet {

class PreloadPhase {
public:
    // `sas` (on `clock`) must outlive the phase. `at_once`: nodes preloading at the same time at
    // most, the shared port's max_in_flight; 0: every node at once (the queue's wait then counts
    // against the nodes' tries).
    PreloadPhase(boost::asio::any_io_executor executor, Clock& clock, std::vector<LocalSa*> sas,
                 std::size_t at_once);
    PreloadPhase(const PreloadPhase&) = delete;
    PreloadPhase& operator=(const PreloadPhase&) = delete;

    // Empties every node's cache and preload table and starts the nodes' preloads.
    void start();
    // Every node's preload has ended (done or partial).
    bool finished() const;
    // Nodes per preload state (Preloader::state(); idle: not started yet).
    std::map<std::string, std::size_t> states() const;
    // The most nodes preloading at the same time so far.
    std::size_t max_preloading_seen() const { return max_preloading_seen_; }

    // The Coherence config of the phase: localsad's start-up preload without subscriptions and
    // without its own spread delay (the phase paces the starts).
    static coherence::CoherenceConfig coherence_config();

private:
    // Starts nodes while fewer than at_once preload; looks again shortly while nodes wait.
    void admit();

    boost::asio::any_io_executor executor_;
    std::vector<LocalSa*> sas_;
    std::size_t at_once_;
    std::vector<std::unique_ptr<coherence::Coherence>> coherences_; // the nodes started, in order
    std::vector<coherence::Coherence*> preloading_;                 // started and not ended
    std::size_t max_preloading_seen_ = 0;
    Timer admit_timer_;
};

} // namespace localsa::fleet
