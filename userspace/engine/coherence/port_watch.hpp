// Coherence's port watch: reads the port's attributes every period and says when the local SA
// must resync (it came back active, or its SM, LID, PKeys or GID changed).
#pragma once

#include "engine/clock.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace localsa::coherence {

class PortWatch {
public:
    // `changed(why)`: the port is active and differs from the last poll (or was down then).
    // `unchanged()`: the port is active and as at the last poll.
    PortWatch(boost::asio::any_io_executor executor, Clock& clock,
              transport::MadTransport& transport, std::chrono::milliseconds period,
              std::function<void(const std::string& why)> changed, std::function<void()> unchanged);

    // Takes the port as it is now as the reference, then polls every period.
    void start();
    void stop() { timer_.cancel(); }
    // One poll, as the timer runs it.
    void poll();
    // From the next period on.
    void set_period(std::chrono::milliseconds period) { period_ = period; }

private:
    void schedule();

    transport::MadTransport& transport_;
    std::chrono::milliseconds period_;
    std::function<void(const std::string&)> changed_;
    std::function<void()> unchanged_;
    Timer timer_;
    transport::PortState last_;
};

} // namespace localsa::coherence
