// The Prometheus exposition of the stats, and localsactl's health verdicts.
#include "daemon/metrics.hpp"
#include "tools/health.hpp"

#include <catch2/catch.hpp>

using namespace localsa;

namespace {

nlohmann::json sample_stats() {
    return {{"pr_requests", 200},
            {"pr_cache_hits", 150},
            {"pr_preload_hits", 40},
            {"cache_entries", 37},
            {"preload_state", "done"},
            {"master_known", true},
            {"port",
             {{"ca", "mlx5_0"},
              {"port", 1},
              {"lid", 5},
              {"sm_lid", 1},
              {"state", 4},
              {"gid", "fe80::2"}}}};
}

} // namespace

TEST_CASE("prometheus_text: counters, gauges, labels, one-hot preload state") {
    const auto text = prometheus_text(sample_stats());
    CHECK(text.find("# TYPE localsa_pr_requests_total counter\n"
                    "localsa_pr_requests_total{ca=\"mlx5_0\",port=\"1\"} 200\n") !=
          std::string::npos);
    // Not an engine counter: a gauge, without _total.
    CHECK(text.find("# TYPE localsa_cache_entries gauge\n"
                    "localsa_cache_entries{ca=\"mlx5_0\",port=\"1\"} 37\n") != std::string::npos);
    CHECK(text.find("localsa_preload_state{ca=\"mlx5_0\",port=\"1\",state=\"done\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("localsa_preload_state{ca=\"mlx5_0\",port=\"1\",state=\"loading\"} 0\n") !=
          std::string::npos);
    CHECK(text.find("localsa_port_info{ca=\"mlx5_0\",port=\"1\",lid=\"5\",sm_lid=\"1\",state=\"4\","
                    "gid=\"fe80::2\"} 1\n") != std::string::npos);
    // A boolean is no sample.
    CHECK(text.find("master_known") == std::string::npos);
}

TEST_CASE("prometheus_text escapes label values") {
    auto stats = sample_stats();
    stats["port"]["ca"] = "a\"b\\c\nd";
    const auto text = prometheus_text(stats);
    CHECK(text.find("ca=\"a\\\"b\\\\c\\nd\"") != std::string::npos);
}

TEST_CASE("health: OK, WARNING, CRITICAL and why") {
    using tools::Health;
    auto stats = sample_stats();
    auto v = tools::evaluate_health(stats, std::string("*:*=self"));
    CHECK(v.health == Health::ok);
    CHECK(v.line.rfind("OK: localsad on mlx5_0 port 1 (LID 5)", 0) == 0);
    CHECK(v.line.find("hit rate 95% of 200") != std::string::npos);
    CHECK(v.line.find("kernel sa_redirect *:*=self") != std::string::npos);

    SECTION("a stock kernel is no problem") {
        CHECK(tools::evaluate_health(stats, std::nullopt).health == Health::ok);
    }
    SECTION("an empty redirect table is a warning") {
        v = tools::evaluate_health(stats, std::string());
        CHECK(v.health == Health::warning);
        CHECK(v.line.find("bypass localsad") != std::string::npos);
    }
    SECTION("a master that never answered is a warning") {
        stats["master_known"] = false;
        v = tools::evaluate_health(stats, std::nullopt);
        CHECK(v.health == Health::warning);
        CHECK(v.line.find("master SA at LID 1 has not answered") != std::string::npos);
    }
    SECTION("a partial preload is a warning") {
        stats["preload_state"] = "partial";
        CHECK(tools::evaluate_health(stats, std::nullopt).health == Health::warning);
    }
    SECTION("a port that is not ACTIVE is critical, over any warning") {
        stats["port"]["state"] = 1;
        stats["master_known"] = false;
        v = tools::evaluate_health(stats, std::string());
        CHECK(v.health == Health::critical);
        CHECK(v.line.find("state 1, not ACTIVE") != std::string::npos);
    }
    SECTION("a daemon that does not answer is critical") {
        v = tools::unreachable("/run/localsa/x.sock", "connection refused");
        CHECK(v.health == Health::critical);
        CHECK(v.line == "CRITICAL: localsad does not answer on /run/localsa/x.sock: connection "
                        "refused");
    }
}
