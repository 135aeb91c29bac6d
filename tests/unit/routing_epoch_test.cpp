// The routing epoch (issue 25): answers and tables kept while it holds, renewed spread over a
// window when it changes; and without it, renewals that follow use and back off.
#include "fake_transport.hpp"

#include "engine/coherence/coherence.hpp"
#include "engine/coherence/routing_epoch_source.hpp"
#include "engine/local_sa.hpp"
#include "ib/notice.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kSmGuid = 0x100001;

bool is_attr(const SentMad& s, std::uint16_t attr) {
    return s.to.lid == kSmLid && mad::load_be16(s.bytes, 16) == attr;
}

// The master's answer to the epoch's ServiceRecord Get.
std::vector<std::uint8_t> epoch_record_answer(const std::vector<std::uint8_t>& request,
                                              std::uint64_t epoch) {
    auto m = *mad::SaMad::unpack(request);
    m.header.method = mad::method::kGetResp;
    m.header.status = 0;
    m.attr_offset = 176 / 8;
    mad::store_be64(m.data, 160, epoch);
    mad::store_be64(m.data, 168, kSmGuid);
    return m.pack();
}

sa::Notice epoch_notice(std::uint64_t epoch) {
    sa::Notice n;
    n.is_generic = false;
    n.type = 4;
    n.producer_type = 0x4c5341;
    n.trap_number = coherence::kEpochDeviceId;
    std::copy_n("LSAE", 4, n.data_details.begin());
    for (int i = 0; i < 8; ++i) {
        n.data_details[4 + i] = static_cast<std::uint8_t>(epoch >> (56 - 8 * i));
        n.data_details[12 + i] = static_cast<std::uint8_t>(kSmGuid >> (56 - 8 * i));
    }
    return n;
}

// A GetTable(PathRecord) answer carrying `records` (one MAD, no RMPP: the fake has none).
std::vector<std::uint8_t> table_answer(const std::vector<std::uint8_t>& request,
                                       const std::vector<std::uint8_t>& records) {
    std::vector<std::uint8_t> b(request.begin(), request.begin() + 56);
    b[3] = mad::method::kGetTableResp;
    mad::store_be16(b, 4, 0);
    mad::store_be16(b, 44, sa::PathRecord::kSize / 8);
    b.insert(b.end(), records.begin(), records.end());
    return b;
}

std::vector<std::uint8_t> many_destinations(int n) {
    std::vector<std::uint8_t> out;
    for (int i = 0; i < n; ++i) {
        const auto r = table_records({{0x200000 + i, static_cast<std::uint16_t>(10 + i)}});
        out.insert(out.end(), r.begin(), r.end());
    }
    return out;
}

struct Node {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    std::unique_ptr<LocalSa> sa;
    std::unique_ptr<coherence::Coherence> coh;

    Node(LocalSaConfig lc, coherence::CoherenceConfig cc) {
        // One table without a PKey: the test's Gets carry none either.
        transport.state.pkeys = {};
        sa = std::make_unique<LocalSa>(io.get_executor(), clock, transport, lc);
        coh = std::make_unique<coherence::Coherence>(io.get_executor(), sa->coherence_parts(), cc);
        coh->start();
    }
    // Answers what went to the master: the epoch's record, Sets, Gets (LID 8) and tables;
    // returns how many PathRecord queries it saw.
    int serve(std::uint64_t epoch, const std::vector<std::uint8_t>& table = {},
              bool answer_tables = true) {
        int path_queries = 0;
        for (const auto& s : transport.take()) {
            if (s.to.lid != kSmLid)
                continue;
            if (is_attr(s, mad::attr::kServiceRecord))
                sa->dispatch(from_lid(kSmLid, epoch_record_answer(s.bytes, epoch)));
            else if (is_attr(s, mad::attr::kInformInfo))
                sa->dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
            else if (is_attr(s, mad::attr::kPathRecord)) {
                ++path_queries;
                if (s.bytes[3] == mad::method::kGetTable) {
                    if (answer_tables)
                        sa->dispatch(from_lid(kSmLid, table_answer(s.bytes, table)));
                } else {
                    sa->dispatch(from_lid(kSmLid, master_path_answer(s.bytes, 8)));
                }
            }
        }
        return path_queries;
    }
    void ask(std::uint64_t tid, std::uint64_t dguid) {
        sa->dispatch(from_lid(kOwnLid, path_request(tid, dguid)));
    }
};

LocalSaConfig short_ttl() {
    LocalSaConfig lc;
    lc.path_record.positive_ttl = 100ms;
    lc.path_record.max_staleness = 1000ms;
    lc.upstream.try_timeout = 10ms;
    lc.upstream.retries = 0;
    return lc;
}

coherence::CoherenceConfig epoch_on() {
    coherence::CoherenceConfig cc;
    cc.spread = 0ms;
    cc.subscribe = false;
    cc.preload = false;
    cc.routing_epoch = true;
    cc.try_timeout = 1ms;
    return cc;
}

} // namespace

TEST_CASE("routing epoch: unchanged, nothing is asked again across many TTLs",
          "[coherence][epoch]") {
    Node n(short_ttl(), epoch_on());
    n.serve(7);
    REQUIRE(n.coh->epoch_trusted());
    for (std::uint64_t g = 0; g < 5; ++g)
        n.ask(g + 1, 0x100005 + g);
    CHECK(n.serve(7) == 5); // the misses
    int queries = 0;
    for (int i = 0; i < 100; ++i) { // 100 TTLs of use, Reports of the same epoch meanwhile
        n.clock.advance(100ms);
        for (std::uint64_t g = 0; g < 5; ++g)
            n.ask(100 + i * 5 + g, 0x100005 + g);
        if (i % 10 == 0)
            n.coh->on_report(epoch_notice(7), 0);
        queries += n.serve(7);
    }
    CHECK(queries == 0);
    CHECK(n.sa->counters().refreshes == 0);
    nlohmann::json j;
    n.coh->add_stats(j);
    CHECK(j["routing_epoch"]["value"] == 7);
    CHECK(j["routing_epoch"]["trusted"] == true);
    CHECK(j["routing_epoch"]["seconds_since_change"].get<double>() > 9.9);
}

TEST_CASE("routing epoch: a change renews what is in use spread over the window",
          "[coherence][epoch]") {
    auto cc = epoch_on();
    cc.master_transactions = 10; // 40 Gets here: a 4 s window
    // The same draws every run: with the random device about 1 run in 150 drew a second below 3
    // or several renewals at the window's very end.
    cc.jitter_seed = 0x5eed;
    Node n(short_ttl(), cc);
    n.serve(7);
    for (std::uint64_t g = 0; g < 40; ++g) {
        n.ask(g + 1, 0x100005 + g);
        n.serve(7);
    }
    REQUIRE(n.sa->cache().size() == 40);
    REQUIRE(n.coh->renewal_window() == 4000ms);
    n.coh->on_report(epoch_notice(8), 0);
    std::vector<int> per_second(6, 0);
    for (int ms = 0; ms < 6000; ms += 50) {
        n.clock.advance(50ms);
        per_second[ms / 1000] += n.serve(8);
    }
    // All renewed, each once (valid again until the next change); one drawn at the window's
    // very end may leave a little after it, behind the background pacing (1 in ~30 runs).
    CHECK(per_second[0] + per_second[1] + per_second[2] + per_second[3] + per_second[4] == 40);
    CHECK(per_second[4] <= 2);
    CHECK(per_second[5] == 0);
    for (int s = 0; s < 4; ++s) {
        CHECK(per_second[s] >= 3); // spread, not all at once
        CHECK(per_second[s] <= 20);
    }
    nlohmann::json j;
    n.coh->add_stats(j);
    CHECK(j["routing_epoch"]["value"] == 8);
    CHECK(j["routing_epoch"]["changes"] == 1);
}

TEST_CASE("routing epoch: a node without a table spreads its Gets over the fabric's share of "
          "the master's transactions",
          "[coherence][epoch]") {
    // Above the preload threshold: no table, a few answers in use, and 1,024 nodes renewing as
    // many at the same change. The master serves 1,000 Gets a second: 4,096 take 4 s.
    auto cc = epoch_on();
    cc.fabric_ports = 1024;
    Node n(short_ttl(), cc);
    // The epoch is first read within the start's spread (9.2 s here).
    for (int i = 0; i < 1000 && !n.coh->epoch_trusted(); ++i) {
        n.clock.advance(10ms);
        n.serve(7);
    }
    REQUIRE(n.coh->epoch_trusted());
    for (std::uint64_t g = 0; g < 4; ++g) {
        n.ask(g + 1, 0x100005 + g);
        n.serve(7);
    }
    REQUIRE(n.sa->cache().size() == 4);
    REQUIRE(n.sa->preload().size() == 0);
    CHECK(n.coh->renewal_window() == 4096ms);
    n.coh->on_report(epoch_notice(8), 0);
    Clock::time_point last{};
    int renewed = 0;
    const auto t0 = n.clock.now();
    for (int ms = 0; ms < 6000; ms += 10) {
        n.clock.advance(10ms);
        if (const int k = n.serve(8)) {
            renewed += k;
            last = n.clock.now();
        }
    }
    CHECK(renewed == 4);
    CHECK(last - t0 <= 4096ms + 20ms); // within the window, each at a random moment of it
}

TEST_CASE("routing epoch: none at the master, the TTL rules hold", "[coherence][epoch]") {
    Node n(short_ttl(), epoch_on());
    for (const auto& s : n.transport.take())
        if (is_attr(s, mad::attr::kServiceRecord))
            n.sa->dispatch(
                from_lid(kSmLid, master_status_answer(s.bytes, mad::status::kSaNoRecords)));
    CHECK_FALSE(n.coh->epoch_trusted());
    n.ask(1, 0x100005);
    n.serve(0);
    int queries = 0;
    for (int i = 0; i < 10; ++i) {
        // The master answers within the 10 ms try, whenever the refresh falls due.
        for (int step = 0; step < 20; ++step) {
            n.clock.advance(5ms);
            queries += n.serve(0);
        }
        n.ask(10 + i, 0x100005);
        queries += n.serve(0);
    }
    CHECK(queries >= 8); // refreshed every TTL while used
}

TEST_CASE("preload: a table used once is renewed once", "[coherence][preload]") {
    auto cc = epoch_on();
    cc.routing_epoch = false;
    cc.preload = true;
    Node n(short_ttl(), cc);
    const auto table = table_records({{0x100005, 8}, {0x100007, 11}});
    n.clock.advance(15ms);
    REQUIRE(n.serve(0, table) == 1); // the preload
    n.ask(1, 0x100005);              // one use
    CHECK(n.sa->counters().pr_preload_hits == 1);
    int tables = 0;
    for (int i = 0; i < 300; ++i) { // 30 TTLs
        n.clock.advance(10ms);
        tables += n.serve(0, table);
    }
    CHECK(tables == 1);
}

TEST_CASE("preload: a failed renewal does not renew forever", "[coherence][preload]") {
    auto cc = epoch_on();
    cc.routing_epoch = false;
    cc.preload = true;
    Node n(short_ttl(), cc);
    const auto table = table_records({{0x100005, 8}, {0x100007, 11}});
    n.clock.advance(15ms);
    REQUIRE(n.serve(0, table) == 1);
    n.ask(1, 0x100005);
    int tables = 0;
    for (int i = 0; i < 500; ++i) { // 50 TTLs, the master gone for tables
        n.clock.advance(10ms);
        tables += n.serve(0, table, false);
    }
    CHECK(tables >= 1);
    CHECK(tables <= 2);
}

TEST_CASE("preload: without an epoch, renewals that change nothing back off, doubling",
          "[coherence][preload]") {
    auto cc = epoch_on();
    cc.routing_epoch = false;
    cc.preload = true;
    Node n(short_ttl(), cc);
    const auto table = many_destinations(200);
    n.clock.advance(15ms);
    REQUIRE(n.serve(0, table) == 1);
    const auto t0 = n.clock.now();
    std::vector<Clock::time_point> renewed;
    for (int i = 0; i < 400; ++i) { // 4 s of steady use: a new destination every 10 ms
        n.clock.advance(10ms);
        n.ask(1000 + i, 0x200000 + (i % 200));
        if (n.serve(0, table) > 0)
            renewed.push_back(n.clock.now());
    }
    REQUIRE(renewed.size() >= 4);
    std::vector<long> gaps;
    auto prev = t0;
    for (auto t : renewed) {
        gaps.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(t - prev).count());
        prev = t;
    }
    CHECK(gaps[1] >= gaps[0] * 18 / 10);
    CHECK(gaps[2] >= gaps[1] * 18 / 10);
    for (auto g : gaps)
        CHECK(g <= 1000 + 20); // bounded by --max-staleness-s
}

TEST_CASE("preload: without an epoch, an unused table past its TTL is not served while the "
          "master answers",
          "[coherence][preload]") {
    auto cc = epoch_on();
    cc.routing_epoch = false;
    cc.preload = true;
    Node n(short_ttl(), cc);
    n.clock.advance(15ms);
    REQUIRE(n.serve(0, table_records({{0x100005, 8}, {0x100007, 11}})) == 1);
    for (int i = 0; i < 30; ++i) { // 3 TTLs unused: not renewed, and not fresh either
        n.clock.advance(10ms);
        CHECK(n.serve(0) == 0);
    }
    n.ask(1, 0x100005);
    CHECK(n.serve(0) == 1); // read through: the master answers this path as it is now
    CHECK(n.sa->counters().pr_preload_hits == 0);
    CHECK(n.sa->counters().stale_served == 0);
}

TEST_CASE("preload: without an epoch, a table whose renewal failed is served past its TTL, "
          "counted stale",
          "[coherence][preload]") {
    auto cc = epoch_on();
    cc.routing_epoch = false;
    cc.preload = true;
    Node n(short_ttl(), cc);
    const auto table = table_records({{0x100005, 8}, {0x100007, 11}});
    n.clock.advance(15ms);
    REQUIRE(n.serve(0, table) == 1);
    n.ask(1, 0x100005); // in use: renewed at 0.8 TTL, and the renewal goes unanswered
    CHECK(n.sa->counters().pr_preload_hits == 1);
    int tables = 0;
    for (int i = 0; i < 30; ++i) {
        n.clock.advance(10ms);
        tables += n.serve(0, table, false);
    }
    REQUIRE(tables >= 1);
    n.ask(2, 0x100007);
    CHECK(n.serve(0, table, false) == 0); // the master did not answer the table: the table serves
    CHECK(n.sa->counters().pr_preload_hits == 2);
    CHECK(n.sa->counters().stale_served == 1);
}

TEST_CASE("preload: a table the master did not send is asked again, backing off",
          "[coherence][preload][retry]") {
    auto cc = epoch_on();
    cc.routing_epoch = false;
    cc.preload = true;
    auto lc = short_ttl();
    lc.path_record.positive_ttl = 300s; // no renewal in the hour
    Node n(lc, cc);
    const auto table = table_records({{0x100005, 8}, {0x100007, 11}});
    n.clock.advance(15ms);
    REQUIRE(n.serve(0, table, false) == 1); // the first table: lost (or OpenSM's first sweep)
    n.clock.advance(100ms);
    CHECK(n.coh->preload_state() == "partial");
    // The master keeps ignoring it for an hour: asked again at 2.5-5 s, doubling, at most
    // every 10 min; not forever at once, not never.
    int tables = 0;
    std::vector<Clock::time_point> asked;
    const auto t0 = n.clock.now();
    while (n.clock.now() < t0 + 1h) {
        n.clock.advance(100ms);
        const int k = n.serve(0, table, false);
        tables += k;
        if (k)
            asked.push_back(n.clock.now());
    }
    CHECK(tables >= 8);
    CHECK(tables <= 20);
    REQUIRE(asked.size() >= 2);
    CHECK(asked[0] - t0 >= 2500ms);
    CHECK(asked[0] - t0 <= 5200ms);
    for (std::size_t i = 1; i < asked.size(); ++i)
        CHECK(asked[i] - asked[i - 1] <= 10min + 1s);
    // Then it answers: the preload is done and nothing more is asked.
    bool done = false;
    for (int i = 0; i < 70000 && !done; ++i) {
        n.clock.advance(10ms);
        n.serve(0, table, true);
        done = n.coh->preload_state() == "done";
    }
    CHECK(done);
    CHECK(n.sa->preload().size() == 2);
    tables = 0;
    for (int i = 0; i < 600; ++i) {
        n.clock.advance(1s);
        tables += n.serve(0, table, true);
    }
    CHECK(tables == 0);
}

TEST_CASE("preload: under a trusted epoch, a table not received is asked again",
          "[coherence][preload][retry][epoch]") {
    auto cc = epoch_on();
    cc.preload = true;
    auto lc = short_ttl();
    lc.path_record.positive_ttl = 300s;
    Node n(lc, cc);
    const auto table = table_records({{0x100005, 8}, {0x100007, 11}});
    // The epoch's record first, then the table, which is lost.
    int tables = 0;
    for (int i = 0; i < 10; ++i) {
        n.clock.advance(5ms);
        tables += n.serve(7, table, false);
    }
    REQUIRE(n.coh->epoch_trusted());
    REQUIRE(tables == 1);
    for (int i = 0; i < 1000 && n.coh->preload_state() != "done"; ++i) {
        n.clock.advance(10ms);
        n.serve(7, table, true);
    }
    CHECK(n.coh->preload_state() == "done");
    n.ask(1, 0x100005);
    CHECK(n.sa->counters().pr_preload_hits == 1);
}

TEST_CASE("preload: under a trusted epoch a table's answers stay in the table, not copied to "
          "the cache",
          "[coherence][preload][epoch][memory]") {
    auto cc = epoch_on();
    cc.preload = true;
    auto lc = short_ttl();
    lc.path_record.positive_ttl = 300s;
    Node n(lc, cc);
    const auto table = table_records({{0x100005, 8}, {0x100007, 11}});
    // The epoch's record first (the table lost), then the table again.
    for (int i = 0; i < 10; ++i) {
        n.clock.advance(5ms);
        n.serve(7, table, false);
    }
    REQUIRE(n.coh->epoch_trusted());
    for (int i = 0; i < 1000 && n.coh->preload_state() != "done"; ++i) {
        n.clock.advance(10ms);
        n.serve(7, table, true);
    }
    REQUIRE(n.coh->preload_state() == "done");
    n.ask(1, 0x100005);
    n.ask(2, 0x100005);
    n.ask(3, 0x100007);
    // Each answered from the table, which holds them until the epoch changes: a copy per
    // path in the cache would double what a node talking to the whole fabric holds.
    CHECK(n.sa->counters().pr_preload_hits == 3);
    CHECK(n.sa->counters().pr_cache_misses == 0);
    CHECK(n.sa->cache().size() == 0);
}
