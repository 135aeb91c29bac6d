// SIGHUP's reload: what changes is applied, and named.
#include "daemon/reload.hpp"
#include "fake_transport.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using namespace localsa;
using namespace localsa::test;

TEST_CASE("reload: --subscription-check-s is applied, not silently ignored", "[reload]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    DaemonOptions running;
    LocalSa sa(io.get_executor(), clock, transport, running.local_sa);
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), running.coherence);
    auto fresh = running;
    fresh.coherence.subscription_check = std::chrono::seconds{5};
    const auto outcome = apply_reload(running, fresh, sa, coh);
    REQUIRE(outcome.applied.size() == 1);
    CHECK_THAT(outcome.applied[0], Catch::Contains("subscription-check-s"));
    CHECK(running.coherence.subscription_check == std::chrono::seconds{5});
    CHECK(outcome.need_restart.empty());
}

TEST_CASE("reload: the routing epoch's options are applied or named as needing a restart",
          "[reload]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    DaemonOptions running;
    LocalSa sa(io.get_executor(), clock, transport, running.local_sa);
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), running.coherence);
    auto fresh = running;
    fresh.coherence.master_capacity = running.coherence.master_capacity * 2;
    fresh.coherence.routing_epoch = !running.coherence.routing_epoch;
    fresh.coherence.epoch_reread = std::chrono::seconds{7};
    const auto outcome = apply_reload(running, fresh, sa, coh);
    REQUIRE(outcome.applied.size() == 1);
    CHECK_THAT(outcome.applied[0], Catch::Contains("master-capacity"));
    CHECK(running.coherence.master_capacity == fresh.coherence.master_capacity);
    REQUIRE(outcome.need_restart.size() == 2);
    CHECK_THAT(outcome.need_restart[0], Catch::Contains("no-routing-epoch"));
    CHECK_THAT(outcome.need_restart[1], Catch::Contains("epoch-reread-s"));
    CHECK(running.coherence.routing_epoch != fresh.coherence.routing_epoch);
}
