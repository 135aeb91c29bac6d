// Coherence's port watch: reads the port's attributes when its driver says it changed (port
// events) and, as a safety net, every period, and says when the local SA must resync (it came
// back active, its SM, LID, PKeys or GID changed, or the SM asked for re-registration).
//
// What it reads: the port's state, LIDs, SM and GID (a few reads) on every event and poll; its
// PKey table (a query per entry on a real HCA) only at start, on a PKey change event, when the
// port came back active, and otherwise at most every kPkeyRecheck.
#pragma once

#include "engine/clock.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace localsa::coherence {

class PortWatch {
public:
    // The poll period when none is configured (zero). With port events the poll only catches
    // an event that never came: a lost event costs at most this long (as long as the spread
    // every resync waits anyway).
    static constexpr std::chrono::milliseconds kSafetyPoll{30'000};
    // Without port events the poll is how a change is seen.
    static constexpr std::chrono::milliseconds kPollWithoutEvents{1'000};
    // A PKey change without an event (or without event source) is seen within this long.
    static constexpr std::chrono::milliseconds kPkeyRecheck{30'000};

    // `events`: the port's event source, or none (the poll alone). `period`: the poll's,
    // zero for the default of the mode (kSafetyPoll, kPollWithoutEvents).
    // `changed(why)`: the port is active and differs from the last read (or was down then).
    // `unchanged()`: the port is active and as at the last read.
    PortWatch(boost::asio::any_io_executor executor, Clock& clock,
              transport::MadTransport& transport, transport::PortEventSource* events,
              std::chrono::milliseconds period, std::function<void(const std::string& why)> changed,
              std::function<void()> unchanged);

    // Takes the port as it is now as the reference, then follows its events and polls.
    void start();
    void stop();
    // One poll, as the timer runs it.
    void poll();
    // From the next period on.
    void set_period(std::chrono::milliseconds period) { configured_period_ = period; }
    // The poll's period now: the configured one, else the default of the mode.
    std::chrono::milliseconds period() const;
    // True while port events arrive (started with a source that was not lost).
    bool follows_events() const { return events_ != nullptr && !events_lost_; }

private:
    void schedule();
    void on_events(const std::vector<transport::PortEvent>& events);
    void on_events_lost(const std::string& why);
    // Reads the port and compares it with the last read; a reread of the PKeys follows when
    // the port came back active. `reregister`: the SM asked clients to re-register.
    void check(transport::PortRead what, bool reregister);
    bool read(transport::PortRead what, transport::PortState& into);

    Clock& clock_;
    transport::MadTransport& transport_;
    transport::PortEventSource* events_;
    bool events_lost_ = false;
    bool running_ = false;
    std::chrono::milliseconds configured_period_;
    std::function<void(const std::string&)> changed_;
    std::function<void()> unchanged_;
    Timer timer_;
    transport::PortState last_;
    Clock::time_point pkeys_read_at_{};
};

} // namespace localsa::coherence
