// The fleet-scale driver's master model: it must answer what a local SA asks the way OpenSM
// does, or the fleet's counts would be of a master no node talks to.
#define CATCH_CONFIG_MAIN
#include "engine/coherence/routing_epoch_source.hpp"
#include "ib/bytes.hpp"
#include "ib/constants.hpp"
#include "ib/inform_info.hpp"
#include "ib/mad.hpp"
#include "ib/notice.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"
#include "sim/fleet_scale/master_model.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace localsa;
using namespace localsa::fleet_scale;

namespace {

sa::Gid gid(std::uint64_t guid) {
    return sa::Gid::from_parts(0xfe80000000000000ULL, guid);
}

MasterModel three_ports() {
    MasterModel m(1);
    for (std::uint16_t i = 0; i < 3; ++i)
        m.add_port({static_cast<std::uint16_t>(2 + i), gid(0x100 + i)});
    return m;
}

std::vector<std::uint8_t> path_query(std::uint8_t method, std::uint64_t mask, std::uint64_t sguid,
                                     std::uint64_t dguid) {
    mad::SaMad q;
    q.header.method = method;
    q.header.attr_id = mad::attr::kPathRecord;
    q.header.tid = 0x1234;
    q.comp_mask = mask;
    sa::PathRecord pr;
    pr.sgid = gid(sguid);
    pr.dgid = gid(dguid);
    pr.pkey = 0xffff;
    pr.reversible = true;
    pr.numb_path = 1;
    pr.pack(q.data);
    return q.pack();
}

std::vector<std::uint8_t> inform(std::uint16_t trap, bool subscribe) {
    mad::SaMad q;
    q.header.method = mad::method::kSet;
    q.header.attr_id = mad::attr::kInformInfo;
    sa::InformInfo info;
    info.lid_range_begin = 0xffff;
    info.is_generic = 1;
    info.subscribe = subscribe;
    info.trap_number = trap;
    info.pack(q.data);
    return q.pack();
}

std::vector<std::uint8_t> subscriptions_of(std::uint64_t guid) {
    mad::SaMad q;
    q.header.method = mad::method::kGet;
    q.header.attr_id = mad::attr::kInformInfoRecord;
    q.comp_mask = 1;
    const auto g = gid(guid);
    std::copy(g.raw.begin(), g.raw.end(), q.data.begin());
    return q.pack();
}

} // namespace

TEST_CASE("a PathRecord Get is answered with the path between the two ports") {
    auto m = three_ports();
    const auto q = path_query(mad::method::kGet,
                              sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kPKey |
                                  sa::pr_mask::kReversible | sa::pr_mask::kNumbPath,
                              0x100, 0x102);
    const auto a = m.answer(q, 2);
    CHECK(a.kind == QueryKind::PathGet);
    CHECK(a.records == 1);
    REQUIRE(a.response.size() == 256);
    CHECK(a.response[3] == mad::method::kGetResp);
    CHECK(mad::tid_of(a.response) == 0x1234);
    CHECK(mad::load_be16(a.response, 4) == 0);
    const auto rec = sa::PathRecord::unpack(mad::Bytes{a.response}.subspan(56));
    CHECK(rec.sgid == gid(0x100));
    CHECK(rec.dgid == gid(0x102));
    CHECK(rec.slid == 2);
    CHECK(rec.dlid == 4);
    CHECK(rec.reversible);
    CHECK(rec.pkey == 0xffff);
}

TEST_CASE("a path to a GID the master does not know is NO_RECORDS") {
    auto m = three_ports();
    const auto a = m.answer(
        path_query(mad::method::kGet, sa::pr_mask::kSgid | sa::pr_mask::kDgid, 0x100, 0x999), 2);
    CHECK(mad::load_be16(a.response, 4) == mad::status::kSaNoRecords);
    CHECK(a.records == 0);
    m.add_port({9, gid(0x999)}); // the port joins
    const auto b = m.answer(
        path_query(mad::method::kGet, sa::pr_mask::kSgid | sa::pr_mask::kDgid, 0x100, 0x999), 2);
    CHECK(mad::load_be16(b.response, 4) == 0);
}

TEST_CASE("a GetTable from a source is every port's path, one transaction, 56 + n x 64 bytes") {
    auto m = three_ports();
    const auto a = m.answer(
        path_query(mad::method::kGetTable, sa::pr_mask::kSgid | sa::pr_mask::kPKey, 0x101, 0), 3);
    CHECK(a.kind == QueryKind::PathTable);
    CHECK(a.records == 3);
    CHECK(a.response.size() == 56 + 3 * 64);
    CHECK(a.response[3] == mad::method::kGetTableResp);
    const auto recs = sa::response_records(a.response, 64);
    CHECK(recs.complete);
    CHECK(recs.bytes.size() == 3 * 64);
}

TEST_CASE("subscriptions are held per port, checked by SubscriberGID, forgotten on fail-over") {
    auto m = three_ports();
    auto status = [&](std::uint16_t lid, std::uint64_t guid) {
        return mad::load_be16(m.answer(subscriptions_of(guid), lid).response, 4);
    };
    CHECK(status(2, 0x100) == mad::status::kSaNoRecords);
    const auto set = m.answer(inform(64, true), 2);
    CHECK(set.kind == QueryKind::InformInfoSet);
    CHECK(set.response[3] == mad::method::kGetResp);
    CHECK(mad::load_be16(set.response, 4) == 0);
    CHECK(status(2, 0x100) == 0); // one record
    m.answer(inform(65, true), 2);
    CHECK(status(2, 0x100) == mad::status::kSaTooManyRecords);
    // GetTable: one 64-byte record per subscription, its InformInfo at byte 24.
    auto table = subscriptions_of(0x100);
    table[3] = mad::method::kGetTable;
    const auto t = m.answer(table, 2);
    CHECK(t.response[3] == mad::method::kGetTableResp);
    CHECK(mad::load_be16(t.response, 44) == 64 / 8);
    REQUIRE(t.response.size() == 56 + 2 * 64);
    CHECK(sa::InformInfo::unpack(mad::Bytes{t.response}.subspan(56 + 24)).trap_number == 64);
    CHECK(sa::InformInfo::unpack(mad::Bytes{t.response}.subspan(56 + 64 + 24)).trap_number == 65);
    CHECK(m.subscribers(64) == std::vector<std::uint16_t>{2});
    CHECK(m.subscribers(66).empty());
    m.answer(inform(64, false), 2);
    CHECK(m.subscribers(64).empty());
    m.fail_over(40);
    CHECK(m.sm_lid() == 40);
    CHECK(m.subscriptions_of(2) == 0);
    CHECK(status(2, 0x100) == mad::status::kSaNoRecords);
}

TEST_CASE("a Report carries the trap and the GID concerned, issued by the SM") {
    auto m = three_ports();
    const auto r = m.report(64, gid(0x555), 77);
    CHECK(r[3] == mad::method::kReport);
    CHECK(mad::load_be16(r, 16) == mad::attr::kNotice);
    const auto n = sa::Notice::unpack(mad::Bytes{r}.subspan(56));
    CHECK(n.trap_number == 64);
    CHECK(n.issuer_lid == 1);
    CHECK(n.subject_gid() == gid(0x555));
}

TEST_CASE("master queue: capacity, a bounded queue that drops, BUSY past the fifo timeout") {
    MasterCapacity cap;
    cap.records_per_s = 1'000;    // 1 ms a record after the first
    cap.transactions_per_s = 100; // 10 ms a transaction
    cap.queue = 3;
    cap.busy_after_us = 1'000'000;
    CHECK(cap.cost_us(1) == 10000.0);
    CHECK(cap.cost_us(101) == 110000.0);
    MasterQueue q(cap);
    // In order, one after the other: a table of 11 records takes 20 ms.
    CHECK(q.admit(0, 1).done_us == 10'000);
    CHECK(q.admit(0, 11).done_us == 30'000);
    CHECK(q.admit(0, 1).done_us == 40'000);
    // Three waiting: the fourth is dropped, and nothing of it is computed.
    CHECK(q.offer(0) == MasterQueue::Admit::Dropped);
    CHECK(q.dropped() == 1);
    // Once the first is done there is room again.
    CHECK(q.admit(10'000, 1).done_us == 50'000);
    CHECK(q.worst_wait_us() == 40'000);
    // A backlog beyond busy_after: BUSY, at once.
    MasterQueue slow(cap);
    CHECK(slow.admit(0, 2'000).admit == MasterQueue::Admit::Served); // ~2 s of work
    CHECK(slow.offer(1) == MasterQueue::Admit::Busy);
    CHECK(slow.busy() == 1);
    CHECK(slow.offer(1'500'000) == MasterQueue::Admit::Served);
}

TEST_CASE("master model: a port that is down is not answered nor in a table") {
    auto m = three_ports();
    m.set_down(gid(0x102), true);
    const auto t = m.answer(
        path_query(mad::method::kGetTable, sa::pr_mask::kSgid | sa::pr_mask::kPKey, 0x100, 0), 2);
    CHECK(t.records == 2);
    const auto g = m.answer(
        path_query(mad::method::kGet, sa::pr_mask::kSgid | sa::pr_mask::kDgid, 0x100, 0x102), 2);
    CHECK(g.records == 0);
    m.set_down(gid(0x102), false);
    CHECK(m.answer(
               path_query(mad::method::kGet, sa::pr_mask::kSgid | sa::pr_mask::kDgid, 0x100, 0x102),
               2)
              .records == 1);
}

TEST_CASE("master queue: an idle master takes a query at once, at any time (negative too)") {
    MasterCapacity cap;
    cap.transactions_per_s = 1'000;
    MasterQueue q(cap);
    const auto o = q.admit(-60'000'000, 1);
    CHECK(o.admit == MasterQueue::Admit::Served);
    CHECK(o.done_us == -60'000'000 + 1'000);
    CHECK(q.offer(-60'000'000) == MasterQueue::Admit::Served);
    CHECK(q.worst_wait_us() == 1'000);
}

TEST_CASE("the routing epoch: the plugin's ServiceRecord, NO_RECORDS without it, its Report") {
    auto m = three_ports();
    mad::SaMad q;
    q.header.method = mad::method::kGet;
    q.header.attr_id = mad::attr::kServiceRecord;
    q.header.tid = 0x99;
    q.comp_mask = 1; // ServiceID, as RoutingEpochSource asks
    mad::store_be64(q.data, 0, coherence::kEpochServiceId);
    const auto request = q.pack();
    // Without the plugin: no record.
    auto a = m.answer(request, 2);
    CHECK(a.kind == QueryKind::ServiceRecord);
    CHECK(mad::load_be16(a.response, mad::offset::kStatus) == mad::status::kSaNoRecords);

    m.set_routing_epoch(std::uint64_t{41});
    m.bump_routing_epoch();
    a = m.answer(request, 2);
    REQUIRE(mad::load_be16(a.response, mad::offset::kStatus) == 0);
    CHECK(a.records == 0);
    REQUIRE(a.response.size() >= 56 + 176);
    CHECK(mad::load_be64(a.response, 56) == coherence::kEpochServiceId);
    CHECK(mad::load_be16(a.response, 56 + 24) == 0xffff);
    CHECK(std::string(reinterpret_cast<const char*>(a.response.data()) + 56 + 48) ==
          "localsa.routing-epoch");
    CHECK(mad::load_be64(a.response, 56 + 160) == 42);               // ServiceData64[0]
    CHECK(mad::load_be64(a.response, 56 + 168) == m.sm_port_guid()); // [1]: the SM port
    CHECK(mad::load_be64(a.response, 56 + 16) == m.sm_port_guid());  // ServiceGID's GUID

    // Another ServiceID: none.
    mad::store_be64(q.data, 0, 0x1234);
    a = m.answer(q.pack(), 2);
    CHECK(mad::load_be16(a.response, mad::offset::kStatus) == mad::status::kSaNoRecords);

    // The Report, as the engine parses it.
    const auto r = m.epoch_report(5);
    CHECK(r[3] == mad::method::kReport);
    const auto n = sa::Notice::unpack(mad::Bytes{r}.subspan(56));
    const auto e = coherence::RoutingEpochSource::parse_notice(n);
    REQUIRE(e);
    CHECK(e->value == 42);
    CHECK(e->sm_port_guid == m.sm_port_guid());
}
