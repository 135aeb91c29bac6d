// localsad's command line and --config file: ranges, precedence, and --check-config.
#include "daemon/options.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <string>
#include <unistd.h>
#include <vector>

using namespace localsa;

namespace {

ParsedCommandLine parse(std::initializer_list<std::string> args) {
    std::vector<const char*> argv{"localsad"};
    for (const auto& a : args)
        argv.push_back(a.c_str());
    return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

// A configuration file removed at the end of the test.
struct ConfigFile {
    std::string path;
    explicit ConfigFile(const std::string& text) {
        char name[] = "/tmp/localsad-options-XXXXXX";
        const int fd = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path = name;
        std::ofstream(path) << text;
    }
    ~ConfigFile() { std::remove(path.c_str()); }
};

} // namespace

TEST_CASE("options: defaults, config file, and the command line winning over it", "[options]") {
    auto plain = parse({});
    REQUIRE(plain.options);
    CHECK(plain.options->local_sa.upstream.try_timeout == std::chrono::milliseconds{200});
    CHECK(plain.options->coherence.subscribe);

    ConfigFile file("upstream-timeout-ms = 500\nno-subscribe = true\nlog-level = debug\n");
    auto from_file = parse({"--config", file.path});
    REQUIRE(from_file.options);
    CHECK(from_file.options->local_sa.upstream.try_timeout == std::chrono::milliseconds{500});
    CHECK_FALSE(from_file.options->coherence.subscribe);
    CHECK(from_file.options->log_level == "debug");

    auto both = parse({"--config", file.path, "--upstream-timeout-ms", "300"});
    REQUIRE(both.options);
    CHECK(both.options->local_sa.upstream.try_timeout == std::chrono::milliseconds{300});
}

TEST_CASE("options: bad values name the option and the allowed range", "[options]") {
    CHECK_THROWS_WITH(parse({"--upstream-retries", "11"}),
                      Catch::Contains("--upstream-retries must be between 0 and 10"));
    CHECK_THROWS_WITH(parse({"--log-level", "loud"}), Catch::Contains("loud"));
    CHECK_THROWS_WITH(parse({"--config", "/nonexistent/localsad.conf"}),
                      Catch::Contains("/nonexistent/localsad.conf"));
    ConfigFile bad("max-outstanding = 0\n");
    CHECK_THROWS_WITH(parse({"--config", bad.path, "--check-config"}),
                      Catch::Contains("--max-outstanding must be between 1 and 256"));
    ConfigFile unknown("max-outstandin = 4\n");
    CHECK_THROWS_AS(parse({"--config", unknown.path}), UsageError);
}

TEST_CASE("options: --check-config prints the settings in effect as a config file that reads "
          "back to the same options",
          "[options]") {
    ConfigFile file("path-ttl-s = 60\nno-preload = true\n");
    const auto checked = parse({"--config", file.path, "--max-queued", "100", "--check-config"});
    CHECK_FALSE(checked.options); // nothing to run: print and exit 0
    const auto& text = checked.text;
    CHECK_THAT(text, Catch::Contains("\npath-ttl-s = 60\n"));
    CHECK_THAT(text, Catch::Contains("\nmax-queued = 100\n"));
    CHECK_THAT(text, Catch::Contains("\nno-preload = true\n"));
    CHECK_THAT(text, Catch::Contains("\n# upstream-timeout-ms = 200\n")); // a default
    CHECK_THAT(text, Catch::Contains("\n# no-subscribe = false\n"));
    CHECK_THAT(text, !Catch::Contains("check-config ="));

    ConfigFile echoed(text);
    const auto again = parse({"--config", echoed.path});
    const auto direct = parse({"--config", file.path, "--max-queued", "100"});
    REQUIRE(again.options);
    REQUIRE(direct.options);
    CHECK(again.options->local_sa.path_record.positive_ttl ==
          direct.options->local_sa.path_record.positive_ttl);
    CHECK(again.options->local_sa.upstream.max_queued == 100);
    CHECK(again.options->coherence.preload == direct.options->coherence.preload);
    CHECK_FALSE(again.options->coherence.preload);
}

TEST_CASE("options: --path-ttl-s 0 is refused (it is also the preload period)", "[options]") {
    CHECK_THROWS_WITH(parse({"--path-ttl-s", "0"}),
                      Catch::Contains("--path-ttl-s must be between 1 and 86400"));
}
