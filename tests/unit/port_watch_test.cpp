// The port watch: what it reads of the port, how often, and when it says the port changed, on
// port events and on its poll.
#include "fake_transport.hpp"

#include "engine/clock.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/coherence/port_watch.hpp"
#include "engine/local_sa.hpp"
#include "transport/transport.hpp"
#include "transport/verbs/verbs_port_events.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <infiniband/verbs.h>

#include <optional>
#include <string>
#include <vector>

using namespace localsa;
using namespace std::chrono_literals;
using transport::PortEvent;
using transport::PortRead;

namespace {

// A port the test changes (`live`) and the watch reads. Every read is counted; a read of the
// PKey table (a query per entry on a real HCA) is counted apart, and only it sees `live.pkeys`.
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
    const transport::PortState& refresh_port(PortRead what) override {
        ++reads;
        auto pkeys = seen_.pkeys;
        seen_ = live;
        if (what == PortRead::kWithPkeys)
            ++pkey_reads;
        else
            seen_.pkeys = std::move(pkeys);
        return seen_;
    }

    transport::PortState live;
    int reads = 0;
    int pkey_reads = 0;

private:
    transport::PortState seen_;
};

// Port events the test fires.
class FakeEvents final : public transport::PortEventSource {
public:
    void start(EventsHandler on_events, LostHandler on_lost) override {
        on_events_ = std::move(on_events);
        on_lost_ = std::move(on_lost);
        started = true;
    }
    void stop() override { started = false; }
    std::string name() const override { return "fake events"; }

    void fire(std::vector<PortEvent> events) {
        REQUIRE(started);
        on_events_(events);
    }
    void lose() { on_lost_("device gone"); }

    bool started = false;

private:
    EventsHandler on_events_;
    LostHandler on_lost_;
};

struct Watched {
    explicit Watched(bool with_events, std::chrono::milliseconds period = 0ms)
        : watch(
              io.get_executor(), clock, port, with_events ? &events : nullptr, period,
              [this](const std::string& why) { changes.push_back(why); }, [this] { ++unchanged; }) {
    }

    boost::asio::io_context io;
    ManualClock clock{io};
    CountingPort port;
    FakeEvents events;
    std::vector<std::string> changes;
    int unchanged = 0;
    coherence::PortWatch watch;
};

} // namespace

TEST_CASE("port watch: polls of an unchanged port do not read its PKey table each time",
          "[port_watch]") {
    Watched w(false, 1000ms);
    w.watch.start();
    w.clock.advance(10s);
    CHECK(w.unchanged == 10);
    CHECK(w.changes.empty());
    CHECK(w.port.reads == 10);
    // The PKey table was read at start (the transport opened the port); ten polls read none.
    CHECK(w.port.pkey_reads == 0);
}

TEST_CASE("port watch: the poll reads the PKey table every 30 s and sees it change",
          "[port_watch]") {
    Watched w(false, 1000ms);
    w.watch.start();
    w.port.live.pkeys = {0xffff, 0x8001};
    w.clock.advance(coherence::PortWatch::kPkeyRecheck - 1s);
    CHECK(w.changes.empty());
    CHECK(w.port.pkey_reads == 0);
    w.clock.advance(1s);
    CHECK(w.port.pkey_reads == 1);
    CHECK(w.changes == std::vector<std::string>{"PKey table changed"});
}

TEST_CASE("port watch: a port that comes back active has its PKey table read once",
          "[port_watch]") {
    Watched w(false, 1000ms);
    w.watch.start();
    w.port.live.state = 1; // down
    w.clock.advance(1s);
    CHECK(w.port.pkey_reads == 0);
    w.port.live.state = transport::kPortActive;
    w.port.live.pkeys = {0xffff, 0x8001};
    w.clock.advance(1s);
    CHECK(w.port.pkey_reads == 1);
    CHECK(w.changes == std::vector<std::string>{"port active again"});
    CHECK(w.watch.period() == 1000ms);
    // The resync that follows preloads per PKey: the new table is there.
    CHECK(w.port.port().pkeys == std::vector<std::uint16_t>{0xffff, 0x8001});
}

TEST_CASE("port watch: the poll's default period is 30 s with port events, 1 s without",
          "[port_watch]") {
    Watched with(true), without(false), configured(true, 200ms);
    with.watch.start();
    without.watch.start();
    configured.watch.start();
    CHECK(with.watch.follows_events());
    CHECK(with.events.started);
    CHECK(with.watch.period() == coherence::PortWatch::kSafetyPoll);
    CHECK(with.watch.period() == 30s);
    CHECK_FALSE(without.watch.follows_events());
    CHECK(without.watch.period() == coherence::PortWatch::kPollWithoutEvents);
    CHECK(configured.watch.period() == 200ms);
    with.watch.stop();
    CHECK_FALSE(with.events.started);
}

TEST_CASE("port watch: an SM change event reads the port once and says what the poll says",
          "[port_watch]") {
    Watched events(true), polled(false, 1000ms);
    events.watch.start();
    polled.watch.start();
    events.port.live.sm_lid = 7;
    polled.port.live.sm_lid = 7;
    events.events.fire({PortEvent::kSmChange});
    polled.clock.advance(1s);
    CHECK(events.port.reads == 1);
    CHECK(events.port.pkey_reads == 0);
    REQUIRE(events.changes.size() == 1);
    CHECK(events.changes == polled.changes);
    CHECK(events.changes[0] == "SM moved from LID 1 to 7");
}

TEST_CASE("port watch: a LID change event reads no PKey table", "[port_watch]") {
    Watched w(true);
    w.watch.start();
    w.port.live.lid = 9;
    w.events.fire({PortEvent::kLidChange});
    CHECK(w.port.reads == 1);
    CHECK(w.port.pkey_reads == 0);
    CHECK(w.changes == std::vector<std::string>{"LID changed from 5 to 9"});
}

TEST_CASE("port watch: events that arrive together are one read", "[port_watch]") {
    Watched w(true);
    w.watch.start();
    w.port.live.lid = 9;
    w.port.live.sm_lid = 3;
    w.events.fire({PortEvent::kLidChange, PortEvent::kSmChange, PortEvent::kGidChange});
    CHECK(w.port.reads == 1);
    CHECK(w.changes.size() == 1);
}

TEST_CASE("port watch: a PKey change event reads the PKey table", "[port_watch]") {
    Watched w(true);
    w.watch.start();
    w.port.live.pkeys = {0xffff, 0x8001};
    w.events.fire({PortEvent::kPkeyChange});
    CHECK(w.port.reads == 1);
    CHECK(w.port.pkey_reads == 1);
    CHECK(w.changes == std::vector<std::string>{"PKey table changed"});
}

TEST_CASE("port watch: a port active event is one read, the PKey table with it", "[port_watch]") {
    Watched w(true);
    w.watch.start();
    w.port.live.state = 1;
    w.events.fire({PortEvent::kError});
    CHECK(w.changes.empty());
    w.port.live.state = transport::kPortActive;
    w.events.fire({PortEvent::kActive});
    CHECK(w.port.reads == 2);
    CHECK(w.port.pkey_reads == 1);
    CHECK(w.changes == std::vector<std::string>{"port active again"});
}

TEST_CASE("port watch: a client reregister event resyncs a port that looks the same",
          "[port_watch]") {
    Watched w(true);
    w.watch.start();
    w.events.fire({PortEvent::kClientReregister});
    CHECK(w.changes == std::vector<std::string>{"the SM asked for client re-registration"});
    // Any other event on an unchanged port: nothing to do.
    w.events.fire({PortEvent::kSmChange});
    CHECK(w.changes.size() == 1);
    CHECK(w.unchanged == 1);
}

TEST_CASE("port watch: the safety poll sees a change whose event never came", "[port_watch]") {
    Watched w(true);
    w.watch.start();
    w.port.live.lid = 9;
    w.clock.advance(coherence::PortWatch::kSafetyPoll - 1ms);
    CHECK(w.changes.empty());
    CHECK(w.port.reads == 0);
    w.clock.advance(1ms);
    CHECK(w.port.reads == 1);
    CHECK(w.changes == std::vector<std::string>{"LID changed from 5 to 9"});
}

TEST_CASE("port watch: once the events are lost the port is polled every second", "[port_watch]") {
    Watched w(true);
    w.watch.start();
    w.events.lose();
    CHECK_FALSE(w.watch.follows_events());
    CHECK(w.watch.period() == coherence::PortWatch::kPollWithoutEvents);
    w.port.live.sm_lid = 4;
    w.clock.advance(1s);
    CHECK(w.changes == std::vector<std::string>{"SM moved from LID 1 to 4"});
}

TEST_CASE("coherence: an SM change event flushes and re-subscribes, as the poll does",
          "[port_watch][coherence]") {
    using namespace localsa::test;
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    FakeEvents events;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms;
    cc.preload = false;
    auto parts = sa.coherence_parts();
    parts.port_events = &events;
    coherence::Coherence coh(io.get_executor(), parts, cc);
    coh.start();
    transport.take();
    sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
    auto up = transport.take();
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    transport.take();
    REQUIRE(sa.cache().size() == 1);
    transport.state.sm_lid = 7;
    events.fire({PortEvent::kSmChange});
    clock.advance(1ms);
    CHECK(sa.cache().size() == 0);
    CHECK(sa.counters().resyncs == 1);
    auto again = transport.take();
    // ClassPortInfo and the six subscriptions, to the new master.
    REQUIRE(again.size() == 1 + std::size(coherence::kSubscribedTraps));
    for (const auto& s : again)
        CHECK(s.to.lid == 7);
}

TEST_CASE("verbs port events: the async events of a port and nothing else", "[port_watch]") {
    using transport::port_event_of;
    CHECK(port_event_of(IBV_EVENT_PORT_ACTIVE) == PortEvent::kActive);
    CHECK(port_event_of(IBV_EVENT_PORT_ERR) == PortEvent::kError);
    CHECK(port_event_of(IBV_EVENT_LID_CHANGE) == PortEvent::kLidChange);
    CHECK(port_event_of(IBV_EVENT_PKEY_CHANGE) == PortEvent::kPkeyChange);
    CHECK(port_event_of(IBV_EVENT_SM_CHANGE) == PortEvent::kSmChange);
    CHECK(port_event_of(IBV_EVENT_CLIENT_REREGISTER) == PortEvent::kClientReregister);
    CHECK(port_event_of(IBV_EVENT_GID_CHANGE) == PortEvent::kGidChange);
    CHECK_FALSE(port_event_of(IBV_EVENT_DEVICE_FATAL));
    CHECK_FALSE(port_event_of(IBV_EVENT_QP_FATAL));
    CHECK_FALSE(port_event_of(IBV_EVENT_CQ_ERR));
}

TEST_CASE("verbs port events: a CA without a verbs device is refused with the reason",
          "[port_watch]") {
    boost::asio::io_context io;
    try {
        transport::VerbsPortEvents events(io.get_executor(), "no-such-hca0", 1);
        FAIL("opened a verbs device that does not exist");
    } catch (const transport::VerbsUnavailable& e) {
        CHECK(std::string(e.what()).find("verbs") != std::string::npos);
    }
}
