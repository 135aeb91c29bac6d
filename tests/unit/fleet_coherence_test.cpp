// Coherence at fleet scale (docs/localsad.md, Coherence): refresh follows use, one background
// budget per node, preload O(1) per event, and answers the master would not give. Over the fake
// transport, playing the master.
#include "fake_transport.hpp"

#include "engine/cache/path_cache.hpp"
#include "engine/cache/preload_table.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/coherence/refresher.hpp"
#include "engine/local_sa.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/notice.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <optional>
#include <set>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;

namespace {

cache::PathQueryKey key_of(std::uint8_t b) {
    cache::PathQueryKey k;
    k.masked[8] = b;
    return k;
}

cache::PathAnswer one_record(Clock::time_point refresh_at, Clock::time_point expires,
                             std::optional<Clock::time_point> used = std::nullopt) {
    cache::PathAnswer a;
    a.records.resize(64);
    a.refresh_at = refresh_at;
    a.expires = expires;
    a.used_at = used;
    return a;
}

std::vector<std::uint8_t> report_mad(std::uint16_t trap, std::uint64_t guid, std::uint64_t tid) {
    mad::SaMad r;
    r.header.method = mad::method::kReport;
    r.header.attr_id = mad::attr::kNotice;
    r.header.tid = tid;
    sa::Notice n;
    n.trap_number = trap;
    const auto g = gid(guid);
    std::copy(g.raw.begin(), g.raw.end(), n.data_details.begin() + 6);
    n.pack(r.data);
    return r.pack();
}

// The master's GetTable answer to `request` carrying `records`.
std::vector<std::uint8_t> table_answer(const std::vector<std::uint8_t>& request,
                                       const std::vector<std::uint8_t>& records) {
    std::vector<std::uint8_t> out(request.begin(), request.begin() + 56);
    out[3] = mad::method::kGetTableResp;
    mad::store_be16(out, 44, records.empty() ? 0 : 8);
    out.insert(out.end(), records.begin(), records.end());
    return out;
}

std::size_t count_attr(const std::vector<SentMad>& sent, std::uint16_t attr, std::uint16_t lid) {
    return std::count_if(sent.begin(), sent.end(), [&](const SentMad& s) {
        return mad::load_be16(s.bytes, 16) == attr && s.to.lid == lid;
    });
}

// A Get as rdma_cm or ipoib sends it: SGID, DGID, PKey (full member), Reversible, NumbPath.
std::vector<std::uint8_t> kernel_request(std::uint64_t tid, std::uint64_t dguid,
                                         std::uint16_t pkey = 0xffff) {
    auto req = path_request(tid, dguid, mad::method::kGet, sa::pr_mask::kPKey);
    mad::store_be16(req, 56 + 50, pkey);
    return req;
}

// One cached answer from the master for the path to `guid`.
void cache_path(LocalSa& sa, FakeTransport& transport, std::uint64_t guid, std::uint16_t dlid) {
    sa.dispatch(from_lid(kOwnLid, path_request(guid, guid)));
    auto up = transport.take();
    REQUIRE(up.size() == 1);
    REQUIRE(up[0].to.lid == kSmLid);
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, dlid)));
    transport.take();
}

} // namespace

// ------------------------------------------------------------------ 1. refresh follows use

TEST_CASE("an answer unused within the idle window is dropped, not refreshed", "[cache][idle]") {
    cache::PathCache c(10);
    const auto t0 = SteadyClock{}.now();
    c.store(key_of(1), one_record(t0 + 10s, t0 + 1h, t0)); // used when stored (a miss)
    c.store(key_of(2), one_record(t0 + 10s, t0 + 1h, t0));
    REQUIRE(c.find(key_of(2), t0 + 5s)); // key 2 used again
    const auto due = c.due_for_refresh(t0 + 11s, 10, 8s);
    REQUIRE(due.size() == 1);
    CHECK(due[0] == key_of(2));
    CHECK(c.size() == 1);
    CHECK(c.idle_expired() == 1);
    CHECK_FALSE(c.peek(key_of(1)));
}

TEST_CASE("a refresh stored again keeps the last use; a refresh is no use", "[cache][idle]") {
    cache::PathCache c(10);
    const auto t0 = SteadyClock{}.now();
    c.store(key_of(1), one_record(t0 + 10s, t0 + 1h, t0));
    REQUIRE(c.due_for_refresh(t0 + 11s, 10, 12s).size() == 1); // used 11 s ago: refreshed
    c.store(key_of(1), one_record(t0 + 21s, t0 + 1h));         // the refresh's answer
    CHECK(c.peek(key_of(1)));                                  // a peek is no use either
    CHECK(c.due_for_refresh(t0 + 22s, 10, 12s).empty());       // idle 22 s: dropped
    CHECK(c.size() == 0);
}

TEST_CASE("by default an answer is refreshed only when used since its last refresh",
          "[cache][idle]") {
    cache::PathCache c(10);
    const auto t0 = SteadyClock{}.now();
    constexpr auto since_refresh = Clock::duration::zero();
    c.store(key_of(1), one_record(t0 + 10s, t0 + 1h, t0)); // a miss: used
    c.store(key_of(2), one_record(t0 + 10s, t0 + 1h, t0));
    REQUIRE(c.due_for_refresh(t0 + 11s, 10, since_refresh).size() == 2);
    c.store(key_of(1), one_record(t0 + 21s, t0 + 1h)); // the refreshes' answers
    c.store(key_of(2), one_record(t0 + 21s, t0 + 1h));
    REQUIRE(c.find(key_of(2), t0 + 15s)); // only 2 used since
    const auto due = c.due_for_refresh(t0 + 22s, 10, since_refresh);
    REQUIRE(due.size() == 1);
    CHECK(due[0] == key_of(2));
    CHECK_FALSE(c.peek(key_of(1)));
    // A failed refresh put back for a later try keeps its use.
    auto retry = one_record(t0 + 27s, t0 + 1h);
    retry.keep_use = true;
    c.store(key_of(2), retry);
    CHECK(c.due_for_refresh(t0 + 28s, 10, since_refresh).size() == 1);
}

TEST_CASE("a late refresh never holds back younger entries", "[cache][idle]") {
    cache::PathCache c(10);
    const auto t0 = SteadyClock{}.now();
    // Stored first, due last (a failed refresh tried again later is stored like this).
    c.store(key_of(1), one_record(t0 + 50s, t0 + 1h, t0));
    c.store(key_of(2), one_record(t0 + 5s, t0 + 1h, t0));
    c.store(key_of(3), one_record(t0 + 6s, t0 + 1h, t0));
    const auto due = c.due_for_refresh(t0 + 7s, 10);
    REQUIRE(due.size() == 2);
    CHECK(due[0] == key_of(2));
    CHECK(due[1] == key_of(3));
}

TEST_CASE("a full cache evicts an idle answer before a used one", "[cache][idle]") {
    cache::PathCache c(4);
    const auto t0 = SteadyClock{}.now();
    for (std::uint8_t i = 1; i <= 4; ++i)
        c.store(key_of(i), one_record(t0 + 1h, t0 + 2h, t0));
    for (std::uint8_t i : {1, 2, 4})
        REQUIRE(c.find(key_of(i), t0 + 10s)); // 3 stays idle
    c.store(key_of(5), one_record(t0 + 1h, t0 + 2h, t0 + 11s));
    CHECK(c.size() == 4);
    CHECK_FALSE(c.peek(key_of(3)));
    for (std::uint8_t i : {1, 2, 4, 5})
        CHECK(c.peek(key_of(i)));
}

TEST_CASE("coherence: only used answers are refreshed, idle ones leave the cache",
          "[coherence][idle]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSaConfig lc;
    lc.path_record.positive_ttl = 100ms;
    LocalSa sa(io.get_executor(), clock, transport, lc);
    coherence::CoherenceConfig cc;
    cc.subscribe = false;
    cc.preload = false;
    cc.idle_window = 100ms;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    cache_path(sa, transport, 0x100005, 8);
    cache_path(sa, transport, 0x100007, 11);
    // Keep using the path to 0x100005 only, for about 4 TTLs.
    std::size_t refreshes = 0;
    for (int i = 0; i < 40; ++i) {
        clock.advance(10ms);
        sa.dispatch(from_lid(kOwnLid, path_request(0x900 + i, 0x100005)));
        for (const auto& s : transport.take()) {
            if (s.to.lid != kSmLid)
                continue;
            ++refreshes;
            CHECK(sa::PathRecord::unpack(mad::Bytes{s.bytes}.subspan(56)).dgid == gid(0x100005));
            sa.dispatch(from_lid(kSmLid, master_path_answer(s.bytes, 8)));
        }
    }
    CHECK(refreshes >= 2);
    CHECK(refreshes <= 5);
    CHECK(sa.cache().size() == 1);
    CHECK(sa.cache().idle_expired() == 1);
    CHECK(sa.counters().pr_cache_misses == 2);
}

TEST_CASE("the refresher sleeps until an answer falls due: an idle hour costs no wake-up",
          "[coherence][idle][wakeups]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSaConfig lc;
    lc.path_record.positive_ttl = 300s;
    LocalSa sa(io.get_executor(), clock, transport, lc);
    auto parts = sa.coherence_parts();
    coherence::Refresher refresher(io.get_executor(), clock, parts.cache, parts.path_records,
                                   parts.upstream, 200, 0ms);
    refresher.start();

    // Nothing cached: a node whose answers the routing epoch vouches for is in this state.
    // (Ticking ten times a second, the refresher woke 36,000 times in this hour.)
    auto fired = clock.fired();
    clock.advance(1h);
    CHECK(clock.fired() - fired == 0);

    // One answer, used once: refreshed once at its refresh time, then dropped unused; the
    // hour costs a few wake-ups, not one per slice.
    cache_path(sa, transport, 0x100005, 8);
    std::optional<Clock::time_point> refresh_at;
    sa.cache().for_each(
        [&](const cache::PathQueryKey&, const cache::PathAnswer& a) { refresh_at = a.refresh_at; });
    REQUIRE(refresh_at);
    fired = clock.fired();
    clock.advance_to(*refresh_at - 1ms);
    CHECK(transport.take().empty());
    clock.advance(2ms);
    auto up = transport.take();
    REQUIRE(up.size() == 1); // the refresh, at its time
    CHECK(up[0].to.lid == kSmLid);
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    clock.advance(1h);
    CHECK(transport.take().empty());
    CHECK(sa.cache().size() == 0); // unused since: dropped at its next refresh time
    CHECK(clock.fired() - fired <= 4);
}

TEST_CASE("a store that queues an earlier refresh wakes the sleeping refresher",
          "[coherence][idle][wakeups]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, LocalSaConfig{});
    auto parts = sa.coherence_parts();
    coherence::Refresher refresher(io.get_executor(), clock, parts.cache, parts.path_records,
                                   parts.upstream, 200, 0ms);
    refresher.start();
    const auto t0 = clock.now();
    parts.cache.store(key_of(1), one_record(t0 + 10min, t0 + 1h, t0));
    clock.advance(1s); // asleep until t0 + 10 min
    parts.cache.store(key_of(2), one_record(t0 + 1min, t0 + 1h, t0));
    clock.advance_to(t0 + 1min - 1ms);
    CHECK(transport.take().empty());
    clock.advance(2ms);
    auto up = transport.take();
    REQUIRE(up.size() == 1); // key 2's refresh, on time
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    clock.advance_to(t0 + 10min - 1ms);
    CHECK(transport.take().empty()); // key 2 unused since: dropped, not refreshed
    clock.advance(2ms);
    up = transport.take();
    REQUIRE(up.size() == 1); // key 1's
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    refresher.stop();
    parts.cache.store(key_of(3), one_record(clock.now() + 1min, clock.now() + 1h, clock.now()));
    clock.advance(1h);
    CHECK(transport.take().empty()); // stopped: no store wakes it
}

// ------------------------------------------------------------------ 3. one budget per node

TEST_CASE("upstream: background queries draw from one token bucket, clients go first",
          "[upstream][budget]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    Counters counters;
    upstream::UpstreamConfig uc;
    uc.background_rate = 100; // one token per 10 ms
    uc.background_burst = 3;
    uc.try_timeout = 1s;
    upstream::UpstreamClient up(io.get_executor(), clock, transport, counters, uc);
    upstream::SubmitOptions bg;
    bg.priority = upstream::Priority::Background;
    for (int i = 0; i < 10; ++i)
        up.submit(
            path_request(0x100 + i, 0x100005), [](upstream::Reply) {}, bg);
    CHECK(transport.take().size() == 3); // the burst
    up.submit(path_request(0x200, 0x100005), [](upstream::Reply) {});
    auto sent = transport.take();
    REQUIRE(sent.size() == 1); // a client query goes at once, past the queued background ones
    CHECK(mad::load_be16(sent[0].bytes, 56 + 22) == 0x0005);
    const auto t0 = clock.now();
    clock.advance(55ms);
    const auto elapsed = clock.now() - t0;
    const auto n = transport.take().size();
    // At most one per 10 ms (plus the token the client did not leave): never over budget.
    CHECK(n >= 2);
    CHECK(n <= static_cast<std::size_t>(elapsed / 10ms) + 1);
}

namespace {

// Runs `span` in 100 ms steps as the master: every Set confirmed, every subscription audit
// answered (TOO_MANY_RECORDS: not judged lost); returns when each audit came.
std::vector<Clock::time_point> run_auditing(ManualClock& clock, FakeTransport& transport,
                                            LocalSa& sa, Clock::duration span) {
    std::vector<Clock::time_point> checks;
    for (auto t = Clock::duration{}; t < span; t += 100ms) {
        clock.advance(100ms);
        for (const auto& s : transport.take()) {
            if (s.to.lid != kSmLid)
                continue;
            if (mad::load_be16(s.bytes, 16) == mad::attr::kInformInfoRecord) {
                checks.push_back(clock.now());
                sa.dispatch(from_lid(
                    kSmLid, master_status_answer(s.bytes, mad::status::kSaTooManyRecords)));
            } else {
                sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
            }
        }
    }
    return checks;
}

} // namespace

TEST_CASE("subscription checks are jittered: nodes started together do not ask together",
          "[coherence][budget]") {
    // Before, every node asked at exactly start + k x 60 s: a fabric whose nodes started
    // together (a reboot, a package upgrade) sent all its checks in the same second, forever
    // (N queries at once every minute; localsa-fleet-scale, docs/benchmarks.md part d).
    boost::asio::io_context io;
    ManualClock clock(io);
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.preload = false;
    cc.subscription_check = 60s;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    const auto checks = run_auditing(clock, transport, sa, 10min);
    REQUIRE(checks.size() >= 8);
    std::set<Clock::duration> intervals;
    for (std::size_t i = 1; i < checks.size(); ++i) {
        const auto gap = checks[i] - checks[i - 1];
        intervals.insert(gap);
        CHECK(gap >= 54s);     // 0.9 of the period
        CHECK(gap <= 66100ms); // 1.1 of it, plus one step
    }
    CHECK(intervals.size() > 1); // not one fixed period
}

TEST_CASE("a large fabric's nodes audit their subscriptions less often", "[coherence][budget]") {
    // Every node audited each minute whatever the fabric: at 16,384 ports 273 GetTables a
    // second that OpenSM answers by walking all 115 k subscriptions of the subnet. At most 5%
    // of --master-transactions: 16,384 ports at 1,000/s, one audit per node per 328 s.
    boost::asio::io_context io;
    ManualClock clock(io);
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.preload = false;
    cc.subscription_check = 60s;
    cc.fabric_ports = 16384;
    cc.master_transactions = 1000;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    CHECK(coh.audit_period() == 327680ms);
    coh.start();
    const auto checks = run_auditing(clock, transport, sa, 1h);
    REQUIRE(checks.size() >= 5);
    CHECK(checks.size() <= 12); // about 10 after the start's spread; 57 at one a minute
    for (std::size_t i = 1; i < checks.size(); ++i)
        CHECK(checks[i] - checks[i - 1] >= 294s); // 0.9 of the period
    // A small fabric keeps --subscription-check-s.
    cc.fabric_ports = 256;
    coherence::Coherence small(io.get_executor(), sa.coherence_parts(), cc);
    CHECK(small.audit_period() == 60s);
    cc.subscription_check = 0s;
    coherence::Coherence never(io.get_executor(), sa.coherence_parts(), cc);
    CHECK(never.audit_period() == 0s);
}

TEST_CASE("subscriptions the master does not confirm are sent again less and less often",
          "[coherence][budget][startup]") {
    // A fabric powered on at once overloads the master; a Set every 5 s from every node kept
    // it overloaded for good (localsa-fleet-scale at N = 4,096: 3.7 M InformInfo Sets an
    // hour). The rounds back off, doubling up to 5 min.
    boost::asio::io_context io;
    ManualClock clock(io);
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.preload = false;
    cc.subscription_check = 0s;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    std::vector<Clock::time_point> rounds;
    const auto t0 = clock.now();
    for (int step = 0; step < 18000; ++step) { // 30 minutes, the master drops every Set
        clock.advance(100ms);
        const bool set = count_attr(transport.take(), mad::attr::kInformInfo, kSmLid) > 0;
        if (set && (rounds.empty() || clock.now() - rounds.back() > 2s))
            rounds.push_back(clock.now());
    }
    REQUIRE(rounds.size() >= 5);
    CHECK(rounds.size() <= 16); // about 12: 2.5-5 s, then doubling to 150-300 s
    CHECK(rounds.back() - t0 >= 20min);
    CHECK(rounds.back() - rounds[rounds.size() - 2] >= 150s);
    // Then the master confirms them: nothing more is sent.
    for (int step = 0; step < 6000; ++step) {
        clock.advance(100ms);
        for (const auto& s : transport.take())
            if (s.to.lid == kSmLid)
                sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
    }
    bool quiet = true;
    for (int step = 0; step < 6000; ++step) {
        clock.advance(100ms);
        quiet &= count_attr(transport.take(), mad::attr::kInformInfo, kSmLid) == 0;
    }
    CHECK(quiet);
}

TEST_CASE("a start spreads its subscriptions over the fabric's share of the master's "
          "transactions",
          "[coherence][budget][startup]") {
    // 4,096 ports, 9 queries each at start, 1,000 transactions a second: 36.9 s.
    std::vector<Clock::duration> first_set;
    std::chrono::milliseconds window{};
    for (int node = 0; node < 10; ++node) {
        boost::asio::io_context io;
        ManualClock clock(io);
        FakeTransport transport;
        LocalSa sa(io.get_executor(), clock, transport, {});
        coherence::CoherenceConfig cc;
        cc.preload = false;
        cc.subscription_check = 0s;
        cc.fabric_ports = 4096;
        cc.master_transactions = 1000;
        coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
        window = coh.start_window();
        const auto t0 = clock.now();
        coh.start();
        std::optional<Clock::duration> at;
        for (int step = 0; step < 400 && !at; ++step) {
            clock.advance(100ms);
            if (count_attr(transport.take(), mad::attr::kInformInfo, kSmLid) > 0)
                at = clock.now() - t0;
        }
        REQUIRE(at);
        first_set.push_back(*at);
    }
    CHECK(window == 36864ms);
    for (auto at : first_set)
        CHECK(at <= 36864ms + 100ms);
    // Spread over the window, not all at once (all ten in its first 5 s: a chance of 1e-9).
    CHECK(std::count_if(first_set.begin(), first_set.end(), [](auto at) { return at > 5s; }) >= 1);
}

TEST_CASE("a start on a large fabric reads the master's ClassPortInfo at its own point of the "
          "window",
          "[coherence][budget][startup]") {
    // 16,384 nodes powered on within 10 s read ClassPortInfo at once: 1,640 a second, which
    // with the clients' first Gets passed the master's capacity (localsa-fleet-scale
    // power-on, 1.08x at 9 s). The start as localsad runs it: Coherence first, then
    // LocalSa::start() unless the spread reads ClassPortInfo later.
    const auto start = [](LocalSa& sa, coherence::Coherence& coh) {
        coh.start();
        if (!coh.class_port_info_deferred())
            sa.start();
    };
    std::vector<Clock::duration> reads;
    std::chrono::milliseconds window{};
    for (int node = 0; node < 10; ++node) {
        boost::asio::io_context io;
        ManualClock clock(io);
        FakeTransport transport;
        LocalSa sa(io.get_executor(), clock, transport, {});
        coherence::CoherenceConfig cc;
        cc.preload = false;
        cc.subscription_check = 0s;
        cc.fabric_ports = 16384;
        cc.master_transactions = 1000;
        coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
        window = coh.start_window();
        const auto t0 = clock.now();
        start(sa, coh);
        CHECK(coh.class_port_info_deferred());
        CHECK(count_attr(transport.take(), mad::attr::kClassPortInfo, kSmLid) == 0);
        std::optional<Clock::duration> at;
        for (int step = 0; step < 1600 && !at; ++step) {
            clock.advance(100ms);
            if (count_attr(transport.take(), mad::attr::kClassPortInfo, kSmLid) > 0)
                at = clock.now() - t0;
        }
        REQUIRE(at);
        CHECK_FALSE(coh.class_port_info_deferred());
        reads.push_back(*at);
    }
    CHECK(window == 147456ms);
    for (auto at : reads)
        CHECK(at <= window + 100ms);
    CHECK(std::count_if(reads.begin(), reads.end(), [](auto at) { return at > 10s; }) >= 1);

    // The fabric's size unknown (no window): read at once, by LocalSa::start().
    boost::asio::io_context io;
    ManualClock clock(io);
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.preload = false;
    cc.subscription_check = 0s;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    start(sa, coh);
    CHECK_FALSE(coh.class_port_info_deferred());
    CHECK(count_attr(transport.take(), mad::attr::kClassPortInfo, kSmLid) == 1);
}

TEST_CASE("upstream: a queued query is dropped unsent once its requester gave up",
          "[upstream][budget]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    Counters counters;
    upstream::UpstreamConfig uc;
    uc.max_outstanding = 1;
    uc.try_timeout = 30ms;
    uc.retries = 2;
    upstream::UpstreamClient up(io.get_executor(), clock, transport, counters, uc);
    std::vector<upstream::Outcome> outcomes;
    auto record = [&](upstream::Reply r) { outcomes.push_back(r.outcome); };
    upstream::SubmitOptions first;
    first.deadline = clock.now() + 40ms; // one retry at most
    up.submit(path_request(1, 0x100005), record, first);
    upstream::SubmitOptions second;
    second.deadline = clock.now() + 10ms;
    up.submit(path_request(2, 0x100007), record, second);
    CHECK(transport.take().size() == 1);
    clock.advance(150ms);
    // The first: its try at 0 and a retry at 30 ms (the deadline had not passed), none at 60 ms.
    // The second waited behind it past its requester's deadline: never sent.
    const auto sent = transport.take();
    CHECK(sent.size() == 1);
    for (const auto& s : sent)
        CHECK(mad::load_be16(s.bytes, 56 + 22) == 0x0005);
    CHECK(counters.upstream_expired == 1);
    CHECK(outcomes.size() == 2);
}

TEST_CASE("upstream: BUSY holds back the whole node, not one query", "[upstream][budget]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    Counters counters;
    upstream::UpstreamConfig uc;
    uc.busy_backoff = 40ms;
    uc.try_timeout = 1s;
    upstream::UpstreamClient up(io.get_executor(), clock, transport, counters, uc);
    std::size_t answered = 0;
    up.submit(path_request(1, 0x100005), [&](upstream::Reply) { ++answered; });
    auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    up.handle_response(from_lid(kSmLid, master_status_answer(sent[0].bytes, mad::status::kBusy)));
    CHECK(counters.upstream_busy == 1);
    // Another query meanwhile waits too: the master asked this node, not one query, to back off.
    up.submit(path_request(2, 0x100007), [&](upstream::Reply) { ++answered; });
    CHECK(transport.take().empty());
    clock.advance(50ms); // the hold-back is 20-40 ms (half to all of the first back-off)
    CHECK(transport.take().size() == 2);
}

TEST_CASE("a miss is not tried again after the requester's deadline", "[upstream][budget]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSaConfig lc;
    lc.upstream.try_timeout = 30ms;
    lc.upstream.retries = 2;
    lc.path_record.requester_deadline = 50ms;
    LocalSa sa(io.get_executor(), clock, transport, lc);
    sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
    clock.advance(200ms);
    // Tries at 0 and 30 ms; at 60 ms the requester (the kernel's redirect, 50 ms here) has
    // gone to the master itself.
    CHECK(count_attr(transport.take(), mad::attr::kPathRecord, kSmLid) == 2);
}

TEST_CASE("the last try before the requester's deadline waits for a slow master, whose answer "
          "then serves the next requester",
          "[upstream][budget]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSaConfig lc;
    lc.upstream.try_timeout = 30ms;
    lc.upstream.retries = 2;
    lc.path_record.requester_deadline = 30ms; // as the defaults: deadline = one try
    LocalSa sa(io.get_executor(), clock, transport, lc);
    sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
    auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    // The try waits the patience of all three tries: no retry could start after it.
    CHECK(sent[0].timeout == 90ms);
    clock.advance(60ms); // past one try: the master is slow
    CHECK(transport.take().empty());
    sa.dispatch(from_lid(kSmLid, master_path_answer(sent[0].bytes, 8)));
    CHECK(sa.counters().upstream_late_responses == 0);
    CHECK(sa.cache().size() == 1);
    transport.take();
    sa.dispatch(from_lid(kOwnLid, path_request(2, 0x100005)));
    sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid); // a hit
    CHECK(sa.counters().upstream_requests == 1);
}

// ------------------------------------------------------------------ 2. preload per event

namespace {

struct PreloadedPort {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa;
    coherence::Coherence coh;

    static coherence::CoherenceConfig config() {
        coherence::CoherenceConfig cc;
        cc.spread = 0ms;
        return cc;
    }
    explicit PreloadedPort(std::vector<std::uint16_t> pkeys = {0x7fff})
        : transport(with_pkeys(std::move(pkeys))), sa(io.get_executor(), clock, transport, {}),
          coh(io.get_executor(), sa.coherence_parts(), config()) {}
    static FakeTransport with_pkeys(std::vector<std::uint16_t> pkeys) {
        FakeTransport t;
        t.state.pkeys = std::move(pkeys);
        return t;
    }
    // Runs the loop; answers subscriptions OK and GetTables with `records`. Returns the
    // GetTables seen.
    std::vector<SentMad> serve(const std::vector<std::uint8_t>& records,
                               std::chrono::milliseconds for_how_long = 20ms) {
        std::vector<SentMad> tables;
        const auto until = clock.now() + for_how_long;
        while (clock.now() < until) {
            clock.advance(2ms);
            for (const auto& s : transport.take()) {
                if (s.to.lid != kSmLid)
                    continue;
                if (mad::load_be16(s.bytes, 16) == mad::attr::kPathRecord &&
                    s.bytes[3] == mad::method::kGetTable) {
                    tables.push_back(s);
                    sa.dispatch(from_lid(kSmLid, table_answer(s.bytes, records)));
                } else {
                    sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
                }
            }
        }
        return tables;
    }
    void report(std::uint16_t trap, std::uint64_t guid, std::uint64_t tid) {
        sa.dispatch(from_lid(kSmLid, report_mad(trap, guid, tid)));
    }
};

} // namespace

TEST_CASE("preload asks with the full-member PKey, keyed as the kernel asks",
          "[coherence][preload]") {
    PreloadedPort port({0x7fff, 0x8001, 0x0001}); // 0x0001: the limited form of 0x8001
    port.coh.start();
    const auto tables = port.serve(table_records({{0x100005, 8}}));
    REQUIRE(tables.size() == 2);
    CHECK(mad::load_be16(tables[0].bytes, 56 + 50) == 0x8001);
    CHECK(mad::load_be16(tables[1].bytes, 56 + 50) == 0xffff);
    // A Get as rdma_cm or ipoib sends it, PKey 0xffff: from the table.
    port.sa.dispatch(from_lid(kOwnLid, kernel_request(7, 0x100005)));
    auto sent = port.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(port.sa.counters().pr_preload_hits == 1);
}

TEST_CASE("a remote trap 64, 144 or 145 costs the master no query", "[coherence][preload]") {
    PreloadedPort port;
    port.coh.start();
    REQUIRE(port.serve(table_records({{0x100005, 8}})).size() == 1);
    port.report(sa::trap::kGidOutOfService, 0x100009, 0x700);
    port.report(sa::trap::kGidInService, 0x100009, 0x701);
    port.report(sa::trap::kCapabilityMaskChange, 0x100005, 0x702);
    port.report(sa::trap::kSystemImageGuidChange, 0x100005, 0x703);
    port.transport.take(); // the ReportResps
    port.clock.advance(30ms);
    CHECK(count_attr(port.transport.take(), mad::attr::kPathRecord, kSmLid) == 0);
    CHECK(port.sa.counters().preload_transactions == 1);
}

TEST_CASE("without an epoch, a used preload table is renewed while used; a job after it went "
          "stale reads through, as without localsa",
          "[coherence][preload]") {
    // A job at start, another one 2.8 TTL later (a job every 10 minutes with the default TTL of
    // 5). The table, renewed at 0.8 TTL for the first job and unused since, is past its
    // freshness by then: while the master answers, the second job's paths are asked as they are
    // now (one Get each, what the same job costs without localsa), not served from a table
    // 2 TTL old. With the routing epoch the table is kept and the job served locally
    // (routing_epoch_test.cpp).
    boost::asio::io_context io;
    ManualClock clock(io);
    FakeTransport transport;
    LocalSaConfig lc;
    lc.path_record.positive_ttl = 500ms;
    lc.path_record.max_staleness = 500ms;
    LocalSa sa(io.get_executor(), clock, transport, lc);
    coherence::CoherenceConfig cc;
    cc.subscribe = false;
    cc.spread = 0ms;
    cc.preload_validity = 1s; // TTL + max staleness, as localsad sets it
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    std::size_t tables = 0, path_gets = 0;
    auto play_master = [&] {
        for (const auto& s : transport.take()) {
            if (s.to.lid != kSmLid || mad::load_be16(s.bytes, 16) != mad::attr::kPathRecord)
                continue;
            if (s.bytes[3] == mad::method::kGetTable) {
                ++tables;
                sa.dispatch(
                    from_lid(kSmLid, table_answer(s.bytes, table_records({{0x100005, 8}}))));
            } else {
                ++path_gets;
                sa.dispatch(from_lid(kSmLid, master_path_answer(s.bytes, 8)));
            }
        }
    };
    bool first_job = false, second_job = false;
    for (auto t = 0ms; t < 1600ms; t += 5ms) {
        clock.advance(5ms);
        play_master();
        if (!first_job && tables == 1) {
            sa.dispatch(from_lid(kOwnLid, kernel_request(1, 0x100005)));
            first_job = true;
        }
        if (!second_job && t >= 1400ms) {
            sa.dispatch(from_lid(kOwnLid, kernel_request(2, 0x100005)));
            second_job = true;
        }
        play_master();
    }
    REQUIRE(second_job);
    CHECK(sa.counters().pr_preload_hits == 1); // the first job, from the fresh table
    CHECK(sa.counters().pr_cache_misses == 1); // the second, read through
    CHECK(path_gets == 1);
    CHECK(sa.counters().stale_served == 0);
    CHECK(tables >= 2);
    CHECK(tables <= 3); // renewed only while used, not every poll
}

TEST_CASE("preload waits a random delay within the spread window", "[coherence][preload]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.subscribe = false;
    cc.spread = 60ms;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    const auto t0 = clock.now();
    coh.start();
    transport.take(); // ClassPortInfo
    std::optional<Clock::duration> at;
    while (!at && clock.now() - t0 < 200ms) {
        clock.advance(2ms);
        if (count_attr(transport.take(), mad::attr::kPathRecord, kSmLid))
            at = clock.now() - t0;
    }
    REQUIRE(at);
    CHECK(*at <= 80ms);
}

TEST_CASE("a resync asks the master again only after a random delay in the spread window",
          "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.preload = false;
    cc.spread = 50ms;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    cache_path(sa, transport, 0x100005, 8);
    coh.resync("SM changed");
    CHECK(sa.cache().size() == 0); // flushed at once
    // Nothing asked at the moment of the event; everything within the window.
    CHECK(transport.take().empty());
    clock.advance(70ms);
    CHECK(count_attr(transport.take(), mad::attr::kInformInfo, kSmLid) ==
          std::size(coherence::kSubscribedTraps));
}

// ------------------------------------------------------------------ 4. wrong answers

TEST_CASE("a preload table arriving after trap 65 does not bring the GID back",
          "[coherence][preload][wrong]") {
    PreloadedPort port;
    port.coh.start();
    // The GetTable is on its way when the master reports 0x100005 out of service.
    SentMad table;
    for (int i = 0; i < 10 && table.bytes.empty(); ++i) {
        port.clock.advance(2ms);
        for (auto& s : port.transport.take()) {
            if (mad::load_be16(s.bytes, 16) == mad::attr::kPathRecord)
                table = s;
            else if (s.to.lid == kSmLid)
                port.sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
        }
    }
    REQUIRE_FALSE(table.bytes.empty());
    port.report(sa::trap::kGidOutOfService, 0x100005, 0x800);
    // The master built the table before the port went: it still has it.
    port.sa.dispatch(from_lid(
        kSmLid, table_answer(table.bytes, table_records({{0x100005, 8}, {0x100007, 11}}))));
    port.transport.take();
    port.sa.dispatch(from_lid(kOwnLid, kernel_request(9, 0x100005)));
    auto sent = port.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid); // not served: asked (the master answers NO_RECORDS)
    port.sa.dispatch(from_lid(kOwnLid, kernel_request(10, 0x100007)));
    sent = port.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid); // the other destination is
}

TEST_CASE("a refresh answered ERR_REQ_INVALID_GID drops the answer at once", "[coherence][wrong]") {
    for (auto [status, negative_ttl] :
         {std::pair{mad::status::kSaInvalidGid, 1000ms}, {mad::status::kSaNoRecords, 0ms}}) {
        INFO("status " << status << ", negative TTL " << negative_ttl.count() << " ms");
        boost::asio::io_context io;
        ManualClock clock{io};
        FakeTransport transport;
        LocalSaConfig lc;
        lc.path_record.positive_ttl = 20ms;
        lc.path_record.negative_ttl = negative_ttl;
        lc.path_record.max_staleness = 10s;
        LocalSa sa(io.get_executor(), clock, transport, lc);
        coherence::CoherenceConfig cc;
        cc.subscribe = false;
        cc.preload = false;
        coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
        coh.start();
        transport.take();
        cache_path(sa, transport, 0x100005, 8);
        sa.dispatch(from_lid(kOwnLid, path_request(2, 0x100005))); // used
        transport.take();
        std::vector<SentMad> refresh;
        for (int i = 0; i < 30 && refresh.empty(); ++i) {
            clock.advance(10ms);
            refresh = transport.take();
        }
        REQUIRE(refresh.size() == 1);
        sa.dispatch(from_lid(kSmLid, master_status_answer(refresh[0].bytes, status)));
        CHECK(sa.cache().size() == 0);
        sa.dispatch(from_lid(kOwnLid, path_request(3, 0x100005)));
        auto sent = transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kSmLid); // the old path is not served on max staleness
    }
}

TEST_CASE("a Get naming no SGID is not answered from the preload", "[preload][wrong]") {
    cache::PreloadTable t;
    const auto now = SteadyClock{}.now();
    t.replace(std::nullopt, table_records({{0x100005, 8}}), now + 1min);
    sa::PathRecord r;
    r.dgid = gid(0x100005);
    using namespace sa::pr_mask;
    CHECK_FALSE(t.match(r.bytes(), kDgid, gid(0x100003), now));
    r.sgid = gid(0x100003);
    CHECK(t.match(r.bytes(), kDgid | kSgid, gid(0x100003), now));
    r.slid = kOwnLid;
    CHECK(t.match(r.bytes(), kDgid | kSgid | kSlid, gid(0x100003), now));
    // SLID alone: the master's SGID is the port's first alias GUID, maybe not the port GUID.
    CHECK_FALSE(t.match(r.bytes(), kDgid | kSlid, gid(0x100003), now));
}

TEST_CASE("a PathRecord to a multicast DGID is relayed, never cached", "[wrong]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    auto mc = path_request(1, 0);
    const auto mgid = sa::Gid::from_parts(0xff12401bffff0000ULL, 0xffffffffULL);
    std::copy(mgid.raw.begin(), mgid.raw.end(), mc.begin() + 56 + 8);
    for (std::uint64_t tid : {1, 2}) {
        mad::set_tid(mc, tid);
        sa.dispatch(from_lid(kOwnLid, mc));
        auto up = transport.take();
        REQUIRE(up.size() == 1);
        CHECK(up[0].to.lid == kSmLid);
        sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 0xc001)));
        transport.take();
    }
    CHECK(sa.cache().size() == 0);
    CHECK(sa.counters().pr_forwarded == 2);
}

TEST_CASE("an answer in flight across a resync is relayed but not stored", "[coherence][wrong]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.subscribe = false;
    cc.preload = false;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
    auto up = transport.take();
    REQUIRE(up.size() == 1);
    coh.resync("LID changed");
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid); // the requester has its answer
    CHECK(sa.cache().size() == 0);    // the fresh cache does not
}

TEST_CASE("a preload GetTable's try is sized by its transfer", "[coherence][preload][wrong]") {
    // A table of thousands of records is hundreds of RMPP segments: it can take seconds to
    // arrive, and a 200 ms try would ask for it again (and again) meanwhile.
    PreloadedPort port;
    port.coh.start();
    std::optional<SentMad> table;
    for (int i = 0; i < 1500; ++i) { // 3 s: five 600 ms budgets of 3 tries of 200 ms
        port.clock.advance(2ms);
        for (const auto& s : port.transport.take()) {
            if (s.to.lid != kSmLid)
                continue;
            if (mad::load_be16(s.bytes, 16) == mad::attr::kPathRecord) {
                CHECK_FALSE(table); // asked once
                table = s;
            } else {
                port.sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
            }
        }
    }
    REQUIRE(table);
    CHECK(table->timeout >= 3s);
    // The whole table arrives after 3 s: taken.
    port.sa.dispatch(from_lid(kSmLid, table_answer(table->bytes, table_records({{0x100005, 8}}))));
    CHECK(port.sa.preload().size() == 1);
}

TEST_CASE("requests with an SM_Key are never answered locally", "[wrong]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    sa.start();
    auto cpi = transport.take();
    REQUIRE(cpi.size() == 1);
    sa.dispatch(from_lid(kSmLid, master_status_answer(cpi[0].bytes, 0))); // learns nothing much
    transport.take();
    mad::SaMad m;
    m.header.method = mad::method::kGet;
    m.header.attr_id = mad::attr::kClassPortInfo;
    m.header.tid = 5;
    m.sm_key = 0x8badf00d;
    sa.dispatch(from_lid(kOwnLid, m.pack()));
    // A PathRecord failing OpenSM's own checks (half a ServiceID), with an SM_Key.
    auto pr = path_request(6, 0x100005, mad::method::kGet, 1); // ServiceID's first bit only
    mad::store_be64(pr, 36, 0x8badf00d);
    sa.dispatch(from_lid(kOwnLid, pr));
    const auto sent = transport.take();
    REQUIRE(sent.size() == 2);
    for (const auto& s : sent) {
        CHECK(s.to.lid == kSmLid); // relayed: the master judges the key (OpenSM drops it)
        CHECK(mad::load_be64(s.bytes, 36) == 0x8badf00d);
    }
}
