// Clients' event subscriptions at the local SA: InformInfo Sets held here, the traps held at the
// master on their behalf, and the master's Reports sent on to them.
#include "fake_transport.hpp"

#include "engine/coherence/coherence.hpp"
#include "engine/events/client_subscriptions.hpp"
#include "engine/local_sa.hpp"
#include "ib/inform_info.hpp"
#include "ib/notice.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kClientQpn = 0x48;

sa::InformInfo trap_filter(std::uint16_t trap) {
    sa::InformInfo i;
    i.lid_range_begin = 0xffff;
    i.is_generic = 1;
    i.subscribe = 1;
    i.type = 0xffff;
    i.trap_number = trap;
    i.producer_type = 0xffffff;
    return i;
}

transport::InboundMad client_set(const sa::InformInfo& info, std::uint64_t tid,
                                 std::uint32_t qpn = kClientQpn) {
    mad::SaMad q;
    q.header.method = mad::method::kSet;
    q.header.attr_id = mad::attr::kInformInfo;
    q.header.tid = tid;
    info.pack(q.data);
    auto in = from_lid(kOwnLid, q.pack());
    in.from.qpn = qpn;
    return in;
}

sa::Notice gid_notice(std::uint16_t trap, std::uint64_t guid) {
    sa::Notice n;
    n.trap_number = trap;
    n.type = 3;
    n.producer_type = 4; // the SM
    n.issuer_lid = kSmLid;
    const auto g = gid(guid);
    std::copy(g.raw.begin(), g.raw.end(), n.data_details.begin() + 6);
    return n;
}

std::vector<std::uint8_t> master_report(const sa::Notice& n, std::uint64_t tid) {
    mad::SaMad r;
    r.header.method = mad::method::kReport;
    r.header.attr_id = mad::attr::kNotice;
    r.header.tid = tid;
    r.sm_key = 0x1122334455667788ULL;
    n.pack(r.data);
    return r.pack();
}

// A LocalSa with coherence started and its six subscriptions confirmed by the master.
struct Node {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa{io.get_executor(), clock, transport, {}};
    coherence::Coherence coh{io.get_executor(), sa.coherence_parts(), [] {
                                 coherence::CoherenceConfig c;
                                 c.preload = false;
                                 c.subscription_check = 0ms;
                                 c.spread = 0ms;
                                 return c;
                             }()};

    Node() {
        coh.start();
        for (const auto& s : transport.take())
            sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
    }
    // Sends the client's Set and returns what went out in reply (to the client or the master).
    std::vector<SentMad> set(const sa::InformInfo& info, std::uint64_t tid,
                             std::uint32_t qpn = kClientQpn) {
        sa.dispatch(client_set(info, tid, qpn));
        return transport.take();
    }
    nlohmann::json stats() {
        auto j = sa.stats();
        coh.add_stats(j);
        return j;
    }
};

SentMad only(const std::vector<SentMad>& sent) {
    REQUIRE(sent.size() == 1);
    return sent[0];
}

} // namespace

TEST_CASE("client subscriptions: a Report matches by the master's rules", "[events]") {
    using events::ClientSubscriptions;
    auto n = gid_notice(sa::trap::kGidOutOfService, 0x100007);
    n.issuer_gid = gid(0x100001);
    auto f = trap_filter(sa::trap::kGidOutOfService);
    CHECK(ClientSubscriptions::matches(f, n));
    SECTION("trap number") {
        f.trap_number = sa::trap::kGidInService;
        CHECK_FALSE(ClientSubscriptions::matches(f, n));
        f.trap_number = 0xffff;
        CHECK(ClientSubscriptions::matches(f, n));
    }
    SECTION("GID: the issuer's, and then the LID range does not apply") {
        f.gid = gid(0x100007); // the subject, not the issuer
        CHECK_FALSE(ClientSubscriptions::matches(f, n));
        f.gid = gid(0x100001);
        f.lid_range_begin = 100;
        f.lid_range_end = 200;
        CHECK(ClientSubscriptions::matches(f, n));
    }
    SECTION("LID range: the issuer's LID, 0xFFFF for every LID") {
        f.lid_range_begin = kSmLid + 1;
        f.lid_range_end = 100;
        CHECK_FALSE(ClientSubscriptions::matches(f, n));
        f.lid_range_begin = kSmLid;
        CHECK(ClientSubscriptions::matches(f, n));
    }
    SECTION("type, producer, generic") {
        f.type = 1;
        CHECK_FALSE(ClientSubscriptions::matches(f, n));
        f.type = 3;
        CHECK(ClientSubscriptions::matches(f, n));
        f.producer_type = 1; // a CA
        CHECK_FALSE(ClientSubscriptions::matches(f, n));
        f.producer_type = 4;
        CHECK(ClientSubscriptions::matches(f, n));
        f.is_generic = 0;
        CHECK_FALSE(ClientSubscriptions::matches(f, n));
    }
}

TEST_CASE("client subscriptions: the same subscriber and filter is one subscription, bounded",
          "[events]") {
    events::ClientSubscriptions subs(2);
    transport::MadAddress a;
    a.lid = 5;
    a.qpn = 0x48;
    auto b = a;
    b.qpn = 0x49;
    const auto f65 = trap_filter(65);
    CHECK(subs.add(a, f65) == events::ClientSubscriptions::AddResult::Added);
    auto again = f65;
    again.resp_time_value = 19; // does not select
    CHECK(subs.add(a, again) == events::ClientSubscriptions::AddResult::Updated);
    CHECK(subs.add(b, f65) == events::ClientSubscriptions::AddResult::Added);
    CHECK(subs.add(b, trap_filter(64)) == events::ClientSubscriptions::AddResult::Full);
    CHECK(subs.count_trap(65) == 2);
    CHECK_FALSE(subs.remove(a, trap_filter(64)));
    CHECK(subs.remove(a, f65));
    CHECK(subs.count_trap(65) == 1);
    CHECK(subs.size() == 1);
}

TEST_CASE("events: a client's subscription to a trap localsad holds is answered at once and its "
          "Reports reach the client",
          "[events]") {
    Node node;
    const auto& resp = only(node.set(trap_filter(sa::trap::kGidOutOfService), 0x70));
    CHECK(resp.to.lid == kOwnLid);
    CHECK(resp.to.qpn == kClientQpn);
    CHECK(resp.bytes[3] == mad::method::kGetResp);
    CHECK(status_of(resp.bytes) == 0);
    CHECK(mad::tid_of(resp.bytes) == 0x70);
    CHECK(sa::InformInfo::unpack(mad::Bytes{resp.bytes}.subspan(56)).trap_number == 65);
    CHECK(node.stats()["client_subscriptions"] == 1);
    CHECK(node.stats()["master_extra_subscriptions"] == 0);

    const auto notice = gid_notice(sa::trap::kGidOutOfService, 0x100007);
    node.sa.dispatch(from_lid(kSmLid, master_report(notice, 0x900)));
    auto sent = node.transport.take();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].to.lid == kSmLid); // our ReportResp first
    CHECK(sent[0].bytes[3] == mad::method::kReportResp);
    const auto& fwd = sent[1];
    CHECK(fwd.to.lid == kOwnLid);
    CHECK(fwd.to.qpn == kClientQpn);
    CHECK(fwd.to.qkey == 0x80010000u);
    CHECK(fwd.timeout > 0ms);
    CHECK(fwd.bytes[3] == mad::method::kReport);
    CHECK(mad::tid_of(fwd.bytes) != 0x900);
    CHECK(mad::load_be64(fwd.bytes, 36) == 0); // never the master's SM_Key
    CHECK(sa::Notice::unpack(mad::Bytes{fwd.bytes}.subspan(56)) == notice);
    // The master's resend of the same Report is not sent on again.
    node.sa.dispatch(from_lid(kSmLid, master_report(notice, 0x900)));
    CHECK(node.transport.take().size() == 1); // the ReportResp only
    CHECK(node.sa.counters().reports_duplicate == 1);

    SECTION("acknowledged: delivered, not sent again") {
        auto ack = fwd.bytes;
        ack[3] = mad::method::kReportResp;
        auto in = from_lid(kOwnLid, ack);
        in.from.qpn = kClientQpn;
        node.sa.dispatch(in);
        node.clock.advance(700ms);
        CHECK(node.transport.take().empty());
        CHECK(node.sa.counters().reports_fanned_out == 1);
        CHECK(node.sa.counters().report_retries == 0);
        CHECK(node.stats()["reports_in_flight"] == 0);
    }
    SECTION("unanswered: three tries, then undelivered; three in a row drop the subscriber") {
        node.clock.advance(700ms);
        auto tries = node.transport.take();
        REQUIRE(tries.size() == 2);
        for (const auto& t : tries)
            CHECK(t.bytes == fwd.bytes);
        CHECK(node.sa.counters().report_retries == 2);
        CHECK(node.sa.counters().reports_undelivered == 1);
        CHECK(node.stats()["client_subscriptions"] == 1);
        for (std::uint64_t tid : {0x901, 0x902}) {
            node.sa.dispatch(from_lid(kSmLid, master_report(notice, tid)));
            node.clock.advance(700ms);
            node.transport.take();
        }
        CHECK(node.sa.counters().reports_undelivered == 3);
        CHECK(node.sa.counters().client_subscriptions_dropped == 1);
        CHECK(node.stats()["client_subscriptions"] == 0);
        // Trap 65 is localsad's own: it stays held at the master.
        CHECK(node.stats()["subscriptions"] == std::size(coherence::kSubscribedTraps));
    }
    SECTION("an acknowledgement from another QP of the client's LID does not count") {
        auto ack = fwd.bytes;
        ack[3] = mad::method::kReportResp;
        auto in = from_lid(kOwnLid, ack);
        in.from.qpn = kClientQpn + 1;
        node.sa.dispatch(in);
        CHECK(node.sa.counters().stray_responses == 1);
        node.clock.advance(700ms);
        CHECK(node.transport.take().size() == 2); // tried again, as if unanswered
        CHECK(node.sa.counters().reports_fanned_out == 0);
        CHECK(node.sa.counters().reports_undelivered == 1);
    }
    SECTION("a Report the filter does not match is not sent") {
        node.sa.dispatch(
            from_lid(kSmLid, master_report(gid_notice(sa::trap::kGidInService, 0x100007), 0x903)));
        CHECK(node.transport.take().size() == 1); // the ReportResp only
    }
    SECTION("unsubscribed: no Reports, nothing sent to the master") {
        auto off = trap_filter(sa::trap::kGidOutOfService);
        off.subscribe = 0;
        const auto& r = only(node.set(off, 0x71));
        CHECK(r.to.qpn == kClientQpn);
        CHECK(status_of(r.bytes) == 0);
        CHECK(node.sa.counters().client_unsubscribed == 1);
        node.sa.dispatch(from_lid(kSmLid, master_report(notice, 0x904)));
        CHECK(node.transport.take().size() == 1); // the ReportResp only
        // Unsubscribing again: no such subscription (as OpenSM answers).
        CHECK(status_of(only(node.set(off, 0x72)).bytes) == mad::status::kSaReqInvalid);
    }
}

TEST_CASE("events: a trap localsad does not hold is held at the master while a client needs it",
          "[events]") {
    Node node;
    const auto f128 = trap_filter(sa::trap::kLinkStateChange);
    const auto& up = only(node.set(f128, 0x80));
    CHECK(up.to.lid == kSmLid); // the client waits for the master
    CHECK(up.bytes[3] == mad::method::kSet);
    const auto held = sa::InformInfo::unpack(mad::Bytes{up.bytes}.subspan(56));
    CHECK(held.trap_number == 128);
    CHECK(held.subscribe == 1);
    CHECK(held.lid_range_begin == 0xffff);

    SECTION("confirmed: the client is answered, a second client needs nothing more") {
        node.sa.dispatch(from_lid(kSmLid, master_status_answer(up.bytes, 0)));
        const auto& r = only(node.transport.take());
        CHECK(r.to.qpn == kClientQpn);
        CHECK(mad::tid_of(r.bytes) == 0x80);
        CHECK(status_of(r.bytes) == 0);
        CHECK(node.stats()["master_extra_subscriptions"] == 1);
        CHECK(status_of(only(node.set(f128, 0x81, kClientQpn + 1)).bytes) == 0);

        auto off = f128;
        off.subscribe = 0;
        CHECK(status_of(only(node.set(off, 0x82)).bytes) == 0); // one client left
        auto sent = node.set(off, 0x83, kClientQpn + 1);
        REQUIRE(sent.size() == 2); // the last one: released at the master too
        CHECK(sent[0].to.lid == kSmLid);
        CHECK(sa::InformInfo::unpack(mad::Bytes{sent[0].bytes}.subspan(56)).subscribe == 0);
        CHECK(sa::InformInfo::unpack(mad::Bytes{sent[0].bytes}.subspan(56)).trap_number == 128);
        CHECK(status_of(sent[1].bytes) == 0);
        CHECK(node.stats()["master_extra_subscriptions"] == 0);
        CHECK(node.stats()["subscriptions"] == std::size(coherence::kSubscribedTraps));
    }
    SECTION("refused by the master: the client gets the master's status, nothing is kept") {
        node.sa.dispatch(
            from_lid(kSmLid, master_status_answer(up.bytes, mad::status::kSaReqInvalid)));
        const auto& r = only(node.transport.take());
        CHECK(r.to.qpn == kClientQpn);
        CHECK(status_of(r.bytes) == mad::status::kSaReqInvalid);
        // o13-13.1.1: a failed InformInfo comes back with Subscribe 0.
        CHECK(sa::InformInfo::unpack(mad::Bytes{r.bytes}.subspan(56)).subscribe == 0);
        CHECK(node.stats()["client_subscriptions"] == 0);
        node.clock.advance(50ms);
        CHECK(node.transport.take().empty()); // and not tried again
    }
    SECTION("the master does not answer: the client is told BUSY") {
        node.clock.advance(1s);
        auto sent = node.transport.take();
        REQUIRE_FALSE(sent.empty());
        const auto& r = sent.back();
        CHECK(r.to.qpn == kClientQpn);
        CHECK(status_of(r.bytes) == mad::status::kBusy);
        CHECK(node.stats()["client_subscriptions"] == 0);
    }
    SECTION("a repeated Set the master refuses after a resync keeps the working subscription") {
        node.sa.dispatch(from_lid(kSmLid, master_status_answer(up.bytes, 0)));
        node.transport.take();
        node.coh.resync("test");
        node.clock.advance(2ms); // the resync's queries (spread window 0)
        std::vector<std::uint8_t> renewal;
        for (const auto& s : node.transport.take())
            if (mad::load_be16(s.bytes, 16) == mad::attr::kInformInfo &&
                sa::InformInfo::unpack(mad::Bytes{s.bytes}.subspan(56)).trap_number == 128)
                renewal = s.bytes;
        REQUIRE_FALSE(renewal.empty());
        CHECK(node.set(f128, 0x84).empty()); // the repeat waits for the renewal
        node.sa.dispatch(
            from_lid(kSmLid, master_status_answer(renewal, mad::status::kSaNoResources)));
        const auto& r = only(node.transport.take());
        CHECK(mad::tid_of(r.bytes) == 0x84);
        CHECK(status_of(r.bytes) == mad::status::kSaNoResources);
        CHECK(node.stats()["client_subscriptions"] == 1); // still held for its next Reports
    }
    SECTION("a resync holds it again at the new master") {
        node.sa.dispatch(from_lid(kSmLid, master_status_answer(up.bytes, 0)));
        node.transport.take();
        node.coh.resync("test");
        node.clock.advance(2ms); // the resync's queries (spread window 0)
        int traps128 = 0;
        for (const auto& s : node.transport.take())
            if (mad::load_be16(s.bytes, 16) == mad::attr::kInformInfo &&
                sa::InformInfo::unpack(mad::Bytes{s.bytes}.subspan(56)).trap_number == 128)
                ++traps128;
        CHECK(traps128 == 1);
    }
}

TEST_CASE("events: subscriptions that cannot be served are denied", "[events]") {
    Node node;
    SECTION("from QP1, where Reports reach localsad only") {
        CHECK(status_of(only(node.set(trap_filter(65), 1, 1)).bytes) == mad::status::kSaDenied);
    }
    SECTION("every trap at once") {
        CHECK(status_of(only(node.set(trap_filter(0xffff), 1)).bytes) == mad::status::kSaDenied);
    }
    SECTION("vendor-specific") {
        auto f = trap_filter(65);
        f.is_generic = 0;
        CHECK(status_of(only(node.set(f, 1)).bytes) == mad::status::kSaDenied);
    }
    SECTION("Subscribe other than 0 or 1") {
        auto f = trap_filter(65);
        f.subscribe = 2;
        CHECK(status_of(only(node.set(f, 1)).bytes) == mad::status::kSaReqInvalid);
    }
    CHECK(node.stats()["client_subscriptions"] == 0);
    CHECK(node.sa.counters().proxied_requests == 0);
}

TEST_CASE("events: without coherence nothing is held at the master, so Sets are denied",
          "[events]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, {});
    sa.dispatch(client_set(trap_filter(65), 1));
    const auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(status_of(sent[0].bytes) == mad::status::kSaDenied);
}

TEST_CASE("events: a client that leaves before the master answered still gets its answer, and "
          "the trap is released",
          "[events]") {
    Node node;
    auto f128 = trap_filter(sa::trap::kLinkStateChange);
    const auto up = only(node.set(f128, 0x90));
    auto off = f128;
    off.subscribe = 0;
    CHECK(status_of(only(node.set(off, 0x91)).bytes) == 0);
    node.sa.dispatch(from_lid(kSmLid, master_status_answer(up.bytes, 0)));
    auto sent = node.transport.take();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].to.lid == kSmLid); // held after all: released again
    CHECK(sa::InformInfo::unpack(mad::Bytes{sent[0].bytes}.subspan(56)).subscribe == 0);
    CHECK(sent[1].to.qpn == kClientQpn); // the first Set's answer
    CHECK(mad::tid_of(sent[1].bytes) == 0x90);
    CHECK(node.stats()["master_extra_subscriptions"] == 0);
}

TEST_CASE("events: a resync whose Sets fail at once answers the waiting client and renews the "
          "other traps",
          "[events]") {
    // One query in flight at most, none queued: after the resync every Set fails at once
    // (Overloaded) while the client's Set from before still occupies the slot. The failure of
    // trap 128 answers the client, which releases the trap in the middle of renewing them all.
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSaConfig config;
    config.upstream.max_outstanding = 1;
    config.upstream.max_queued = 0;
    LocalSa sa(io.get_executor(), clock, transport, config);
    coherence::CoherenceConfig cc;
    cc.preload = false;
    cc.subscription_check = 0ms;
    cc.spread = 0ms;
    coherence::Coherence coh(io.get_executor(), sa.coherence_parts(), cc);
    coh.start(); // trap 64 goes out, the other five overflow (tried again later)
    for (const auto& s : transport.take())
        sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));

    sa.dispatch(client_set(trap_filter(sa::trap::kLinkStateChange), 0xa0));
    const auto up = transport.take();
    REQUIRE(up.size() == 1);
    CHECK(up[0].to.lid == kSmLid);
    const auto overflow = sa.counters().upstream_overflow;
    coh.resync("test");
    clock.advance(2ms); // the resync's queries (spread window 0)
    const auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.qpn == kClientQpn);
    CHECK(mad::tid_of(sent[0].bytes) == 0xa0);
    CHECK(status_of(sent[0].bytes) == mad::status::kBusy);
    CHECK(sa.client_subscriptions().size() == 0);
    // ClassPortInfo, the six own traps and 128: each tried once, none skipped.
    CHECK(sa.counters().upstream_overflow - overflow == 8);
}

TEST_CASE("events: a client that left while its Set waited for the master still gets its "
          "answer after a resync",
          "[events]") {
    Node node;
    auto f128 = trap_filter(sa::trap::kLinkStateChange);
    const auto up = only(node.set(f128, 0xb0));
    auto off = f128;
    off.subscribe = 0;
    CHECK(status_of(only(node.set(off, 0xb1)).bytes) == 0);
    // The master changes before it answered: the Set in flight is forgotten with it.
    node.coh.resync("test");
    node.clock.advance(2ms); // the resync's queries (spread window 0)
    node.sa.dispatch(from_lid(kSmLid, master_status_answer(up.bytes, 0)));
    std::vector<SentMad> to_client;
    int released = 0;
    for (int round = 0; round < 3; ++round) {
        for (const auto& s : node.transport.take()) {
            if (s.to.qpn == kClientQpn) {
                to_client.push_back(s);
            } else if (s.bytes[3] == mad::method::kSet) {
                const auto info = sa::InformInfo::unpack(mad::Bytes{s.bytes}.subspan(56));
                released += info.trap_number == 128 && info.subscribe == 0;
                node.sa.dispatch(from_lid(kSmLid, master_status_answer(s.bytes, 0)));
            }
        }
    }
    REQUIRE(to_client.size() == 1);
    CHECK(mad::tid_of(to_client[0].bytes) == 0xb0);
    CHECK(status_of(to_client[0].bytes) == 0);
    CHECK(released == 1); // held at the new master after all: released again
    CHECK(node.stats()["master_extra_subscriptions"] == 0);
}

TEST_CASE("events: an InformInfo Set with an SM_Key is a client's subscription, once the master "
          "accepts the key",
          "[events][sm_key]") {
    // Issue 26 item 4: relayed, it subscribed (or unsubscribed) localsad's own port. The master
    // judges the key (OpenSM drops a wrong one silently): localsad asks it a harmless question
    // with that key, then holds the Set like any client's.
    Node node;
    auto keyed = [](const sa::InformInfo& info, std::uint64_t tid) {
        auto in = client_set(info, tid);
        mad::store_be64(in.bytes, 36, 1); // OpenSM's default SA key
        return in;
    };
    SECTION("an unsubscribe from a trap localsad holds leaves localsad's own in place") {
        auto off = trap_filter(sa::trap::kGidOutOfService);
        off.subscribe = 0;
        node.sa.dispatch(keyed(off, 0x71));
        auto probe = only(node.transport.take());
        CHECK(probe.to.lid == kSmLid);
        CHECK(mad::load_be16(probe.bytes, 16) != mad::attr::kInformInfo); // never the Set
        CHECK(mad::load_be64(probe.bytes, 36) == 1);                      // the client's key
        auto ok = probe.bytes;
        ok[3] = mad::method::kGetResp;
        node.sa.dispatch(from_lid(kSmLid, ok));
        const auto resp = only(node.transport.take());
        CHECK(resp.to.qpn == kClientQpn);
        // As from the master: no such subscription of this client.
        CHECK(status_of(resp.bytes) == mad::status::kSaReqInvalid);
        CHECK(node.stats()["master_extra_subscriptions"] == 0);
    }
    SECTION("a subscribe gets the Reports") {
        node.sa.dispatch(keyed(trap_filter(sa::trap::kGidOutOfService), 0x72));
        auto probe = only(node.transport.take());
        auto ok = probe.bytes;
        ok[3] = mad::method::kGetResp;
        node.sa.dispatch(from_lid(kSmLid, ok));
        const auto resp = only(node.transport.take());
        CHECK(status_of(resp.bytes) == 0);
        CHECK(node.stats()["client_subscriptions"] == 1);
        node.sa.dispatch(
            from_lid(kSmLid, master_report(gid_notice(sa::trap::kGidOutOfService, 7), 0x901)));
        const auto sent = node.transport.take();
        REQUIRE(sent.size() == 2);
        CHECK(sent[1].to.qpn == kClientQpn);
    }
    SECTION("a key the master drops: no answer, nothing held") {
        node.sa.dispatch(keyed(trap_filter(sa::trap::kGidOutOfService), 0x73));
        only(node.transport.take());
        node.clock.advance(5s);
        for (const auto& s : node.transport.take())
            CHECK(s.to.qpn != kClientQpn);
        CHECK(node.stats()["client_subscriptions"] == 0);
    }
}
