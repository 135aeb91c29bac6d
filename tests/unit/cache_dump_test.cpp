// `localsactl dump` over the real control server: the event loop that serves MADs goes on
// serving them while a dump of a large cache is being written (the dump is made in slices).
#include "control/client.hpp"
#include "daemon/cache_dump.hpp"
#include "daemon/control_server.hpp"
#include "fake_transport.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <future>
#include <map>
#include <string>

using namespace localsa;
using namespace std::chrono_literals;

namespace {

cache::PathQueryKey key_for(std::uint64_t dguid) {
    sa::PathRecord pr;
    pr.sgid = test::gid(0x100003);
    pr.dgid = test::gid(dguid);
    const auto rec = pr.bytes();
    return cache::PathQueryKey::from_request(mad::method::kGet,
                                             sa::pr_mask::kSgid | sa::pr_mask::kDgid, rec);
}

cache::PathAnswer answer_for(std::uint64_t dguid) {
    sa::PathRecord pr;
    pr.sgid = test::gid(0x100003);
    pr.dgid = test::gid(dguid);
    pr.slid = test::kOwnLid;
    pr.dlid = static_cast<std::uint16_t>(dguid & 0x3fff);
    const auto rec = pr.bytes();
    cache::PathAnswer a;
    a.records.assign(rec.begin(), rec.end());
    a.refresh_at = a.expires = SteadyClock{}.now() + 1h;
    return a;
}

std::string socket_path() {
    char dir[] = "/tmp/localsa-dump-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    return std::string(dir) + "/ctl.sock";
}

// The DGIDs of a dump answer, with how often each appears.
std::map<std::string, int> dumped_dgids(const nlohmann::json& answer) {
    std::map<std::string, int> seen;
    for (const auto& e : answer.at("entries"))
        for (const auto& r : e.at("records"))
            ++seen[r.at("dgid").get<std::string>()];
    return seen;
}

} // namespace

TEST_CASE("cache dump: a MAD reaching the loop during a dump is served before the dump ends",
          "[control][dump]") {
    constexpr std::uint64_t kFirst = 0x200000, kEntries = 5000, kLate = 0x900000;
    cache::PathCache cache(kEntries + 16);
    for (std::uint64_t i = 0; i < kEntries; ++i)
        cache.store(key_for(kFirst + i), answer_for(kFirst + i));

    boost::asio::io_context io;
    SteadyClock clock;
    const auto path = socket_path();
    bool mad_served = false;
    // The "MAD": a miss answered by the master while the dump goes on, stored in the cache.
    // It reaches the loop right after the dump request; the dump, still in progress when the
    // MAD is served, then holds its answer too.
    const auto post_mad = [&] {
        boost::asio::post(io, [&] {
            cache.store(key_for(kLate), answer_for(kLate));
            mad_served = true;
        });
    };
    // As localsad wires it (daemon/main.cpp), with small slices.
    control::ControlServer server(
        io, path,
        [](const nlohmann::json&) {
            return nlohmann::json{{"error", "no such command"}};
        },
        [&](const nlohmann::json& req) -> std::unique_ptr<control::ReplyStream> {
            if (req.value("cmd", "") != "dump")
                return nullptr;
            post_mad();
            return cache_dump_stream(cache, clock, 100);
        });

    auto answer = std::async(std::launch::async, [&] {
        auto a = control::control_request(path, {{"cmd", "dump"}});
        boost::asio::post(io, [&] { io.stop(); });
        return a;
    });
    io.run_for(60s);
    const auto dump = answer.get();
    CHECK(mad_served);
    const auto seen = dumped_dgids(dump);
    // Served before the dump ended: its answer is in the dump.
    CHECK(seen.count(test::gid(kLate).str()) == 1);
    // Every answer present for the whole dump is in it exactly once.
    CHECK(seen.size() == kEntries + 1);
    for (std::uint64_t i = 0; i < kEntries; i += 499)
        CHECK(seen.at(test::gid(kFirst + i).str()) == 1);
}

TEST_CASE("path cache scan: resumes where it stopped while the cache changes", "[cache][dump]") {
    cache::PathCache cache(64);
    for (std::uint64_t i = 0; i < 10; ++i)
        cache.store(key_for(0x300000 + i), answer_for(0x300000 + i));
    std::map<std::uint64_t, int> seen;
    const auto visit = [&](const cache::PathQueryKey& key, const cache::PathAnswer&) {
        ++seen[mad::load_be64(key.masked, 16)]; // the DGID's GUID
    };
    cache::PathCache::ScanCursor cursor;
    CHECK(cache.scan(cursor, 4, visit));
    CHECK(seen.size() == 4);
    // Meanwhile: one not yet visited erased, a new one stored.
    CHECK(cache.erase(key_for(0x300008)));
    cache.store(key_for(0x300100), answer_for(0x300100));
    while (cache.scan(cursor, 4, visit)) {
    }
    CHECK(seen.size() == 10); // 9 present throughout + the new one, each once
    CHECK(seen.count(0x300008) == 0);
    CHECK(seen.at(0x300100) == 1);
    for (const auto& [guid, n] : seen)
        CHECK(n == 1);

    SECTION("a flush ends a scan") {
        cache::PathCache::ScanCursor c;
        CHECK(cache.scan(c, 2, visit));
        cache.clear();
        CHECK_FALSE(cache.scan(c, 2, visit));
    }
}
