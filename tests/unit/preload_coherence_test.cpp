// Preload tables, refresh scheduling and Report handling, over the fake transport.
#include "fake_transport.hpp"

#include "engine/cache/preload_table.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"
#include "ib/inform_info.hpp"
#include "ib/notice.hpp"
#include "ib/response.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <tuple>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;

namespace {
// A Get from this port to a destination named by its LID only (no DGID).
std::vector<std::uint8_t> path_request_by_lid(std::uint64_t tid, std::uint16_t dlid) {
    auto req = path_request(tid, 0);
    mad::store_be64(req, mad::offset::kCompMask,
                    sa::pr_mask::kSgid | sa::pr_mask::kDlid | sa::pr_mask::kNumbPath);
    mad::store_be16(req, 56 + sa::pr_offset::kDlid, dlid);
    return req;
}

sa::PathRecord request_record(std::uint64_t dguid) {
    sa::PathRecord r;
    r.sgid = gid(0x100003);
    r.dgid = gid(dguid);
    r.reversible = true;
    r.numb_path = 1;
    return r;
}

// The master's Report of `trap` about the port `guid`; its ReportResp is taken.
void master_reports(LocalSa& sa, FakeTransport& transport, std::uint16_t trap, std::uint64_t guid,
                    std::uint64_t tid) {
    mad::SaMad r;
    r.header.method = mad::method::kReport;
    r.header.attr_id = mad::attr::kNotice;
    r.header.tid = tid;
    sa::Notice n;
    n.trap_number = trap;
    const auto g = gid(guid);
    std::copy(g.raw.begin(), g.raw.end(), n.data_details.begin() + 6);
    n.pack(r.data);
    sa.dispatch(from_lid(kSmLid, r.pack()));
    transport.take();
}

} // namespace

TEST_CASE("a preload table answers a Get only when the answer is certain", "[preload]") {
    cache::PreloadTable t;
    const auto now = SteadyClock{}.now();
    t.replace(std::nullopt, table_records({{0x100005, 8}, {0x100007, 11}}), now + 1min);
    const auto own = gid(0x100003);
    using namespace sa::pr_mask;
    const auto base = kSgid | kDgid | kReversible | kNumbPath;

    auto ask = [&](const sa::PathRecord& r, std::uint64_t mask) {
        return t.match(r.bytes(), mask, own, now);
    };
    auto hit = ask(request_record(0x100007), base);
    REQUIRE(hit);
    CHECK(sa::PathRecord::unpack(*hit).dlid == 11);
    CHECK_FALSE(ask(request_record(0x100099), base));              // unknown: the master's
    CHECK_FALSE(ask(request_record(0x100007), base | kServiceId)); // QoS policy may apply
    CHECK_FALSE(ask(request_record(0x100007), base | kMtuSelector | kMtu));
    CHECK_FALSE(ask(request_record(0x100007), base | kPKey)); // no table for that PKey
    auto other_source = request_record(0x100007);
    other_source.sgid = gid(0x100009);
    CHECK_FALSE(ask(other_source, base));
    auto by_lid = request_record(0);
    by_lid.dlid = 8;
    CHECK(ask(by_lid, kSgid | kDlid));
    auto wrong_sl = request_record(0x100007);
    wrong_sl.sl = 3;
    CHECK_FALSE(ask(wrong_sl, base | kSl));
    CHECK_FALSE(t.match(request_record(0x100007).bytes(), base, own, now + 2min)); // expired

    SECTION("several paths to one destination: the master decides") {
        t.replace(std::nullopt, table_records({{0x100005, 8}, {0x100005, 9}}), now + 1min);
        CHECK_FALSE(ask(request_record(0x100005), base));
    }
    SECTION("a reversible path asked for, the table's is not") {
        t.replace(std::nullopt, table_records({{0x100005, 8}}, false), now + 1min);
        CHECK_FALSE(ask(request_record(0x100005), base));
        CHECK(ask(request_record(0x100005), kSgid | kDgid));
    }
    SECTION("trap 65 removes a destination") {
        CHECK(t.erase_gid(gid(0x100007)) == 1);
        CHECK_FALSE(ask(request_record(0x100007), base));
        CHECK(ask(request_record(0x100005), base));
    }
}

TEST_CASE("with LMC 1 a Get of an off-diagonal LID pair gets Preference 0, as from OpenSM",
          "[preload]") {
    // The table (GetTable) carries the pairs (5,8) and (6,9) with Preference 0 and the others
    // with 2. A Get fixing SLID and DLID makes OpenSM's first round
    // (pr_rcv_get_port_pair_paths) start and stop at that pair: Preference 0.
    cache::PreloadTable t;
    const auto now = SteadyClock{}.now();
    std::vector<std::uint8_t> records;
    for (auto [slid, dlid, pref] : {std::tuple{5, 8, 0}, {5, 9, 2}, {6, 8, 2}, {6, 9, 0}}) {
        sa::PathRecord r;
        r.sgid = gid(0x100003);
        r.dgid = gid(0x100005);
        r.slid = static_cast<std::uint16_t>(slid);
        r.dlid = static_cast<std::uint16_t>(dlid);
        r.reversible = true;
        r.pkey = 0xffff;
        r.mtu_selector = r.rate_selector = r.packet_life_selector = 2;
        r.mtu = 4;
        r.rate = 7;
        r.packet_life = 18;
        r.preference = static_cast<std::uint8_t>(pref);
        const auto b = r.bytes();
        records.insert(records.end(), b.begin(), b.end());
    }
    t.replace(std::nullopt, records, now + 1min);
    using namespace sa::pr_mask;
    auto q = request_record(0x100005);
    q.slid = 5;
    q.dlid = 9;
    const auto hit = t.match(q.bytes(), kSgid | kDgid | kSlid | kDlid | kReversible | kNumbPath,
                             gid(0x100003), now);
    REQUIRE(hit);
    const auto r = sa::PathRecord::unpack(*hit);
    CHECK(r.slid == 5);
    CHECK(r.dlid == 9);
    CHECK(r.preference == 0);
}

TEST_CASE("a Get naming SLID but no SGID goes to the master, whose SGID is the port's first "
          "alias GUID",
          "[preload][wrong]") {
    // OpenSM (osm_pr_rcv_process): SLID without SGID gives a source port, no alias GUID; it
    // then walks its alias GUID table (the port GUID is one of them) and takes the first GUID
    // of that port that yields a path; pr_rcv_build_pr sets the SGID from it. With alias GUIDs
    // that is not the port GUID the table (asked with SGID = port GID) carries.
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    sa.coherence_parts().preload.replace(std::nullopt, table_records({{0x100005, 8}}),
                                         clock.now() + 1min, clock.now());
    auto req = path_request(0x42, 0x100005);
    mad::store_be64(req, mad::offset::kCompMask,
                    sa::pr_mask::kSlid | sa::pr_mask::kDgid | sa::pr_mask::kReversible |
                        sa::pr_mask::kNumbPath);
    std::fill_n(req.begin() + 56 + sa::pr_offset::kSgid, 16, 0);
    mad::store_be16(req, 56 + sa::pr_offset::kSlid, kOwnLid);
    sa.dispatch(from_lid(kOwnLid, req));
    auto up = transport.take();
    REQUIRE(up.size() == 1);
    CHECK(up[0].to.lid == kSmLid);
    CHECK(sa.counters().pr_preload_hits == 0);
    // The master's answer, from the alias 0x200003 of this port: relayed as it is.
    auto answer = master_path_answer(up[0].bytes, 8);
    const auto alias = gid(0x200003);
    std::copy(alias.raw.begin(), alias.raw.end(), answer.begin() + 56 + sa::pr_offset::kSgid);
    sa.dispatch(from_lid(kSmLid, answer));
    auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(sa::PathRecord::unpack(mad::Bytes{sent[0].bytes}.subspan(56)).sgid == alias);
}

TEST_CASE("Gets are served from the preload table without the master", "[preload]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    sa.coherence_parts().preload.replace(std::nullopt, table_records({{0x100005, 8}}),
                                         clock.now() + 1min, clock.now());
    const auto req = path_request(0x42, 0x100005);
    sa.dispatch(from_lid(kOwnLid, req));
    auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(mad::tid_of(sent[0].bytes) == 0x42);
    CHECK(sa::PathRecord::unpack(mad::Bytes{sent[0].bytes}.subspan(56)).dlid == 8);
    CHECK(sa.counters().pr_preload_hits == 1);
    // GetTable is not derived from the preload: the master's.
    sa.dispatch(from_lid(kOwnLid, path_request(0x43, 0x100005, mad::method::kGetTable)));
    sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
}

TEST_CASE("cached answers come due for refresh once, oldest first", "[cache]") {
    cache::PathCache c(10);
    const auto now = SteadyClock{}.now();
    auto key = [](std::uint8_t b) {
        cache::PathQueryKey k;
        k.masked[8] = b;
        return k;
    };
    for (std::uint8_t i = 0; i < 3; ++i) {
        cache::PathAnswer a;
        a.records.resize(64);
        a.refresh_at = now + std::chrono::seconds{i};
        a.expires = now + 1h;
        c.store(key(i), a);
    }
    CHECK(c.due_for_refresh(now, 10).size() == 1);
    auto due = c.due_for_refresh(now + 5s, 1);
    REQUIRE(due.size() == 1);
    CHECK(due[0] == key(1));
    c.erase_if([&](const auto& k, const auto&) { return k == key(2); });
    CHECK(c.due_for_refresh(now + 5s, 10).empty()); // erased entries are not refreshed
}

TEST_CASE("coherence: trap 65 drops what involves the GID and refuses it until trap 64",
          "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms; // resync and preload at once
    cc.preload = false;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    auto subs = transport.take();
    CHECK(subs.size() == std::size(coherence::kSubscribedTraps));
    for (const auto& s : subs)
        CHECK(mad::load_be16(s.bytes, 16) == mad::attr::kInformInfo);

    // Two cached paths.
    for (std::uint64_t g : {0x100005ULL, 0x100007ULL}) {
        sa.dispatch(from_lid(kOwnLid, path_request(g, g)));
        auto up = transport.take();
        REQUIRE(up.size() == 1);
        sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, g == 0x100005 ? 8 : 11)));
        transport.take();
    }
    REQUIRE(sa.cache().size() == 2);

    auto report = [&](std::uint16_t trap, std::uint64_t guid, std::uint64_t tid) {
        master_reports(sa, transport, trap, guid, tid);
    };
    report(sa::trap::kGidOutOfService, 0x100007, 0x500);
    CHECK(sa.cache().size() == 1);
    CHECK(sa.counters().invalidated_entries == 1);
    report(sa::trap::kGidOutOfService, 0x100007, 0x500); // the master's resend
    CHECK(sa.counters().reports_duplicate == 1);

    // The path to the other host is still a hit.
    sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
    auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);

    // The gone GID is asked at the master; its answer (the master may not have swept yet, or
    // the miss was in flight) is relayed and stored, but not served while the GID is out of
    // service: every Get goes to the master again.
    for (std::uint64_t tid : {2, 3, 4}) {
        INFO("tid " << tid);
        sa.dispatch(from_lid(kOwnLid, path_request(tid, 0x100007)));
        auto up = transport.take();
        REQUIRE(up.size() == 1);
        CHECK(up[0].to.lid == kSmLid);
        sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 11)));
        auto relayed = transport.take();
        REQUIRE(relayed.size() == 1);
        CHECK(relayed[0].to.lid == kOwnLid);
    }
    CHECK(sa.counters().stale_refused == 2); // the two found stored after the first
    CHECK(sa.counters().pr_cache_hits == 1); // the path to 0x100005 only

    // Back in service: the Get is asked at the master once more, and its answer is served.
    report(sa::trap::kGidInService, 0x100007, 0x501);
    CHECK(sa.counters().reports_received == 3);
    sa.dispatch(from_lid(kOwnLid, path_request(5, 0x100007)));
    auto up = transport.take();
    REQUIRE(up.size() == 1);
    CHECK(up[0].to.lid == kSmLid);
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 12)));
    transport.take();
    sa.dispatch(from_lid(kOwnLid, path_request(6, 0x100007)));
    sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(sa::PathRecord::unpack(mad::Bytes{sent[0].bytes}.subspan(56)).dlid == 12);
    CHECK(sa.counters().stale_refused == 2);
}

TEST_CASE("coherence: trap 64 drops what was stored about the GID while it was out of service",
          "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms;
    cc.preload = false;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    auto report = [&](std::uint16_t trap, std::uint64_t guid, std::uint64_t tid) {
        master_reports(sa, transport, trap, guid, tid);
    };
    // A miss in flight when the port leaves: the master's answer, about the port as it was,
    // arrives after trap 65 and is stored.
    sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100007)));
    auto up = transport.take();
    REQUIRE(up.size() == 1);
    report(sa::trap::kGidOutOfService, 0x100007, 0x600);
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 11)));
    REQUIRE(transport.take().size() == 1); // relayed to the requester
    // The port comes back, perhaps with another LID, MTU or rate: the old answer is not served.
    report(sa::trap::kGidInService, 0x100007, 0x601);
    sa.dispatch(from_lid(kOwnLid, path_request(2, 0x100007)));
    auto again = transport.take();
    REQUIRE(again.size() == 1);
    CHECK(again[0].to.lid == kSmLid);
    CHECK(sa.counters().stale_served == 0);
}

TEST_CASE("coherence: trap 64 drops a \"no such path\" that may be about the returning port",
          "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms;
    cc.preload = false;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    // While the port of GID 0x100007 (LID 11) is away, a Get by its LID finds no path: OpenSM
    // answers NO_RECORDS (no port has that DLID), kept for the negative TTL. The question names
    // no GID of that port.
    auto by_lid = path_request_by_lid(1, 11);
    sa.dispatch(from_lid(kOwnLid, by_lid));
    auto up = transport.take();
    REQUIRE(up.size() == 1);
    sa.dispatch(from_lid(kSmLid, master_status_answer(up[0].bytes, mad::status::kSaNoRecords)));
    REQUIRE(transport.take().size() == 1);
    mad::set_tid(by_lid, 2);
    sa.dispatch(from_lid(kOwnLid, by_lid));
    auto hit = transport.take();
    REQUIRE(hit.size() == 1);
    REQUIRE(hit[0].to.lid == kOwnLid); // the negative answer is served from the cache
    // The port comes back (on LID 11): its "no such path" is no longer the master's answer.
    master_reports(sa, transport, sa::trap::kGidInService, 0x100007, 0x700);
    mad::set_tid(by_lid, 3);
    sa.dispatch(from_lid(kOwnLid, by_lid));
    auto again = transport.take();
    REQUIRE(again.size() == 1);
    CHECK(again[0].to.lid == kSmLid);
}

TEST_CASE("coherence: a \"no such path\" asked before trap 64 and answered after it is not kept",
          "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms;
    cc.preload = false;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    // Two misses go to the master while the port of GID 0x100007 (LID 11) is away: one by its
    // LID, one about another port by both GIDs.
    auto by_lid = path_request_by_lid(1, 11);
    const auto other = path_request(2, 0x100009);
    sa.dispatch(from_lid(kOwnLid, by_lid));
    sa.dispatch(from_lid(kOwnLid, other));
    auto up = transport.take();
    REQUIRE(up.size() == 2);
    // The port comes back before the master's answers, computed while it was away, arrive.
    master_reports(sa, transport, sa::trap::kGidInService, 0x100007, 0x700);
    for (const auto& q : up)
        sa.dispatch(from_lid(kSmLid, master_status_answer(q.bytes, mad::status::kSaNoRecords)));
    // Both are relayed to their requesters: that is what the master said.
    REQUIRE(transport.take().size() == 2);
    // The one by LID may be about the port that is back: asked again, not served for the
    // negative TTL. The one naming another port by GID is kept, as trap 64 keeps it.
    mad::set_tid(by_lid, 3);
    sa.dispatch(from_lid(kOwnLid, by_lid));
    auto again = transport.take();
    REQUIRE(again.size() == 1);
    CHECK(again[0].to.lid == kSmLid);
    auto other_again = other;
    mad::set_tid(other_again, 4);
    sa.dispatch(from_lid(kOwnLid, other_again));
    auto hit = transport.take();
    REQUIRE(hit.size() == 1);
    CHECK(hit[0].to.lid == kOwnLid);
}

TEST_CASE("coherence: a new SM LID flushes and re-subscribes", "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms; // resync and preload at once
    cc.preload = false;
    cc.port_poll = 5ms;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
    auto up = transport.take();
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    transport.take();
    REQUIRE(sa.cache().size() == 1);
    transport.state.sm_lid = 7;
    clock.advance(30ms);
    CHECK(sa.cache().size() == 0);
    CHECK(sa.counters().resyncs == 1);
    auto again = transport.take();
    // ClassPortInfo and the six subscriptions, to the new master.
    REQUIRE(again.size() == 1 + std::size(coherence::kSubscribedTraps));
    for (const auto& s : again)
        CHECK(s.to.lid == 7);
}

TEST_CASE("coherence: a resync that found the port down re-subscribes once a poll finds it "
          "active, also when the poll saw no change",
          "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms;
    cc.preload = false;
    cc.port_poll = 3'600'000ms; // polled by hand below
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    // A short flap between two polls: the resync's delayed half runs while the port is down,
    // and the next poll finds the port as it was at the last one.
    coh.resync("client re-register");
    transport.state.state = 2;
    clock.advance(10ms);
    CHECK(transport.take().empty());
    transport.state.state = 4;
    coh.poll_port();
    clock.advance(10ms);
    auto again = transport.take();
    // ClassPortInfo and the six subscriptions.
    CHECK(again.size() == 1 + std::size(coherence::kSubscribedTraps));
    coh.poll_port();
    clock.advance(10ms);
    CHECK(transport.take().empty()); // once only
}

namespace {

// The master's answer to `request` with `status` and no record (OpenSM echoes the request).
// Starts coherence and confirms its six subscriptions as the master does.
void confirm_subscriptions(LocalSa& sa, FakeTransport& transport) {
    auto subs = transport.take();
    REQUIRE(subs.size() == std::size(coherence::kSubscribedTraps));
    for (const auto& s : subs)
        sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
}

} // namespace

TEST_CASE("coherence: a master that lost the subscriptions makes the port resync", "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms; // resync and preload at once
    cc.preload = false;
    cc.subscription_check = 10ms;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    confirm_subscriptions(sa, transport);

    auto next_check = [&] {
        clock.advance(15ms);
        auto sent = transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(mad::load_be16(sent[0].bytes, 16) == mad::attr::kInformInfoRecord);
        // A GetTable: OpenSM numbers every subscription Enum 0, so a Get naming the
        // SubscriberGID matches all of them, an error logged at the master each time.
        CHECK(sent[0].bytes[3] == mad::method::kGetTable);
        CHECK(mad::load_be64(sent[0].bytes, 48) == 1); // SubscriberGID only
        const auto own = transport.state.gid;
        CHECK(std::equal(own.raw.begin(), own.raw.end(), sent[0].bytes.begin() + 56));
        return sent[0].bytes;
    };
    // The master's table: one 64-byte InformInfoRecord per subscription it holds (Enum 0), and
    // the routing epoch's vendor subscription beside them.
    auto table_of = [&](const std::vector<std::uint8_t>& request,
                        std::vector<std::uint16_t> traps) {
        std::vector<std::uint8_t> records;
        auto add = [&](std::uint16_t trap, bool generic) {
            std::vector<std::uint8_t> r(64);
            std::copy(transport.state.gid.raw.begin(), transport.state.gid.raw.end(), r.begin());
            sa::InformInfo info;
            info.lid_range_begin = 0xffff;
            info.is_generic = generic ? 1 : 0;
            info.subscribe = 1;
            info.trap_number = trap;
            info.pack(mad::MutableBytes{r}.subspan(24, sa::InformInfo::kSize));
            records.insert(records.end(), r.begin(), r.end());
        };
        add(0x4c53, false);
        for (auto t : traps)
            add(t, true);
        return sa::make_records_response(request, 64, records);
    };
    const std::vector<std::uint16_t> all(std::begin(coherence::kSubscribedTraps),
                                         std::end(coherence::kSubscribedTraps));

    SECTION("all held: nothing happens") {
        sa.dispatch(from_lid(kSmLid, table_of(next_check(), all)));
        CHECK(sa.counters().resyncs == 0);
        CHECK(sa.counters().subscriptions_lost == 0);
        CHECK(transport.take().empty());
    }
    SECTION("none held (SM restarted on the same LID): flush, re-subscribe") {
        sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
        auto up = transport.take();
        sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
        transport.take();
        REQUIRE(sa.cache().size() == 1);

        sa.dispatch(
            from_lid(kSmLid, master_status_answer(next_check(), mad::status::kSaNoRecords)));
        CHECK(sa.counters().subscriptions_lost == 1);
        CHECK(sa.counters().resyncs == 1);
        CHECK(sa.cache().size() == 0);
        // ClassPortInfo again and the six subscriptions (after the spread window's delay).
        clock.advance(5ms);
        CHECK(transport.take().size() == 1 + std::size(coherence::kSubscribedTraps));
    }
    SECTION("an empty table: re-subscribe too") {
        const auto q = next_check();
        sa.dispatch(from_lid(kSmLid, sa::make_records_response(q, 64, {})));
        CHECK(sa.counters().subscriptions_lost == 1);
        CHECK(sa.counters().resyncs == 1);
    }
    SECTION("five of six held (one dropped): re-subscribe") {
        auto some = all;
        some.erase(some.begin() + 2);
        sa.dispatch(from_lid(kSmLid, table_of(next_check(), some)));
        CHECK(sa.counters().subscriptions_lost == 1);
        CHECK(sa.counters().resyncs == 1);
    }
    SECTION("a truncated table (no RMPP, as under ibsim) tells nothing") {
        auto answer = table_of(next_check(), all);
        // The RMPP PayloadLength announces the whole table (7 records in 3 segments of 200
        // bytes, the SA header's 20 bytes after the RMPP header counted per segment); the
        // first segment's records only arrived.
        auto rmpp = mad::RmppHeader::unpack(answer);
        rmpp.paylen_newwin = 7 * 64 + 3 * 20;
        rmpp.pack(answer);
        answer.resize(56 + 3 * 64);
        sa.dispatch(from_lid(kSmLid, answer));
        CHECK(sa.counters().subscriptions_lost == 0);
        CHECK(sa.counters().resyncs == 0);
    }
    SECTION("one MAD, no PayloadLength, no room for another record (ibsim's first segment): "
            "nothing concluded") {
        auto answer = table_of(next_check(), all);
        answer.resize(56 + 3 * 64);
        sa.dispatch(from_lid(kSmLid, answer));
        CHECK(sa.counters().subscriptions_lost == 0);
    }
    SECTION("one MAD, no PayloadLength, room for another record: the whole table") {
        sa.dispatch(from_lid(kSmLid, table_of(next_check(), {64})));
        CHECK(sa.counters().subscriptions_lost == 1);
    }
}

TEST_CASE("coherence: no subscription check before the master confirmed them all", "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms; // resync and preload at once
    cc.preload = false;
    cc.subscription_check = 10ms;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    auto subs = transport.take();
    REQUIRE(subs.size() == std::size(coherence::kSubscribedTraps));
    sa.dispatch(from_lid(kSmLid, master_status_answer(subs[0].bytes, 0))); // one of six
    clock.advance(35ms);
    for (const auto& s : transport.take())
        CHECK(mad::load_be16(s.bytes, 16) != mad::attr::kInformInfoRecord);
    CHECK(sa.counters().subscription_checks == 0);
}

TEST_CASE("coherence: one preload transaction per PKey of the port", "[coherence][preload]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    transport.state.pkeys = {0xffff, 0x8001};
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms; // resync and preload at once
    cc.subscribe = false;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    std::vector<std::uint16_t> asked;
    for (int i = 0; i < 4; ++i) {
        clock.advance(15ms);
        for (const auto& s : transport.take()) {
            if (mad::load_be16(s.bytes, 16) != mad::attr::kPathRecord)
                continue;
            CHECK(s.bytes[3] == mad::method::kGetTable);
            CHECK(mad::load_be64(s.bytes, 48) == (sa::pr_mask::kSgid | sa::pr_mask::kPKey));
            asked.push_back(mad::load_be16(s.bytes, 56 + 50));
            auto answer = *mad::SaMad::unpack(s.bytes);
            answer.header.method = mad::method::kGetTableResp;
            answer.header.status = mad::status::kSaNoRecords;
            sa.dispatch(from_lid(kSmLid, answer.pack()));
        }
    }
    CHECK(asked == std::vector<std::uint16_t>{0x8001, 0xffff});
    CHECK(sa.counters().preload_transactions == 2);
}

TEST_CASE("a failed refresh keeps the answer up to max staleness, retried and counted",
          "[coherence][cache]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSaConfig lc;
    lc.path_record.positive_ttl = 50ms;
    lc.path_record.max_staleness = 1000ms;
    lc.path_record.refresh_retry = 60ms;
    lc.upstream.try_timeout = 10ms;
    lc.upstream.retries = 0;
    LocalSa sa(io.get_executor(), clock, transport, lc);
    coherence::CoherenceConfig cc;
    cc.spread = 0ms; // resync and preload at once
    cc.subscribe = false;
    cc.preload = false;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    const auto t0 = clock.now();
    sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
    auto up = transport.take();
    REQUIRE(up.size() == 1);
    sa.dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    transport.take();

    auto hit = [&] {      // true when answered locally, false when it went to the master
        transport.take(); // the refreshes sent meanwhile
        sa.dispatch(from_lid(kOwnLid, path_request(2, 0x100005)));
        auto sent = transport.take();
        REQUIRE(sent.size() == 1);
        return sent[0].to.lid == kOwnLid;
    };
    clock.advance_to(t0 + 300ms);        // the master never answers the refreshes
    CHECK(sa.counters().refreshes >= 2); // the first and at least one retry
    CHECK(sa.counters().refresh_failed >= 2);
    CHECK(hit());
    CHECK(sa.counters().stale_served == 1);
    clock.advance_to(t0 + 1300ms); // past refresh time + max staleness
    CHECK_FALSE(hit());
}

TEST_CASE("coherence: a resync while a subscription check is in flight keeps the checks going",
          "[coherence]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    coherence::CoherenceConfig cc;
    cc.spread = 0ms; // resync and preload at once
    cc.preload = false;
    cc.subscription_check = 10ms;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    confirm_subscriptions(sa, transport);
    clock.advance(15ms);
    auto check = transport.take();
    REQUIRE(check.size() == 1);
    coh.resync("test");
    clock.advance(5ms);
    auto again = transport.take(); // ClassPortInfo and the six subscriptions
    REQUIRE(again.size() == 1 + std::size(coherence::kSubscribedTraps));
    for (std::size_t i = 1; i < again.size(); ++i)
        sa.dispatch(from_lid(kSmLid, master_status_answer(again[i].bytes, 0)));
    // The old check's answer arrives after the resync: ignored, and checking goes on.
    sa.dispatch(from_lid(kSmLid, master_status_answer(check[0].bytes, mad::status::kSaNoRecords)));
    CHECK(sa.counters().resyncs == 1);
    transport.take();
    clock.advance(15ms);
    bool checked = false;
    for (const auto& s : transport.take())
        checked |= mad::load_be16(s.bytes, 16) == mad::attr::kInformInfoRecord;
    CHECK(checked);
}

TEST_CASE("coherence: a refresh rate below 10 a second is honoured", "[coherence][cache]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSaConfig lc;
    lc.path_record.positive_ttl = 10ms;
    LocalSa sa(io.get_executor(), clock, transport, lc);
    coherence::CoherenceConfig cc;
    cc.subscribe = false;
    cc.preload = false;
    cc.refresh_rate = 2;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start();
    transport.take();
    for (std::uint64_t i = 0; i < 30; ++i) { // 30 answers, all due for refresh at once
        sa.dispatch(from_lid(kOwnLid, path_request(i + 1, 0x100005 + i)));
        for (const auto& up : transport.take())
            if (up.to.lid == kSmLid)
                sa.dispatch(from_lid(kSmLid, master_path_answer(up.bytes, 8)));
    }
    REQUIRE(sa.cache().size() == 30);
    const auto before = sa.counters().refreshes;
    clock.advance(1500ms);
    const auto refreshed = sa.counters().refreshes - before;
    CHECK(refreshed >= 2);
    CHECK(refreshed <= 4); // 2 a second (+1 for the slices' rounding), not 10
}
