// The rate limit of per-event log lines: the first N of an interval, then one count of the rest.
#include "engine/log_limiter.hpp"

#include <catch2/catch.hpp>

using namespace localsa;
using namespace std::chrono_literals;

TEST_CASE("log limiter: the first N per interval, then the count of those left out", "[log]") {
    LogLimiter limiter(3, 60s);
    const LogLimiter::Clock::time_point t0{1h};
    int logged = 0;
    for (int i = 0; i < 10; ++i) {
        const auto d = limiter.admit(t0 + std::chrono::seconds(i));
        logged += d.log;
        CHECK(d.suppressed == 0);
    }
    CHECK(logged == 3);
    // Still within the interval: left out.
    CHECK_FALSE(limiter.admit(t0 + 59s).log);
    // The next interval: logged, with the 8 left out since the last line.
    const auto next = limiter.admit(t0 + 60s);
    CHECK(next.log);
    CHECK(next.suppressed == 8);
    // ... said once.
    const auto after = limiter.admit(t0 + 61s);
    CHECK(after.log);
    CHECK(after.suppressed == 0);
}

TEST_CASE("log limiter: a quiet interval starts a fresh one at the next event", "[log]") {
    LogLimiter limiter(1, 10s);
    const LogLimiter::Clock::time_point t0{1h};
    CHECK(limiter.admit(t0).log);
    CHECK_FALSE(limiter.admit(t0 + 1s).log);
    const auto d = limiter.admit(t0 + 1h);
    CHECK(d.log);
    CHECK(d.suppressed == 1);
    CHECK_FALSE(limiter.admit(t0 + 1h + 9s).log);
    CHECK(limiter.admit(t0 + 1h + 10s).log);
}
