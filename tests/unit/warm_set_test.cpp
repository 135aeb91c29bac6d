// Preload shaped by use (issue 25, item 3): full tables only while the fabric is small; above
// --preload-max-ports the warm set (the Gets this port used, kept across restarts) and the
// admin's destinations are asked instead.
#include "fake_transport.hpp"

#include "engine/cache/warm_set.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"
#include "ib/response.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;

namespace {

// A directory removed at the end of the test.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        char name[] = "/tmp/localsa-warm-XXXXXX";
        REQUIRE(mkdtemp(name) != nullptr);
        path = name;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

std::string read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

bool is_path_table(const SentMad& s) {
    return mad::load_be16(s.bytes, 16) == mad::attr::kPathRecord &&
           s.bytes[3] == mad::method::kGetTable;
}

std::vector<SentMad> path_gets(const std::vector<SentMad>& sent) {
    std::vector<SentMad> out;
    for (const auto& s : sent)
        if (mad::load_be16(s.bytes, 16) == mad::attr::kPathRecord &&
            s.bytes[3] == mad::method::kGet)
            out.push_back(s);
    return out;
}

std::vector<std::uint8_t> table_answer(const std::vector<std::uint8_t>& request,
                                       const std::vector<std::uint8_t>& records) {
    std::vector<std::uint8_t> out(request.begin(), request.begin() + 56);
    out[3] = mad::method::kGetTableResp;
    mad::store_be16(out, 44, records.empty() ? 0 : 8);
    out.insert(out.end(), records.begin(), records.end());
    return out;
}

coherence::CoherenceConfig config() {
    coherence::CoherenceConfig cc;
    cc.spread = 0ms;
    cc.subscribe = false;
    cc.subscription_check = 0ms;
    return cc;
}

// One node: its LocalSa and Coherence on a manual clock.
struct Node {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa;
    coherence::Coherence coh;
    explicit Node(const coherence::CoherenceConfig& cc, LocalSaConfig lc = {})
        : sa(io.get_executor(), clock, transport, lc),
          coh(io.get_executor(), sa.coherence_parts(), cc) {}
    // Runs what is due within `d`; returns what was sent meanwhile (ClassPortInfo aside).
    std::vector<SentMad> run(Clock::duration d) {
        clock.advance(d);
        auto sent = transport.take();
        std::erase_if(sent, [](const SentMad& s) {
            return mad::load_be16(s.bytes, 16) != mad::attr::kPathRecord;
        });
        return sent;
    }
    // A client's Get to `guid`, answered by the master if it misses (above the threshold a
    // cold miss waits out the burst window first).
    void use(std::uint64_t tid, std::uint64_t guid, std::uint16_t dlid) {
        sa.dispatch(from_lid(kOwnLid, path_request(tid, guid)));
        clock.advance(10ms);
        for (const auto& s : transport.take())
            if (s.to.lid == kSmLid && mad::load_be16(s.bytes, 16) == mad::attr::kPathRecord)
                sa.dispatch(from_lid(kSmLid, master_path_answer(s.bytes, dlid)));
        transport.take();
    }
};

} // namespace

TEST_CASE("warm set: kept most recent first, bounded, and read back as written", "[warm]") {
    cache::WarmSet w(2);
    const auto t0 = SteadyClock{}.now();
    auto key = [](std::uint64_t guid) {
        const auto req = path_request(1, guid);
        return cache::PathQueryKey::from_request(mad::method::kGet, mad::load_be64(req, 48),
                                                 mad::Bytes{req}.subspan(56, 64));
    };
    w.note(key(0x100005), t0);
    w.note(key(0x100007), t0 + 1s);
    w.note(key(0x100009), t0 + 2s);
    w.note(key(0x100005), t0 + 3s); // used again: the most recent
    w.fabric_ports = 4096;
    REQUIRE(w.questions() == std::vector{key(0x100005), key(0x100009)});

    cache::WarmSet back(10);
    std::string error;
    REQUIRE(back.from_text(w.to_text(), error));
    CHECK(back.questions() == w.questions());
    CHECK(back.fabric_ports == 4096);

    SECTION("garbage is refused, and the set stays as it was") {
        for (const std::string& bad : std::vector<std::string>{
                 "hello\n", "localsa-warm 1\nports x\n", "localsa-warm 1\n00000000000000ff zz\n",
                 // a field set that its mask does not name
                 "localsa-warm 1\n0000000000000000 " + std::string(127, '0') + "1\n"}) {
            CHECK_FALSE(back.from_text(bad, error));
            CHECK_FALSE(error.empty());
            CHECK(back.size() == 2);
        }
    }
}

TEST_CASE("warm set: trimmed in batches to the most recent, whatever the questions' shapes",
          "[warm]") {
    cache::WarmSet w(4);
    const auto t0 = SteadyClock{}.now();
    // Two shapes (by DGID, and by DLID with a PKey), and a ServiceID that differs per question:
    // a trim renumbers the shapes it keeps.
    auto key = [](int i) {
        const auto req = path_request(1, 0x200000 + static_cast<std::uint64_t>(i));
        auto k = cache::PathQueryKey::from_request(mad::method::kGet, mad::load_be64(req, 48),
                                                   mad::Bytes{req}.subspan(56, 64));
        if (i % 3 == 0) {
            k.comp_mask = sa::pr_mask::kSgid | sa::pr_mask::kDlid | sa::pr_mask::kPKey |
                          sa::pr_mask::kServiceId;
            k.masked = sa::masked_path_record(k.masked, sa::pr_mask::kSgid);
            mad::store_be16(k.masked, sa::pr_offset::kDlid, static_cast<std::uint16_t>(i));
            mad::store_be16(k.masked, sa::pr_offset::kPKey, 0x8001);
            mad::store_be64(k.masked, sa::pr_offset::kServiceId, 0x1060000ULL + i);
        }
        return k;
    };
    for (int i = 0; i < 100; ++i) {
        w.note(key(i), t0 + std::chrono::seconds{i});
        w.note(key(i / 2), t0 + std::chrono::seconds{i}); // an older one used again, then lost
        CHECK(w.size() <= 4);
    }
    // The last uses: 99 and 49 at 99 s, 98 at 98 s (49 again), 97 and 48 at 97 s.
    const auto q = w.questions();
    REQUIRE(q.size() == 4);
    CHECK((q[0] == key(99) || q[0] == key(49)));
    CHECK((q[1] == key(99) || q[1] == key(49)));
    CHECK(q[0] != q[1]);
    CHECK(q[2] == key(98));
    CHECK((q[3] == key(97) || q[3] == key(48)));
    // Read back from its text: the same questions, in the same order.
    cache::WarmSet back(4);
    std::string error;
    REQUIRE(back.from_text(w.to_text(), error));
    CHECK(back.questions() == q);
}

TEST_CASE("warm set: a missing file is empty, a corrupt one is logged and left empty, an "
          "unwritable directory fails the save without throwing",
          "[warm]") {
    TempDir dir;
    cache::WarmSet w(8);
    std::string error;
    CHECK(w.load(dir.path / "none.warm", error));
    CHECK(error.empty());
    std::ofstream(dir.path / "bad.warm") << "\x01\x02garbage";
    CHECK_FALSE(w.load(dir.path / "bad.warm", error));
    CHECK_THAT(error, Catch::Contains("bad.warm"));
    CHECK(w.size() == 0);
    CHECK_FALSE(w.save("/nonexistent-localsa-dir/x.warm", error));
    CHECK_THAT(error, Catch::Contains("/nonexistent-localsa-dir"));
    // Written whole: no temporary file left beside it.
    CHECK(w.save(dir.path / "ok.warm", error));
    CHECK_FALSE(std::filesystem::exists(dir.path / "ok.warm.tmp"));
}

TEST_CASE("admin destinations: GIDs or LIDs, with or without a PKey; a bad line is named",
          "[warm]") {
    std::string error;
    const auto d = cache::parse_destinations(
        "# storage\nfe80::10:0:5 0x8001\n  12\n\n7 32769 # a LID in a partition\n", error);
    REQUIRE(d);
    REQUIRE(d->size() == 3);
    CHECK((*d)[0].gid == gid(0x1000000005ULL));
    CHECK((*d)[0].pkey == 0x8001);
    CHECK((*d)[1].lid == 12);
    CHECK_FALSE((*d)[1].pkey);
    CHECK((*d)[2].pkey == 0x8001);
    const auto q = (*d)[0].question(gid(0x100003));
    CHECK(q.comp_mask == (sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kPKey));
    for (const char* bad : {"fe80::zz\n", "0\n", "12 0\n", "12 0x8001 9\n", "0xc001\n"}) {
        CHECK_FALSE(cache::parse_destinations(bad, error));
        CHECK_THAT(error, Catch::Contains("line 1"));
    }
}

TEST_CASE("preload: above --preload-max-ports a start asks no table", "[warm]") {
    auto cc = config();
    cc.preload_max_ports = 100;
    cc.fabric_ports = 1000;
    Node n(cc);
    n.coh.start();
    const auto sent = n.run(10ms);
    CHECK(std::none_of(sent.begin(), sent.end(), is_path_table));
    CHECK(n.sa.counters().preload_transactions == 0);
    nlohmann::json j;
    n.coh.add_stats(j);
    CHECK(j["preload_mode"] == "warm");

    SECTION("at or below it, the full table as before") {
        auto small = config();
        small.preload_max_ports = 1000;
        small.fabric_ports = 1000;
        Node m(small);
        m.coh.start();
        const auto s = m.run(10ms);
        CHECK(std::count_if(s.begin(), s.end(), is_path_table) == 1);
    }
}

TEST_CASE("preload: auto threshold is the fabric whose tables a power-on can afford", "[warm]") {
    coherence::CoherenceConfig cc;
    // 20,000 records/s for 30 s: N^2 <= 600,000.
    CHECK(cc.preload_max_ports_auto() == 774);
    // Starts at once (a spread of 0) do not turn the full tables off.
    cc.spread = 0ms;
    CHECK(cc.preload_max_ports_auto() == 774);
    cc.spread = 120s;
    CHECK(cc.preload_max_ports_auto() == 1549);
    cc.master_capacity = 100;
    CHECK(cc.preload_max_ports_auto() == 109);
}

TEST_CASE("preload: a table that shows a fabric above the threshold is used, not renewed",
          "[warm]") {
    auto cc = config();
    cc.preload_max_ports = 2; // the fabric's size is not known: the first table tells it
    Node n(cc);
    n.coh.start();
    auto sent = n.run(10ms);
    REQUIRE(sent.size() == 1);
    REQUIRE(is_path_table(sent[0]));
    n.sa.dispatch(from_lid(
        kSmLid, table_answer(sent[0].bytes,
                             table_records({{0x100005, 8}, {0x100007, 9}, {0x100009, 10}}))));
    n.run(20ms);
    CHECK(n.coh.preload_state() == "done");
    // Used: a hit from the table (asked with the PKey, as the kernel asks).
    auto req = path_request(0x42, 0x100005, mad::method::kGet, sa::pr_mask::kPKey);
    mad::store_be16(req, 56 + 50, 0xffff);
    n.sa.dispatch(from_lid(kOwnLid, req));
    CHECK(n.sa.counters().pr_preload_hits == 1);
    n.transport.take();
    // Today's rule renews a used table at 0.8 TTL; above the threshold it is not.
    sent = n.run(5min);
    CHECK(std::none_of(sent.begin(), sent.end(), is_path_table));
    CHECK(n.sa.counters().preload_transactions == 1);
}

TEST_CASE("preload: the warm set is kept at exit and asked at the next start", "[warm]") {
    TempDir dir;
    auto cc = config();
    cc.preload_max_ports = 100;
    cc.fabric_ports = 1000;
    cc.master_transactions = 10'000'000; // a start window of about 1 ms
    cc.warm_file = dir.path / "fake0-1.warm";
    {
        Node n(cc);
        n.coh.start();
        n.run(10ms);
        n.use(0x10, 0x100005, 8);
        n.use(0x11, 0x100007, 9);
        bool done = false;
        n.coh.shutdown([&] { done = true; });
        n.run(5s);
    }
    REQUIRE(std::filesystem::exists(cc.warm_file));
    CHECK_THAT(read(cc.warm_file), Catch::StartsWith("localsa-warm 1\n"));

    Node again(cc);
    again.coh.start();
    const auto gets = path_gets(again.run(60ms)); // one per 50 ms (--master-rate 20)
    REQUIRE(gets.size() == 2);
    // The very questions asked before: a requester's Get then hits.
    std::vector<std::uint64_t> asked;
    for (const auto& g : gets) {
        CHECK(g.to.lid == kSmLid);
        CHECK(mad::load_be64(g.bytes, 48) == mad::load_be64(path_request(0, 0x100005), 48));
        asked.push_back(sa::PathRecord::unpack(mad::Bytes{g.bytes}.subspan(56)).dgid.guid());
        again.sa.dispatch(from_lid(kSmLid, master_path_answer(g.bytes, 8)));
    }
    std::sort(asked.begin(), asked.end());
    CHECK(asked == std::vector<std::uint64_t>{0x100005, 0x100007});
    CHECK(again.sa.counters().warm_queries == 2);
    CHECK(again.coh.preload_state() == "warm");
    again.transport.take();
    again.sa.dispatch(from_lid(kOwnLid, path_request(0x20, 0x100007)));
    const auto answered = again.transport.take();
    REQUIRE(answered.size() == 1);
    CHECK(answered[0].to.lid == kOwnLid); // from the cache
    CHECK(again.sa.counters().pr_cache_hits == 1);
}

TEST_CASE("preload: a large fabric's warm-up asks what the master's transactions allow, "
          "spread over the start window",
          "[warm][startup]") {
    // 16,384 nodes powered on with 1,024 warm questions each asked 1.7e7 Gets within the
    // 30 s spread. Now: at most --master-transactions x 10 min / ports beside the start's 9
    // queries (27 at 16,384 ports), the most recent first, one at a time over the window.
    TempDir dir;
    auto cc = config();
    cc.preload_max_ports = 100;
    cc.fabric_ports = 1000;
    cc.master_transactions = 10'000'000;
    cc.warm_file = dir.path / "fake0-1.warm";
    {
        Node n(cc);
        n.coh.start();
        n.run(10ms);
        for (std::uint64_t i = 0; i < 100; ++i)
            n.use(0x10 + i, 0x100005 + i, static_cast<std::uint16_t>(8 + i));
        bool done = false;
        n.coh.shutdown([&] { done = true; });
        n.run(5s);
    }
    cc.fabric_ports = 16384;
    cc.master_transactions = 1000;
    Node again(cc);
    const auto t0 = again.clock.now();
    again.coh.start();
    // (9 + 27) x 16,384 / 1,000 s
    CHECK(again.coh.start_window() == 589824ms);
    std::vector<Clock::duration> at;
    std::set<std::uint64_t> asked;
    for (int step = 0; step < 1300; ++step) { // 21 min 40 s
        for (const auto& g : again.run(1s)) {
            // First asks only (an answer is refreshed on the TTL rules later).
            if (asked.insert(sa::PathRecord::unpack(mad::Bytes{g.bytes}.subspan(56)).dgid.guid())
                    .second)
                at.push_back(again.clock.now() - t0);
            again.sa.dispatch(from_lid(kSmLid, master_path_answer(g.bytes, 8)));
        }
    }
    CHECK(at.size() == 27);
    CHECK(again.sa.counters().warm_queries == 27);
    CHECK(asked.count(0x100005 + 99) == 1); // the most recent first
    CHECK(asked.count(0x100005) == 0);
    REQUIRE(at.size() >= 2);
    CHECK(at.back() - at.front() >= 9min); // one at a time over the window, not at once
    CHECK(at.back() <= 589824ms * 2 + 2s);
}

TEST_CASE("preload: a corrupt warm file starts empty, and an admin's destinations are asked",
          "[warm]") {
    TempDir dir;
    auto cc = config();
    cc.preload_max_ports = 100;
    cc.fabric_ports = 1000;
    cc.master_transactions = 10'000'000; // a start window of about 1 ms
    cc.warm_file = dir.path / "fake0-1.warm";
    std::ofstream(cc.warm_file) << "localsa-warm 1\nnot a line\n";
    std::string error;
    cc.preload_destinations = *cache::parse_destinations("fe80::10:0:9 0xffff\n", error);
    Node n(cc);
    n.coh.start();
    const auto gets = path_gets(n.run(10ms));
    REQUIRE(gets.size() == 1);
    const auto r = sa::PathRecord::unpack(mad::Bytes{gets[0].bytes}.subspan(56));
    CHECK(r.dgid == gid(0x1000000009ULL));
    CHECK(r.pkey == 0xffff);
    CHECK(n.sa.counters().warm_queries == 1);
}

namespace {
// A client Get from this port to `guid` in the default partition, as the kernel asks it.
std::vector<std::uint8_t> pkey_get(std::uint64_t tid, std::uint64_t guid) {
    auto req = path_request(tid, guid, mad::method::kGet, sa::pr_mask::kPKey);
    mad::store_be16(req, 56 + 50, 0xffff);
    return req;
}

// The table of this port's paths to `ports` destinations (GUID 0x200000 + i, LID 100 + i).
std::vector<std::uint8_t> fabric_table(std::size_t ports) {
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i < ports; ++i) {
        const auto r = table_records({{0x200000 + i, static_cast<std::uint16_t>(100 + i)}});
        out.insert(out.end(), r.begin(), r.end());
    }
    return out;
}

// Above --preload-max-ports (10) on a fabric of 100 ports: a burst is 50 distinct misses.
coherence::CoherenceConfig burst_config() {
    auto cc = config();
    cc.preload_max_ports = 10;
    cc.fabric_ports = 100;
    cc.master_capacity = 100'000'000; // takes every table at once: no pacing
    return cc;
}

std::size_t busy_answers(const std::vector<SentMad>& sent) {
    return static_cast<std::size_t>(std::count_if(sent.begin(), sent.end(), [](const SentMad& s) {
        return s.to.lid == kOwnLid && s.bytes[3] == mad::method::kGetResp &&
               mad::load_be16(s.bytes, 4) == mad::status::kBusy;
    }));
}
std::size_t answers_to_clients(const std::vector<SentMad>& sent) {
    return static_cast<std::size_t>(std::count_if(sent.begin(), sent.end(), [](const SentMad& s) {
        return s.to.lid == kOwnLid && s.bytes[3] == mad::method::kGetResp;
    }));
}
} // namespace

TEST_CASE("burst: cold misses to half the fabric at once cost one GetTable, not a Get each",
          "[warm][burst]") {
    Node n(burst_config());
    n.coh.start();
    n.run(10ms);
    REQUIRE(n.sa.path_records().miss_burst().threshold == 50);
    // An all-to-all job start: this node's ranks ask 60 destinations at once.
    for (std::uint64_t i = 0; i < 60; ++i)
        n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x1000 + i, 0x200000 + i)));
    // Held for the coalescing window, then one table.
    CHECK(path_gets(n.transport.take()).empty());
    auto sent = n.run(5ms);
    CHECK(path_gets(sent).empty());
    REQUIRE(std::count_if(sent.begin(), sent.end(), is_path_table) == 1);
    const auto table = *std::find_if(sent.begin(), sent.end(), is_path_table);
    CHECK(n.sa.counters().burst_tables == 1);
    CHECK(n.sa.counters().burst_held == 60);
    // Every requester is answered from the table, with the master's record for its destination.
    n.sa.dispatch(from_lid(kSmLid, table_answer(table.bytes, fabric_table(100))));
    const auto answered = n.transport.take();
    CHECK(answers_to_clients(answered) == 60);
    for (const auto& a : answered) {
        if (a.to.lid != kOwnLid)
            continue;
        const auto tid = mad::load_be64(a.bytes, 8);
        CHECK(mad::load_be16(a.bytes, 56 + 40) == 100 + (tid - 0x1000)); // DLID
    }
    CHECK(n.sa.counters().pr_preload_hits == 60);
    CHECK(n.sa.path_records().burst_held() == 0);
    // Later misses of the partition are table hits: the master is not asked again.
    n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x2000, 0x200000 + 99)));
    CHECK(path_gets(n.run(10ms)).empty());
    CHECK(n.sa.counters().pr_preload_hits == 61);

    SECTION("the table is not renewed: after an hour nothing was asked") {
        const auto later = n.run(1h);
        CHECK(std::none_of(later.begin(), later.end(), is_path_table));
    }
}

TEST_CASE("burst: a few cold misses go one by one after the coalescing window", "[warm][burst]") {
    Node n(burst_config());
    n.coh.start();
    n.run(10ms);
    for (std::uint64_t i = 0; i < 5; ++i)
        n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x1000 + i, 0x200000 + i)));
    CHECK(path_gets(n.transport.take()).empty());
    const auto sent = n.run(5ms);
    CHECK(path_gets(sent).size() == 5);
    CHECK(std::none_of(sent.begin(), sent.end(), is_path_table));
    CHECK(n.sa.counters().burst_tables == 0);
    // Misses spread over the window add up: 45 more within the second make a burst.
    for (std::uint64_t i = 5; i < 50; ++i)
        n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x1000 + i, 0x200000 + i)));
    const auto more = n.run(5ms);
    CHECK(path_gets(more).empty());
    CHECK(std::count_if(more.begin(), more.end(), is_path_table) == 1);
}

TEST_CASE("burst: a table that does not come is not waited for again; late misses are not sent",
          "[warm][burst]") {
    Node n(burst_config());
    n.coh.start();
    n.run(10ms);
    for (std::uint64_t i = 0; i < 60; ++i)
        n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x1000 + i, 0x200000 + i)));
    auto sent = n.run(5ms);
    REQUIRE(std::count_if(sent.begin(), sent.end(), is_path_table) == 1);
    // One try only (a late table is a busy master: asking again adds one), waiting as long as
    // OpenSM keeps a request queued (10 s) and the transfer, then the misses are released;
    // their requesters stopped waiting long ago, so none is sent.
    sent = n.run(10s);
    CHECK(n.sa.path_records().burst_held() == 60);
    sent = n.run(1s);
    CHECK(std::none_of(sent.begin(), sent.end(), is_path_table));
    CHECK(path_gets(sent).empty());
    CHECK(n.sa.path_records().burst_held() == 0);
    // A new miss reads through at once, not held for another table.
    n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x3000, 0x200000 + 70)));
    CHECK(path_gets(n.transport.take()).size() == 1);
}

TEST_CASE("burst: below the threshold a miss goes at once, never held", "[warm][burst]") {
    auto cc = config();
    cc.preload_max_ports = 1000;
    cc.fabric_ports = 100;
    Node n(cc);
    n.coh.start();
    n.run(10ms);
    CHECK(n.sa.path_records().miss_burst().threshold == 0);
    n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x1000, 0x200000)));
    CHECK(path_gets(n.transport.take()).size() == 1);
}

TEST_CASE("burst: the table waits for this port's turn in the window the master's capacity "
          "needs; retries meanwhile never become Gets",
          "[warm][burst]") {
    auto cc = burst_config();
    // 60 misses: about 60 ports asking 100 records each, 6,000 records at 1,000 a second, a
    // window of 6 s; LID 5 is the 5th of 100 ports: its turn is at 4% of it, 240 ms.
    cc.master_capacity = 1000;
    // Requesters that wait for their live local SA (the kernel's probe before fallback).
    LocalSaConfig lc;
    lc.path_record.requester_deadline = 10s;
    Node n(cc, lc);
    n.coh.start();
    n.run(10ms);
    for (std::uint64_t i = 0; i < 60; ++i)
        n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x1000 + i, 0x200000 + i)));
    auto sent = n.run(230ms);
    CHECK(std::none_of(sent.begin(), sent.end(), is_path_table));
    CHECK(path_gets(sent).empty());
    CHECK(n.sa.counters().burst_tables == 1);
    // Requesters retry while they wait (new TIDs): more than the hold's bound (4 x 50 + 256).
    for (std::uint64_t r = 0; r < 500; ++r)
        n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x5000 + r, 0x200000 + r % 60)));
    CHECK(path_gets(n.transport.take()).empty());
    CHECK(n.sa.path_records().burst_held() == 4 * 50 + 256);
    sent = n.run(20ms);
    REQUIRE(std::count_if(sent.begin(), sent.end(), is_path_table) == 1);
    CHECK(path_gets(sent).empty());
    const auto table = *std::find_if(sent.begin(), sent.end(), is_path_table);
    n.sa.dispatch(from_lid(kSmLid, table_answer(table.bytes, fabric_table(100))));
    CHECK(answers_to_clients(n.transport.take()) == 4 * 50 + 256);
    CHECK(n.sa.path_records().burst_held() == 0);
}

TEST_CASE("burst: a table paced past what the requesters wait: they are answered BUSY until it "
          "comes, and the master is asked nothing else",
          "[warm][burst]") {
    auto cc = burst_config();
    cc.master_capacity = 1000; // LID 5's turn is at 240 ms
    Node n(cc); // requesters wait 200 ms (--requester-deadline-ms), half for the master
    n.coh.start();
    n.run(10ms);
    for (std::uint64_t i = 0; i < 60; ++i)
        n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x1000 + i, 0x200000 + i)));
    // The table's turn is past their wait, so BUSY (a requester that gave up would ask the
    // master itself), not a table within their wait; from the 50th miss on (the burst's
    // threshold: its table can only come later), not held until the window's end.
    CHECK(n.sa.path_records().burst_held() == 0);
    auto sent = n.run(10ms);
    CHECK(busy_answers(sent) == 60);
    CHECK(answers_to_clients(sent) == 60);
    CHECK(std::none_of(sent.begin(), sent.end(), is_path_table));
    CHECK(path_gets(sent).empty());
    CHECK(n.sa.path_records().burst_held() == 0);
    // Their retries (new TIDs) while the table waits for its turn: BUSY at once, never held.
    for (std::uint64_t r = 0; r < 100; ++r)
        n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x5000 + r, 0x200000 + r % 60)));
    sent = n.transport.take();
    CHECK(busy_answers(sent) == 100);
    CHECK(path_gets(sent).empty());
    CHECK(n.sa.path_records().burst_held() == 0);
    CHECK(n.sa.counters().pr_busy == 160);
    sent = n.run(250ms);
    REQUIRE(std::count_if(sent.begin(), sent.end(), is_path_table) == 1);
    CHECK(path_gets(sent).empty());
    const auto table = *std::find_if(sent.begin(), sent.end(), is_path_table);
    n.sa.dispatch(from_lid(kSmLid, table_answer(table.bytes, fabric_table(100))));
    n.transport.take();
    // The table came: the retries are answered from it.
    n.sa.dispatch(from_lid(kOwnLid, pkey_get(0x6000, 0x200000 + 7)));
    sent = n.transport.take();
    CHECK(answers_to_clients(sent) == 1);
    CHECK(busy_answers(sent) == 0);
    CHECK(n.sa.counters().pr_busy == 160);
}
