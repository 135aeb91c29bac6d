// Each counter counts what its name and the man page say, and nothing else.
#include "fake_transport.hpp"

#include "engine/local_sa.hpp"
#include "ib/constants.hpp"
#include "transport/umad/umad_transport.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <cerrno>

using namespace localsa;
using namespace localsa::test;

namespace {

struct Node {
    boost::asio::io_context io;
    SteadyClock clock;
    FakeTransport transport;
    LocalSa sa{io.get_executor(), clock, transport, LocalSaConfig{}};
};

} // namespace

TEST_CASE("counters: a master answer that is not a PathRecord is relayed, not counted dropped",
          "[counters]") {
    Node n;
    n.sa.dispatch(from_lid(kOwnLid, path_request(1, 0x100005)));
    auto up = n.transport.take();
    REQUIRE(up.size() == 1);
    auto answer = master_path_answer(up[0].bytes, 8);
    mad::store_be16(answer, mad::offset::kAttrId, mad::attr::kNodeRecord);
    n.sa.dispatch(from_lid(kSmLid, answer));
    const auto relayed = n.transport.take();
    REQUIRE(relayed.size() == 1); // the requester got the master's answer
    CHECK(relayed[0].to.lid == kOwnLid);
    CHECK(n.sa.counters().malformed_dropped == 0);
    CHECK(n.sa.counters().pr_relayed_unparsed == 1);
    CHECK(n.sa.cache().size() == 0);
}

TEST_CASE("counters: requesters beyond the cap on one question are not upstream overflow",
          "[counters]") {
    Node n;
    for (std::uint64_t tid = 1; tid <= 300; ++tid)
        n.sa.dispatch(from_lid(kOwnLid, path_request(tid, 0x100005)));
    CHECK(n.transport.take().size() == 1); // one question to the master
    CHECK(n.sa.counters().pr_waiters_overflow == 300 - 256);
    CHECK(n.sa.counters().upstream_overflow == 0);
}

TEST_CASE("counters: requests and Reports from other ports are counted apart", "[counters]") {
    Node n;
    n.sa.dispatch(from_lid(9, path_request(1, 0x100005)));
    n.sa.dispatch(from_lid(9, path_request(2, 0x100005)));
    mad::SaMad report;
    report.header.method = mad::method::kReport;
    report.header.attr_id = mad::attr::kNotice;
    n.sa.dispatch(from_lid(9, report.pack()));
    CHECK(n.transport.take().empty());
    CHECK(n.sa.counters().foreign_requests == 2);
    CHECK(n.sa.counters().foreign_reports == 1);
}

TEST_CASE("counters: a send the MAD layer timed out is not a send error", "[counters]") {
    Node n;
    auto timed_out = from_lid(kSmLid, path_request(1, 0x100005));
    timed_out.status = ETIMEDOUT;
    n.sa.dispatch(timed_out);
    CHECK(n.sa.counters().send_errors == 0);
    CHECK(n.sa.counters().send_timeouts == 1);
    auto failed = from_lid(kSmLid, path_request(2, 0x100005));
    failed.status = EIO;
    n.sa.dispatch(failed);
    CHECK(n.sa.counters().send_errors == 1);
    CHECK(n.sa.counters().send_timeouts == 1);
}

TEST_CASE("QP1's Q_Key is 0x80010000", "[counters]") {
    CHECK(mad::kQp1Qkey == 0x80010000u);
}

TEST_CASE("an agent registration refused says why, with the class in hex", "[counters]") {
    // libibumad returns -EPERM whatever the kernel said; errno holds the kernel's reason.
    const auto in_use = transport::register_failure_message(0x03, 2, EINVAL);
    CHECK_THAT(in_use, Catch::Contains("class 0x03 version 2"));
    CHECK_THAT(in_use, Catch::Contains("already registered"));
    const auto other = transport::register_failure_message(0x81, 1, ENODEV);
    CHECK_THAT(other, Catch::Contains("class 0x81 version 1"));
    CHECK_THAT(other, Catch::Contains(std::strerror(ENODEV)));
    CHECK_THAT(other, !Catch::Contains("already registered"));
    CHECK_THAT(other, !Catch::Contains("another"));
}
