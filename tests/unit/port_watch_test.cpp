// The port watch: what it reads of the port, how often, and when it says the port changed.
#include "engine/clock.hpp"
#include "engine/coherence/port_watch.hpp"
#include "transport/transport.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace localsa;
using namespace std::chrono_literals;

namespace {

// A port the test changes (`live`) and the watch reads. Every read is counted; a read of the
// PKey table (a query per entry on a real HCA) is counted apart.
class CountingPort final : public transport::MadTransport {
public:
    CountingPort() {
        live.ca = "hca0";
        live.port = 1;
        live.lid = 5;
        live.sm_lid = 1;
        live.state = transport::kPortActive;
        live.gid = sa::Gid::from_parts(0xfe80000000000000ULL, 0x100003);
        live.pkeys = {0xffff};
        seen_ = live;
    }
    bool send(mad::Bytes, const transport::MadAddress&, std::chrono::milliseconds) override {
        return true;
    }
    const transport::PortState& port() const override { return seen_; }
    // Today's read: the whole port, its PKey table with it.
    const transport::PortState& refresh_port() override {
        ++reads;
        ++pkey_reads;
        seen_ = live;
        return seen_;
    }

    transport::PortState live;
    int reads = 0;
    int pkey_reads = 0;

private:
    transport::PortState seen_;
};

struct Watched {
    boost::asio::io_context io;
    ManualClock clock{io};
    CountingPort port;
    std::vector<std::string> changes;
    int unchanged = 0;
    coherence::PortWatch watch{
        io.get_executor(),
        clock,
        port,
        1000ms,
        [this](const std::string& why) { changes.push_back(why); },
        [this] { ++unchanged; }};
};

} // namespace

TEST_CASE("port watch: polls of an unchanged port do not read its PKey table each time",
          "[port_watch]") {
    Watched w;
    w.watch.start();
    w.clock.advance(10s);
    CHECK(w.unchanged == 10);
    CHECK(w.changes.empty());
    // Ten polls: the PKey table once at most (it was read at start).
    CHECK(w.port.pkey_reads <= 1);
}
