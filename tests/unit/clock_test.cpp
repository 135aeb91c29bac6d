// The engine's clock: ManualClock fires timers as asio's steady_timer would, only when told to;
// one ManualClock drives several local SAs.
#include "fake_transport.hpp"

#include "engine/clock.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;

TEST_CASE("manual clock: time stands still until advanced, then timers fire in expiry order",
          "[clock]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    const auto t0 = clock.now();
    CHECK(t0 == ManualClock::kStart);
    std::vector<std::pair<std::string, Clock::duration>> fired;
    Timer late{clock, io.get_executor()}, early{clock, io.get_executor()},
        also_early{clock, io.get_executor()};
    auto record = [&](std::string name) {
        return [&, name](const boost::system::error_code& ec) {
            CHECK_FALSE(ec);
            fired.emplace_back(name, clock.now() - t0);
        };
    };
    late.expires_after(30ms);
    late.async_wait(record("late"));
    early.expires_after(10ms);
    early.async_wait(record("early"));
    also_early.expires_at(t0 + 10ms);
    also_early.async_wait(record("also early"));
    CHECK(clock.armed() == 3);
    CHECK(clock.next_expiry() == t0 + 10ms);

    io.restart();
    io.poll(); // the io_context alone runs nothing: the clock has not moved
    CHECK(fired.empty());
    clock.advance(9ms);
    CHECK(fired.empty());
    CHECK(clock.now() == t0 + 9ms);
    clock.advance(100ms);
    // Each handler ran with now() at its own timer's expiry; equal ones in the order armed.
    using P = std::pair<std::string, Clock::duration>;
    CHECK(fired == std::vector<P>{{"early", 10ms}, {"also early", 10ms}, {"late", 30ms}});
    CHECK(clock.now() == t0 + 109ms);
    CHECK(clock.armed() == 0);
    CHECK_FALSE(clock.next_expiry());
}

TEST_CASE("manual clock: a handler's own work runs before the next timer, and timers it arms "
          "fire within the same advance",
          "[clock]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    const auto t0 = clock.now();
    std::vector<std::string> order;
    Timer periodic{clock, io.get_executor()}, other{clock, io.get_executor()};
    std::function<void(const boost::system::error_code&)> tick = [&](const auto& ec) {
        if (ec)
            return;
        order.push_back("tick " + std::to_string((clock.now() - t0) / 1ms));
        boost::asio::post(io, [&] { order.push_back("posted"); });
        periodic.expires_after(10ms);
        periodic.async_wait(tick);
    };
    periodic.expires_after(10ms);
    periodic.async_wait(tick);
    other.expires_after(15ms);
    other.async_wait([&](const auto&) { order.push_back("other"); });
    clock.advance(30ms);
    CHECK(order == std::vector<std::string>{"tick 10", "posted", "other", "tick 20", "posted",
                                            "tick 30", "posted"});
}

TEST_CASE("manual clock: cancelling, re-arming or destroying a timer aborts its wait", "[clock]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    std::vector<boost::system::error_code> results;
    auto record = [&](const boost::system::error_code& ec) { results.push_back(ec); };

    Timer t{clock, io.get_executor()};
    t.expires_after(10ms);
    t.async_wait(record);
    CHECK(t.cancel() == 1);
    CHECK(clock.armed() == 0);
    clock.advance(20ms);
    REQUIRE(results.size() == 1);
    CHECK(results[0] == boost::asio::error::operation_aborted);

    t.expires_after(10ms);
    t.async_wait(record);
    t.expires_after(50ms); // re-armed: the first wait is aborted, a new one is needed
    t.async_wait(record);
    clock.advance(20ms);
    REQUIRE(results.size() == 2);
    CHECK(results[1] == boost::asio::error::operation_aborted);
    clock.advance(30ms);
    REQUIRE(results.size() == 3);
    CHECK_FALSE(results[2]);

    {
        Timer gone{clock, io.get_executor()};
        gone.expires_after(10ms);
        gone.async_wait(record);
    }
    CHECK(clock.armed() == 0);
    clock.poll();
    REQUIRE(results.size() == 4);
    CHECK(results[3] == boost::asio::error::operation_aborted);
}

TEST_CASE("manual clock: a timer already due fires at the next poll; time never goes back",
          "[clock]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    const auto t0 = clock.now();
    int fired = 0;
    Timer t{clock, io.get_executor()};
    t.expires_at(t0 - 1s);
    t.async_wait([&](const auto& ec) { fired += !ec; });
    clock.poll();
    CHECK(fired == 1);
    CHECK(clock.now() == t0);
    clock.advance_to(t0 - 1h);
    CHECK(clock.now() == t0);
}

TEST_CASE("manual clock: advancing from a handler it runs is refused", "[clock]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    Timer t{clock, io.get_executor()};
    t.expires_after(1ms);
    bool refused = false;
    t.async_wait([&](const auto&) {
        try {
            clock.advance(1ms);
        } catch (const std::logic_error&) {
            refused = true;
        }
    });
    clock.advance(1ms);
    CHECK(refused);
}

TEST_CASE("manual clock: a timer holding itself in its wait is released with the clock",
          "[clock]") {
    // As Coherence::shutdown's timer: the handler owns the timer. Never fired, the two would
    // keep each other (a leak under the sanitizers' run) unless the clock lets go of them.
    std::weak_ptr<Timer> watch;
    {
        boost::asio::io_context io;
        ManualClock clock{io};
        auto t = std::make_shared<Timer>(clock, io.get_executor());
        t->expires_after(1h);
        t->async_wait([t](const auto&) {});
        watch = t;
    }
    CHECK(watch.expired());
}

TEST_CASE("manual clock: one clock drives several local SAs through an hour in one call",
          "[clock][coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    struct Node {
        FakeTransport transport;
        LocalSa sa;
        coherence::Coherence coh;
        Node(boost::asio::io_context& io, Clock& clock)
            : sa(io.get_executor(), clock, transport, {}),
              coh(io.get_executor(), sa.coherence_parts(), [] {
                  coherence::CoherenceConfig c;
                  c.preload = false;
                  c.spread = 0ms;
                  return c;
              }()) {}
    };
    std::vector<std::unique_ptr<Node>> nodes;
    for (int i = 0; i < 3; ++i) {
        nodes.push_back(std::make_unique<Node>(io, clock));
        nodes.back()->coh.start();
        // The master confirms the six subscriptions.
        for (const auto& s : nodes.back()->transport.take())
            nodes.back()->sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
    }
    const auto t0 = clock.now();
    clock.advance(1h);
    CHECK(clock.now() - t0 == 1h);
    for (const auto& node : nodes) {
        // The subscription check (every 54-66 s: 60 s by default, jittered by a tenth) is never
        // answered: three tries of 200 ms, then the next check one period after it gave up, so
        // 3,600 / 66.6 to 3,600 / 54.6 of them fit in the hour. Each timed out after two
        // retries, but for the last one if the hour ended during its 600 ms.
        const auto checks = node->sa.counters().subscription_checks;
        const auto timeouts = node->sa.counters().upstream_timeouts;
        CHECK(checks >= 54);
        CHECK(checks <= 65);
        CHECK((timeouts == checks || timeouts + 1 == checks));
        CHECK(node->sa.counters().upstream_retries >= 2 * timeouts);
        CHECK(node->sa.counters().upstream_retries <= 2 * checks);
    }
}
