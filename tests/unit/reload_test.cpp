// SIGHUP's reload: what changes is applied, and named.
#include "daemon/reload.hpp"
#include "fake_transport.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using namespace localsa;
using namespace localsa::test;

TEST_CASE("reload: --subscription-check-s is applied, not silently ignored", "[reload]") {
    boost::asio::io_context io;
    SteadyClock clock;
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
