// The kernel's sa_redirect state of a port as debugfs shows it (ib_sa/DEV/redirect, the format of
// kernel/patches/*/0002), and its series in the Prometheus exposition.
#include "daemon/kernel_redirect.hpp"
#include "daemon/metrics.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace localsa;

namespace {
constexpr const char* kTwoPorts = "port target state redirected fallen_back probed\n"
                                  "1 0x12 redirect 48211 3 0\n"
                                  "2 0x0 off 0 0 0\n";
}

TEST_CASE("kernel redirect: the port's line of the debugfs file", "[metrics][kernel]") {
    const auto one = parse_kernel_redirect(kTwoPorts, 1);
    REQUIRE(one);
    CHECK(one->target == 0x12);
    CHECK(one->state == "redirect");
    CHECK(one->redirected == 48211);
    CHECK(one->fallen_back == 3);
    CHECK(one->probed == 0);
    const auto two = parse_kernel_redirect(kTwoPorts, 2);
    REQUIRE(two);
    CHECK(two->state == "off");
    CHECK(two->target == 0);
    CHECK_FALSE(parse_kernel_redirect(kTwoPorts, 3)); // no such port
}

TEST_CASE("kernel redirect: anything else is no state, never a wrong one", "[metrics][kernel]") {
    CHECK_FALSE(parse_kernel_redirect("", 1));
    CHECK_FALSE(parse_kernel_redirect("1 0x12 redirect 1 2 3\n", 1)); // no header
    CHECK_FALSE(parse_kernel_redirect("port target state\n1 0x12 redirect\n", 1));
    const std::string header = "port target state redirected fallen_back probed\n";
    CHECK_FALSE(parse_kernel_redirect(header + "1 12 redirect 1 2 3\n", 1)); // target not hex
    CHECK_FALSE(parse_kernel_redirect(header + "1 0x12 redirect -1 2 3\n", 1));
    CHECK_FALSE(parse_kernel_redirect(header + "1 0x12 redirect 1 2 x\n", 1));
    CHECK_FALSE(parse_kernel_redirect(header + "1 0x10000 redirect 1 2 3\n", 1)); // > 16 bits
}

TEST_CASE("kernel redirect: read again through the descriptor opened at start",
          "[metrics][kernel]") {
    char dir[] = "/tmp/localsa-redirect-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    const std::string path = std::string(dir) + "/redirect";
    KernelRedirectFile absent(path, 1);
    CHECK_FALSE(absent.read()); // absent: nothing, no error
    { std::ofstream(path) << kTwoPorts; }
    KernelRedirectFile file(path, 1);
    CHECK(file.read()->redirected == 48211);
    CHECK(absent.read()->redirected == 48211); // there now: found
    {
        std::ofstream(path) << "port target state redirected fallen_back probed\n"
                               "1 0x12 fallback 48300 4 1\n";
    }
    const auto now = file.read();
    REQUIRE(now);
    CHECK(now->state == "fallback");
    CHECK(now->redirected == 48300);
    ::unlink(path.c_str());
    ::rmdir(dir);
}

TEST_CASE("kernel redirect: exported with ca/port labels, omitted when absent",
          "[metrics][kernel]") {
    nlohmann::json stats{{"pr_requests", 5}, {"port", {{"ca", "mlx5_0"}, {"port", 1}}}};
    const auto without = prometheus_text(stats);
    CHECK(without.find("localsa_kernel_") == std::string::npos);
    stats["kernel_redirect"] = parse_kernel_redirect(kTwoPorts, 1)->to_json();
    const auto text = prometheus_text(stats);
    const std::string labels = "{ca=\"mlx5_0\",port=\"1\"";
    CHECK(text.find("# TYPE localsa_kernel_redirected_total counter\n") != std::string::npos);
    CHECK(text.find("localsa_kernel_redirected_total" + labels + "} 48211\n") != std::string::npos);
    CHECK(text.find("localsa_kernel_fallen_back_total" + labels + "} 3\n") != std::string::npos);
    CHECK(text.find("localsa_kernel_probed_total" + labels + "} 0\n") != std::string::npos);
    CHECK(text.find("localsa_kernel_redirect_target" + labels + "} 18\n") != std::string::npos);
    CHECK(text.find("localsa_kernel_redirect_state" + labels + ",state=\"redirect\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("localsa_kernel_redirect_state" + labels + ",state=\"off\"} 0\n") !=
          std::string::npos);
}
