// The dispatcher, path cache, upstream client and proxy driven together over a fake transport.
#include "fake_transport.hpp"

#include "engine/local_sa.hpp"
#include "ib/class_port_info.hpp"
#include "ib/inform_info.hpp"
#include "ib/notice.hpp"
#include "ib/response.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSaConfig config;
    std::unique_ptr<LocalSa> sa;

    explicit Fixture(LocalSaConfig c = {}) : config(c) {
        sa = std::make_unique<LocalSa>(io.get_executor(), clock, transport, config);
    }
    void deliver(transport::InboundMad in) { sa->dispatch(in); }
    // The master answers the one request it received.
    std::vector<std::uint8_t> master_answers(const SentMad& upstream, std::uint16_t dlid) {
        auto answer = master_path_answer(upstream.bytes, dlid);
        deliver(from_lid(kSmLid, answer));
        return answer;
    }
};

std::uint64_t low_tid(const std::vector<std::uint8_t>& b) {
    return mad::tid_of(b) & mad::kTidLowMask;
}

} // namespace

TEST_CASE("a PathRecord miss goes to the master once, then hits", "[local_sa]") {
    Fixture f;
    const auto request = path_request(0xabcd00000042, 0x100005);
    f.deliver(from_lid(kOwnLid, request));

    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
    // The requester's deadline (200 ms) passes within one try (200 ms): no retry can follow,
    // so the one try waits what all three would have.
    CHECK(sent[0].timeout == f.config.upstream.try_timeout * (f.config.upstream.retries + 1));
    // Same question, our own TID in the low 32 bits, the MAD layer's upper bits untouched.
    CHECK(low_tid(sent[0].bytes) != 0x42);
    CHECK(std::equal(request.begin() + 16, request.end(), sent[0].bytes.begin() + 16));

    const auto master = f.master_answers(sent[0], 8);
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(mad::tid_of(sent[0].bytes) == 0xabcd00000042);
    // Byte for byte the master's answer but for the TID.
    auto expected = master;
    mad::set_tid(expected, 0xabcd00000042);
    CHECK(sent[0].bytes == expected);

    f.deliver(from_lid(kOwnLid, path_request(0x77, 0x100005)));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(mad::tid_of(sent[0].bytes) == 0x77);
    CHECK(sa::PathRecord::unpack(mad::Bytes{sent[0].bytes}.subspan(56)).dlid == 8);
    CHECK(f.sa->counters().pr_cache_hits == 1);
    CHECK(f.sa->counters().pr_cache_misses == 1);
    CHECK(f.sa->counters().upstream_requests == 1);
}

TEST_CASE("only an SM the query went to answers it", "[local_sa]") {
    LocalSaConfig c;
    c.path_record.requester_deadline = 2s; // a requester that waits for a retry
    Fixture f(c);
    f.deliver(from_lid(kOwnLid, path_request(0x42, 0x100005)));
    const auto first = f.transport.take();
    REQUIRE(first.size() == 1);
    // Another port answers with the right TID: ignored.
    f.deliver(from_lid(9, master_path_answer(first[0].bytes, 8)));
    CHECK(f.transport.take().empty());
    CHECK(f.sa->counters().upstream_wrong_source == 1);
    CHECK(f.sa->counters().stray_responses == 1);

    SECTION("the master's answer is taken") {
        f.master_answers(first[0], 8);
        const auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kOwnLid);
        CHECK(mad::tid_of(sent[0].bytes) == 0x42);
    }
    SECTION("after an SM change the retry goes to the new SM, which alone answers it") {
        f.transport.state.sm_lid = 2;
        f.clock.advance(f.config.upstream.try_timeout + 50ms);
        const auto retry = f.transport.take();
        REQUIRE(retry.size() == 1);
        CHECK(retry[0].to.lid == 2);
        f.deliver(from_lid(kSmLid, master_path_answer(retry[0].bytes, 8)));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().upstream_wrong_source == 2);
        f.deliver(from_lid(2, master_path_answer(retry[0].bytes, 8)));
        const auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kOwnLid);
    }
}

TEST_CASE("identical misses in flight share one upstream query", "[local_sa]") {
    Fixture f;
    f.deliver(from_lid(kOwnLid, path_request(1, 0x100005)));
    f.deliver(from_lid(kOwnLid, path_request(2, 0x100005)));
    f.deliver(from_lid(kOwnLid, path_request(2, 0x100005))); // a retry of TID 2: absorbed
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    f.master_answers(sent[0], 8);
    sent = f.transport.take();
    REQUIRE(sent.size() == 2);
    CHECK(mad::tid_of(sent[0].bytes) == 1);
    CHECK(mad::tid_of(sent[1].bytes) == 2);
    CHECK(f.sa->counters().pr_coalesced == 2);
}

TEST_CASE("the cache key is every constrained field, not only the DGID", "[local_sa]") {
    Fixture f;
    f.deliver(from_lid(kOwnLid, path_request(1, 0x100005, mad::method::kGet, sa::pr_mask::kSl, 0)));
    f.deliver(from_lid(kOwnLid, path_request(2, 0x100005, mad::method::kGet, sa::pr_mask::kSl, 3)));
    f.deliver(from_lid(kOwnLid, path_request(3, 0x100005, mad::method::kGetTable)));
    f.deliver(from_lid(kOwnLid, path_request(4, 0x100005)));
    CHECK(f.transport.take().size() == 4);
    // A field outside the mask does not split the key.
    f.deliver(from_lid(kOwnLid, path_request(5, 0x100005, mad::method::kGet, 0, 9)));
    CHECK(f.transport.take().empty());
    CHECK(f.sa->counters().pr_coalesced == 1);
}

TEST_CASE("requests the cache cannot answer for are forwarded and not cached", "[local_sa]") {
    Fixture f;
    SECTION("another port asks: refused, neither answered nor relayed") {
        // Relayed, the master would answer for this port (its PKeys), not for the asker.
        f.deliver(from_lid(kOwnLid, path_request(1, 0x100005)));
        f.master_answers(f.transport.take().at(0), 8);
        f.transport.take();
        REQUIRE(f.sa->cache().size() == 1);
        for (int i = 0; i < 2; ++i)
            f.deliver(from_lid(9, path_request(10 + i, 0x100005)));
        mad::SaMad q; // any other attribute too
        q.header.method = mad::method::kSet;
        q.header.attr_id = mad::attr::kInformInfo;
        q.header.tid = 12;
        f.deliver(from_lid(9, q.pack()));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().foreign_requests == 3);
        CHECK(f.sa->counters().foreign_reports == 0);
        CHECK(f.sa->counters().pr_cache_hits == 0);
        CHECK(f.sa->counters().proxied_requests == 0);
    }
    SECTION("a Report from another port than the master's: not acknowledged, not used") {
        mad::SaMad r;
        r.header.method = mad::method::kReport;
        r.header.attr_id = mad::attr::kNotice;
        f.deliver(from_lid(9, r.pack()));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().reports_received == 0);
        CHECK(f.sa->counters().foreign_reports == 1);
    }
    SECTION("an SM_Key is set") {
        auto req = path_request(1, 0x100005);
        mad::store_be64(req, 36, 0x1234);
        f.deliver(from_lid(kOwnLid, req));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(mad::load_be64(sent[0].bytes, 36) == 0x1234); // passed through unchanged
        CHECK(f.sa->counters().pr_forwarded == 1);
    }
    SECTION("the port is not active") {
        f.transport.state.state = 2;
        f.deliver(from_lid(kOwnLid, path_request(1, 0x100005)));
        CHECK(f.sa->counters().pr_forwarded == 1);
    }
}

TEST_CASE("PathRecord errors OpenSM decides alone are answered locally", "[local_sa]") {
    Fixture f;
    SECTION("half a ServiceID") {
        f.deliver(from_lid(
            kOwnLid, path_request(1, 0x100005, mad::method::kGet, sa::pr_mask::kServiceIdHigh)));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(status_of(sent[0].bytes) == mad::status::kSaInsufficientComponents);
    }
    SECTION("an MTU outside 256..4096 with its selector") {
        auto req = path_request(1, 0x100005, mad::method::kGet,
                                sa::pr_mask::kMtuSelector | sa::pr_mask::kMtu);
        req[56 + 54] = 0x80 | 7;
        f.deliver(from_lid(kOwnLid, req));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(status_of(sent[0].bytes) == mad::status::kSaReqInvalid);
    }
    // OpenSM checks the rate, then the MTU, then the ServiceID (osm_pr_rcv_process): the first
    // check that fails decides the status.
    SECTION("a rate outside 2..22 with its selector, and half a ServiceID") {
        auto req = path_request(1, 0x100005, mad::method::kGet,
                                sa::pr_mask::kRateSelector | sa::pr_mask::kRate |
                                    sa::pr_mask::kServiceIdHigh);
        req[56 + 55] = 0x80 | 1;
        f.deliver(from_lid(kOwnLid, req));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(status_of(sent[0].bytes) == mad::status::kSaReqInvalid);
    }
    SECTION("a rate above 600 Gb/s (23) with its selector") {
        auto req = path_request(1, 0x100005, mad::method::kGet,
                                sa::pr_mask::kRateSelector | sa::pr_mask::kRate);
        req[56 + 55] = 0x80 | 23;
        f.deliver(from_lid(kOwnLid, req));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(status_of(sent[0].bytes) == mad::status::kSaReqInvalid);
    }
    SECTION("an invalid MTU and half a ServiceID: the MTU decides") {
        auto req = path_request(1, 0x100005, mad::method::kGet,
                                sa::pr_mask::kMtuSelector | sa::pr_mask::kMtu |
                                    sa::pr_mask::kServiceIdLow);
        req[56 + 54] = 0x80 | 0;
        f.deliver(from_lid(kOwnLid, req));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(status_of(sent[0].bytes) == mad::status::kSaReqInvalid);
    }
    CHECK(f.sa->counters().upstream_requests == 0);
}

TEST_CASE("PathRecord methods other than Get/GetTable are the master's to answer", "[local_sa]") {
    // IBA says UNSUP_METHOD_ATTR, OpenSM drops them: whatever the master does, we relay.
    Fixture f;
    f.deliver(from_lid(kOwnLid, path_request(1, 0x100005, mad::method::kSet)));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
    CHECK(f.sa->counters().pr_forwarded == 1);
    CHECK(f.sa->cache().size() == 0);
}

TEST_CASE("malformed MADs get their status or are dropped and counted", "[local_sa]") {
    Fixture f;
    SECTION("shorter than a MAD header") {
        f.deliver(from_lid(kOwnLid, std::vector<std::uint8_t>(10, 1)));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().malformed_dropped == 1);
    }
    SECTION("a request shorter than a MAD (ib_umad hands over whole MADs)") {
        auto req = path_request(1, 0x100005);
        req.resize(mad::kSaHeaderSize + 64);
        f.deliver(from_lid(kOwnLid, req));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().malformed_dropped == 1);
    }
    SECTION("an SMP: only ibsim's quirks answer SMInfo (transport::sim::SimQuirks)") {
        std::vector<std::uint8_t> smp(256);
        smp[0] = 1;
        smp[1] = mad::mgmt_class::kSubnLid;
        smp[2] = 1;
        smp[3] = mad::method::kGet;
        mad::store_be16(smp, 16, mad::attr::kSmInfo);
        f.deliver(from_lid(kSmLid, smp));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().malformed_dropped == 1);
    }
    SECTION("unknown base version") {
        auto req = path_request(1, 0x100005);
        req[0] = 2;
        f.deliver(from_lid(kOwnLid, req));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().malformed_dropped == 1);
    }
    SECTION("wrong class version") {
        auto req = path_request(1, 0x100005);
        req[2] = 1;
        f.deliver(from_lid(kOwnLid, req));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(status_of(sent[0].bytes) == mad::status::kBadVersion);
        CHECK(f.sa->counters().bad_version == 1);
    }
    SECTION("unknown method") {
        auto req = path_request(1, 0x100005);
        req[3] = 0x09;
        f.deliver(from_lid(kOwnLid, req));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(status_of(sent[0].bytes) == mad::status::kUnsupportedMethod);
    }
    SECTION("RMPP on a Get") {
        auto req = path_request(1, 0x100005);
        req[24] = 1;
        req[26] = mad::rmpp::kFlagActive;
        f.deliver(from_lid(kOwnLid, req));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().stray_rmpp == 1);
    }
    SECTION("a response nobody asked for") {
        f.deliver(from_lid(kSmLid, master_path_answer(path_request(99, 0x100005), 8)));
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().stray_responses == 1);
    }
    SECTION("a MAD of a class that is not ours") {
        auto req = path_request(1, 0x100005);
        req[1] = 0x04;
        f.deliver(from_lid(kOwnLid, req));
        CHECK(f.transport.take().empty());
    }
    // Whatever came before, the next good request is served.
    f.deliver(from_lid(kOwnLid, path_request(7, 0x100005)));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
}

TEST_CASE("other attributes are proxied with the requester's TID and payload unchanged",
          "[local_sa]") {
    Fixture f;
    mad::SaMad q;
    q.header.method = mad::method::kGet;
    q.header.attr_id = mad::attr::kNodeRecord;
    q.header.tid = 0x5555000000000009;
    q.comp_mask = 1;
    q.data[1] = 8;
    f.deliver(from_lid(kOwnLid, q.pack()));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
    auto answer = sent[0].bytes;
    answer[3] = mad::method::kGetResp;
    mad::store_be16(answer, 4, mad::status::kSaNoRecords);
    answer[100] = 0xee;
    f.deliver(from_lid(kSmLid, answer));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(mad::tid_of(sent[0].bytes) == 0x5555000000000009);
    mad::set_tid(answer, 0x5555000000000009);
    CHECK(sent[0].bytes == answer);
    CHECK(f.sa->counters().proxied_requests == 1);
    CHECK(f.sa->counters().proxied_responses == 1);
}

TEST_CASE("an unanswered query is retried with fresh TIDs, then given up", "[local_sa]") {
    LocalSaConfig c;
    c.upstream.try_timeout = 5ms;
    c.upstream.retries = 2;
    Fixture f(c);
    f.deliver(from_lid(kOwnLid, path_request(1, 0x100005)));
    f.clock.advance(100ms);
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 3);
    CHECK(low_tid(sent[0].bytes) != low_tid(sent[1].bytes));
    CHECK(low_tid(sent[1].bytes) != low_tid(sent[2].bytes));
    CHECK(f.sa->counters().upstream_retries == 2);
    CHECK(f.sa->counters().upstream_timeouts == 1);
    // A late answer to the first try is told apart and not relayed.
    f.master_answers(sent[0], 8);
    CHECK(f.transport.take().empty());
    CHECK(f.sa->counters().upstream_late_responses == 1);
    // The miss is no longer pending: a new request asks the master again.
    f.deliver(from_lid(kOwnLid, path_request(2, 0x100005)));
    CHECK(f.transport.take().size() == 1);
}

TEST_CASE("BUSY from the master backs off and retries", "[local_sa]") {
    LocalSaConfig c;
    c.upstream.busy_backoff = 4ms; // held back 2-4 ms
    Fixture f(c);
    f.deliver(from_lid(kOwnLid, path_request(1, 0x100005)));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    auto busy = sent[0].bytes;
    busy[3] = mad::method::kGetResp;
    mad::store_be16(busy, 4, mad::status::kBusy);
    f.deliver(from_lid(kSmLid, busy));
    CHECK(f.transport.take().empty());
    f.clock.advance(20ms);
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
    f.master_answers(sent[0], 8);
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(status_of(sent[0].bytes) == 0);
    CHECK(f.sa->counters().upstream_busy == 1);
}

TEST_CASE("the upstream queue is bounded", "[local_sa]") {
    LocalSaConfig c;
    c.upstream.max_outstanding = 1;
    c.upstream.max_queued = 1;
    Fixture f(c);
    for (std::uint64_t i = 0; i < 3; ++i)
        f.deliver(from_lid(kOwnLid, path_request(i + 1, 0x100005 + i)));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(f.sa->upstream().queued() == 1);
    CHECK(f.sa->counters().upstream_overflow == 1);
    f.master_answers(sent[0], 8);
    sent = f.transport.take();
    REQUIRE(sent.size() == 2); // the answer, and the queued query launched
    CHECK(sent[1].to.lid == kSmLid);
}

TEST_CASE("NO_RECORDS is remembered for the negative TTL only", "[local_sa]") {
    LocalSaConfig c;
    c.path_record.negative_ttl = 20ms;
    Fixture f(c);
    f.deliver(from_lid(kOwnLid, path_request(1, 0x100099)));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    f.deliver(from_lid(kSmLid, sa::make_error_response(sent[0].bytes, mad::status::kSaNoRecords)));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(status_of(sent[0].bytes) == mad::status::kSaNoRecords);
    f.deliver(from_lid(kOwnLid, path_request(2, 0x100099)));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(status_of(sent[0].bytes) == mad::status::kSaNoRecords);
    CHECK(mad::tid_of(sent[0].bytes) == 2);
    f.clock.advance(30ms);
    f.deliver(from_lid(kOwnLid, path_request(3, 0x100099)));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
}

TEST_CASE("ClassPortInfo is answered locally once the master's is known", "[local_sa]") {
    Fixture f;
    f.sa->start();
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(mad::load_be16(sent[0].bytes, 16) == mad::attr::kClassPortInfo);
    sa::ClassPortInfo master;
    master.capability_mask = 0x2602;
    master.resp_time_value = 16;
    auto answer = sent[0].bytes;
    answer[3] = mad::method::kGetResp;
    master.pack(mad::MutableBytes{answer}.subspan(56, sa::ClassPortInfo::kSize));
    f.deliver(from_lid(kSmLid, answer));

    mad::SaMad q;
    q.header.attr_id = mad::attr::kClassPortInfo;
    q.header.tid = 0x31;
    f.deliver(from_lid(kOwnLid, q.pack()));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    const auto cpi = sa::ClassPortInfo::unpack(mad::Bytes{sent[0].bytes}.subspan(56));
    CHECK(cpi.capability_mask == 0x2602);
    // 3 tries of 200 ms: 4.096 us * 2^18 = 1.07 s covers them, 2^17 would not.
    CHECK(cpi.resp_time_value == 18);
    CHECK(f.sa->counters().cpi_answered == 1);
}

TEST_CASE("a storm of Reports is logged in a few lines, every Report still acknowledged",
          "[local_sa][log]") {
    Fixture f;
    std::ostringstream text;
    const auto previous = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(text)));
    for (std::uint64_t tid = 1; tid <= 100; ++tid) {
        mad::SaMad r;
        r.header.method = mad::method::kReport;
        r.header.attr_id = mad::attr::kNotice;
        r.header.tid = tid;
        sa::Notice n;
        n.trap_number = sa::trap::kGidOutOfService;
        n.pack(r.data);
        f.deliver(from_lid(kSmLid, r.pack()));
    }
    spdlog::set_default_logger(previous);
    CHECK(f.transport.take().size() == 100);
    CHECK(f.sa->counters().reports_received == 100);
    std::size_t lines = 0;
    std::istringstream in(text.str());
    for (std::string line; std::getline(in, line);)
        lines += line.find("Report: trap 65") != std::string::npos;
    CHECK(lines == kEventLogBurst);
}

TEST_CASE("Reports are acknowledged and handed on", "[local_sa]") {
    Fixture f;
    std::vector<std::uint16_t> traps;
    f.sa->on_report([&](const sa::Notice& n, std::uint64_t) { traps.push_back(n.trap_number); });
    mad::SaMad r;
    r.header.method = mad::method::kReport;
    r.header.attr_id = mad::attr::kNotice;
    r.header.tid = 0x99;
    sa::Notice n;
    n.trap_number = sa::trap::kGidOutOfService;
    n.pack(r.data);
    f.deliver(from_lid(kSmLid, r.pack()));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].bytes[3] == mad::method::kReportResp);
    CHECK(mad::tid_of(sent[0].bytes) == 0x99);
    CHECK(traps == std::vector<std::uint16_t>{65});

    SECTION("none is taken while the port knows no master, not even from LID 0") {
        f.transport.state.sm_lid = 0;
        r.header.tid = 0x9a;
        f.deliver(from_lid(0, r.pack()));
        CHECK(f.transport.take().empty());
        CHECK(traps.size() == 1);
        CHECK(f.sa->counters().foreign_reports == 1);
    }
}

namespace {
// The same answer as `master` (a whole 256-byte MAD as the master's model packs it): MAD and SA
// headers and the records. The RMPP header and the length are the MAD layer's framing (localsad
// sends the records' length, RMPP active, and the kernel segments it).
bool same_answer(const std::vector<std::uint8_t>& sent, const std::vector<std::uint8_t>& master) {
    constexpr std::size_t kRmppBegin = 24, kRmppEnd = 36;
    if (sent.size() < kRmppEnd || sent.size() > master.size())
        return false;
    return std::equal(sent.begin(), sent.begin() + kRmppBegin, master.begin()) &&
           std::equal(sent.begin() + kRmppEnd, sent.end(), master.begin() + kRmppEnd) &&
           std::all_of(master.begin() + static_cast<std::ptrdiff_t>(sent.size()), master.end(),
                       [](std::uint8_t b) { return b == 0; });
}
} // namespace

TEST_CASE("a GetTable answer of several records is cached whole and served again", "[local_sa]") {
    Fixture f;
    f.deliver(from_lid(kOwnLid, path_request(1, 0x100005, mad::method::kGetTable)));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    // The master's answer: three paths to the destination, in one MAD (no RMPP needed).
    auto m = *mad::SaMad::unpack(sent[0].bytes);
    m.header.method = mad::method::kGetTableResp;
    m.sm_key = 0;
    m.attr_offset = 8;
    std::fill(m.data.begin(), m.data.end(), 0);
    for (std::uint16_t i = 0; i < 3; ++i) {
        sa::PathRecord pr;
        pr.sgid = gid(0x100003);
        pr.dgid = gid(0x100005);
        pr.slid = kOwnLid;
        pr.dlid = static_cast<std::uint16_t>(8 + i);
        pr.reversible = true;
        pr.pkey = 0xffff;
        pr.pack(mad::MutableBytes{m.data}.subspan(64 * i, 64));
    }
    const auto master = m.pack();
    f.deliver(from_lid(kSmLid, master));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    // Both answers are judged against the master's, not the second against the first.
    auto relayed = master;
    mad::set_tid(relayed, 1); // the client's TID in place of localsad's upstream one
    CHECK(same_answer(sent[0].bytes, relayed));
    CHECK(f.sa->cache().size() == 1);
    CHECK(f.sa->cache().out_of_line_entries() == 1);

    f.deliver(from_lid(kOwnLid, path_request(2, 0x100005, mad::method::kGetTable)));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kOwnLid);
    CHECK(f.sa->counters().pr_cache_hits == 1);
    auto expected = master;
    mad::set_tid(expected, 2);
    CHECK(same_answer(sent[0].bytes, expected));
    for (std::size_t i = 0; i < 3; ++i)
        CHECK(sa::PathRecord::unpack(mad::Bytes{sent[0].bytes}.subspan(56 + 64 * i)).dlid == 8 + i);
}

TEST_CASE("a client's InformInfo Set is denied, never relayed", "[local_sa][inform]") {
    // Relayed, it would subscribe (or unsubscribe) localsad's own port at the master.
    Fixture f;
    for (std::uint8_t subscribe : {1, 0}) {
        mad::SaMad q;
        q.header.method = mad::method::kSet;
        q.header.attr_id = mad::attr::kInformInfo;
        q.header.tid = 0x70 + subscribe;
        sa::InformInfo info;
        info.lid_range_begin = 0xffff;
        info.is_generic = 1;
        info.subscribe = subscribe;
        info.type = 0xffff;
        info.trap_number = sa::trap::kGidOutOfService;
        info.qpn = 1;
        info.pack(q.data);
        f.deliver(from_lid(kOwnLid, q.pack()));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kOwnLid);
        CHECK(sent[0].bytes[3] == mad::method::kGetResp);
        CHECK(status_of(sent[0].bytes) == mad::status::kSaDenied);
        CHECK(mad::tid_of(sent[0].bytes) == 0x70u + subscribe);
    }
    CHECK(f.sa->counters().inform_denied == 2);
    CHECK(f.sa->counters().proxied_requests == 0);
    CHECK(f.sa->upstream().outstanding() == 0);
}

namespace {

// rdma_cm's question (cma_query_ib_route): SGID, DGID, PKey, NumbPath, Reversible, ServiceID
// (port space << 16 | port) and QoSClass (the ToS), one ServiceID per listening port.
std::vector<std::uint8_t> rdma_cm_request(std::uint64_t tid, std::uint64_t dguid,
                                          std::uint64_t service_id, std::uint16_t qos_class = 0) {
    auto bytes =
        path_request(tid, dguid, mad::method::kGet,
                     sa::pr_mask::kServiceId | sa::pr_mask::kPKey | sa::pr_mask::kQosClass);
    auto m = *mad::SaMad::unpack(bytes);
    auto pr = sa::PathRecord::unpack(m.data);
    pr.service_id = service_id;
    pr.qos_class = qos_class;
    pr.pkey = 0xffff;
    pr.pack(m.data);
    return m.pack();
}

// The master's answer as OpenSM builds it (pr_rcv_build_pr): a fresh record, ServiceID and
// QoSClass 0 whatever was asked.
std::vector<std::uint8_t> opensm_path_answer(const std::vector<std::uint8_t>& request,
                                             std::uint16_t dlid, std::uint8_t sl = 0) {
    auto answer = master_path_answer(request, dlid);
    auto m = *mad::SaMad::unpack(answer);
    auto pr = sa::PathRecord::unpack(m.data);
    pr.service_id = 0;
    pr.qos_class = 0;
    pr.sl = sl;
    pr.pack(m.data);
    return m.pack();
}

// Starts the LocalSa and plays the master's ClassPortInfo answer (CapabilityMask2 as given).
void learn_master_cpi(Fixture& f, std::uint32_t capability_mask2) {
    f.sa->start();
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    sa::ClassPortInfo master;
    master.capability_mask = 0x2602;
    master.capability_mask2 = capability_mask2;
    master.resp_time_value = 16;
    auto answer = sent[0].bytes;
    answer[3] = mad::method::kGetResp;
    master.pack(mad::MutableBytes{answer}.subspan(56, sa::ClassPortInfo::kSize));
    f.deliver(from_lid(kSmLid, answer));
}

constexpr std::uint32_t kOpenSmCapMask2 = 0x0000b5e8; // OpenSM 3.3.23 without QoS
constexpr std::uint32_t kCapMask2IsQosSupported = 1u << 1;

} // namespace

TEST_CASE("rdma_cm's ServiceIDs share one cached path when the master's answers cannot depend "
          "on them",
          "[local_sa][qos]") {
    Fixture f;
    SECTION("the master advertises no QoS support: one miss serves every ServiceID") {
        learn_master_cpi(f, kOpenSmCapMask2);
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x11, 0x100005, 0x1064e20)));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kSmLid);
        const auto master = opensm_path_answer(sent[0].bytes, 8);
        f.deliver(from_lid(kSmLid, master));
        REQUIRE(f.transport.take().size() == 1);

        for (std::uint64_t sid : {0x1064e21ULL, 0x1061389ULL, 0x13ULL}) {
            for (std::uint16_t qos_class : {0, 5}) {
                f.deliver(from_lid(kOwnLid, rdma_cm_request(0x12, 0x100005, sid, qos_class)));
                sent = f.transport.take();
                REQUIRE(sent.size() == 1);
                CHECK(sent[0].to.lid == kOwnLid);
                // Byte for byte what the master answers any of them (OpenSM's record carries
                // ServiceID 0 and QoSClass 0), with the asker's TID.
                auto expected = master;
                mad::set_tid(expected, 0x12);
                CHECK(sent[0].bytes == expected);
            }
        }
        CHECK(f.sa->counters().pr_cache_misses == 1);
        CHECK(f.sa->counters().pr_cache_hits == 6);
        // Another destination is still its own question.
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x13, 0x100007, 0x1064e20)));
        CHECK(f.transport.take().at(0).to.lid == kSmLid);
    }
    SECTION("the master supports QoS: each ServiceID is its own question") {
        learn_master_cpi(f, kOpenSmCapMask2 | kCapMask2IsQosSupported);
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x11, 0x100005, 0x1064e20)));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        f.deliver(from_lid(kSmLid, opensm_path_answer(sent[0].bytes, 8)));
        REQUIRE(f.transport.take().size() == 1);
        // Another ServiceID may match another QoS level (another SL): the master is asked.
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x12, 0x100005, 0x1064e21)));
        sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kSmLid);
        const auto master = opensm_path_answer(sent[0].bytes, 8, 2);
        f.deliver(from_lid(kSmLid, master));
        sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        auto expected = master;
        mad::set_tid(expected, 0x12);
        CHECK(sent[0].bytes == expected);
        // Each is then served from the cache with its own answer.
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x14, 0x100005, 0x1064e21)));
        sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sa::PathRecord::unpack(mad::Bytes{sent[0].bytes}.subspan(56)).sl == 2);
        CHECK(f.sa->counters().pr_cache_misses == 2);
        CHECK(f.sa->counters().pr_cache_hits == 1);
    }
    SECTION("the master's capabilities not known yet: ServiceIDs stay in the key") {
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x11, 0x100005, 0x1064e20)));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        f.deliver(from_lid(kSmLid, opensm_path_answer(sent[0].bytes, 8)));
        REQUIRE(f.transport.take().size() == 1);
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x12, 0x100005, 0x1064e21)));
        sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kSmLid);
    }
    SECTION("an answer stored before the capabilities were known still answers after") {
        // A large fabric's start reads ClassPortInfo late: the paths asked before must not be
        // asked again once the key leaves ServiceID out (16,384 nodes: 45 k more Gets).
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x11, 0x100005, 0x1064e20)));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        const auto master = opensm_path_answer(sent[0].bytes, 8);
        f.deliver(from_lid(kSmLid, master));
        REQUIRE(f.transport.take().size() == 1);
        learn_master_cpi(f, kOpenSmCapMask2);
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x12, 0x100005, 0x1064e20)));
        sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kOwnLid);
        auto expected = master;
        mad::set_tid(expected, 0x12);
        CHECK(sent[0].bytes == expected);
        CHECK(f.sa->counters().pr_cache_misses == 1);
    }
    SECTION("a path asked before the capabilities were known is not warmed up again") {
        // After an SM fail-over the capabilities are forgotten until the new master's
        // ClassPortInfo answers; the clients' misses meanwhile are stored under the whole
        // mask, and the warm-up (questions without ServiceID) asked each again: 16,384 nodes,
        // 31 k more Gets after a fail-over.
        const auto request = rdma_cm_request(0x11, 0x100005, 0x1064e20);
        f.deliver(from_lid(kOwnLid, request));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        f.deliver(from_lid(kSmLid, opensm_path_answer(sent[0].bytes, 8)));
        REQUIRE(f.transport.take().size() == 1);
        learn_master_cpi(f, kOpenSmCapMask2);
        auto& paths = f.sa->coherence_parts().path_records;
        paths.warm(paths.key_of(request)); // the warm set's question: ServiceID left out
        CHECK(f.transport.take().empty());
        CHECK(f.sa->counters().warm_queries == 0);
        // Another destination is warmed up.
        paths.warm(paths.key_of(rdma_cm_request(0x12, 0x100007, 0x1064e20)));
        CHECK(f.transport.take().size() == 1);
    }
    SECTION("misses are remembered for the warm-up only while the capabilities are unknown") {
        // A master with QoS support keeps every field in the key; its misses must not fill
        // the set meant for the unknown window (it was cleared only at a resync).
        learn_master_cpi(f, kOpenSmCapMask2 | kCapMask2IsQosSupported);
        for (std::uint64_t i = 0; i < 10; ++i)
            f.deliver(from_lid(kOwnLid, rdma_cm_request(0x20 + i, 0x100005 + i, 0x1064e20)));
        CHECK(f.sa->coherence_parts().path_records.asked_while_unknown() == 0);
    }
    SECTION("the master turns QoS on (learned again): ServiceIDs are in the key again") {
        learn_master_cpi(f, kOpenSmCapMask2);
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x11, 0x100005, 0x1064e20)));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        f.deliver(from_lid(kSmLid, opensm_path_answer(sent[0].bytes, 8)));
        REQUIRE(f.transport.take().size() == 1);
        REQUIRE(f.sa->cache().size() == 1);
        learn_master_cpi(f, kOpenSmCapMask2 | kCapMask2IsQosSupported);
        f.deliver(from_lid(kOwnLid, rdma_cm_request(0x12, 0x100005, 0x1064e20)));
        sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kSmLid);
    }
}

TEST_CASE("after a resync a new miss is a question of its own, to the new master", "[local_sa]") {
    // Issue 26 item 11: a miss asked before the resync (the old SM) must not be joined by the
    // misses after it; its answer reaches its own requesters only, and is not stored.
    LocalSaConfig c;
    c.path_record.requester_deadline = 2s;
    Fixture f(c);
    f.deliver(from_lid(kOwnLid, path_request(0x41, 0x100005)));
    const auto old_query = f.transport.take();
    REQUIRE(old_query.size() == 1);
    CHECK(old_query[0].to.lid == kSmLid);

    f.transport.state.sm_lid = 2; // SM fail-over; coherence resyncs
    f.sa->coherence_parts().path_records.new_generation();
    f.deliver(from_lid(kOwnLid, path_request(0x42, 0x100005)));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1); // not coalesced with the old SM's question
    CHECK(sent[0].to.lid == 2);
    CHECK(f.sa->path_records().pending() == 2); // the old question, and the new

    // The old SM answers its question: its requester gets it, nothing is stored.
    f.deliver(from_lid(kSmLid, master_path_answer(old_query[0].bytes, 8)));
    auto out = f.transport.take();
    REQUIRE(out.size() == 1);
    CHECK(mad::tid_of(out[0].bytes) == 0x41);
    CHECK(f.sa->cache().size() == 0);

    // The new SM's answer goes to the new requester and is stored.
    f.deliver(from_lid(2, master_path_answer(sent[0].bytes, 9)));
    out = f.transport.take();
    REQUIRE(out.size() == 1);
    CHECK(mad::tid_of(out[0].bytes) == 0x42);
    CHECK(sa::PathRecord::unpack(mad::Bytes{out[0].bytes}.subspan(56)).dlid == 9);
    CHECK(f.sa->cache().size() == 1);
    CHECK(f.sa->path_records().pending() == 0);
}

TEST_CASE("a relayed request the master ignores reaches it once per try of the requester",
          "[local_sa]") {
    // Issue 26 item 15: OpenSM drops Set(SMInfoRecord) and a wrong SM_Key silently; the
    // requester retries on its own, so localsad must not add retries of its own.
    Fixture f;
    mad::SaMad q;
    q.header.method = mad::method::kSet;
    q.header.attr_id = 0x18; // SMInfoRecord
    q.header.tid = 0x77;
    q.sm_key = 0x1234; // a key the master may not know
    f.deliver(from_lid(kOwnLid, q.pack()));
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
    // The one try waits the whole budget: a slow answer still reaches the requester.
    CHECK(sent[0].timeout == f.config.upstream.patience());
    f.clock.advance(f.config.upstream.patience() + 100ms);
    CHECK(f.transport.take().empty());
    CHECK(f.sa->counters().upstream_requests == 1);
    CHECK(f.sa->counters().upstream_retries == 0);

    // The requester's own retry is relayed once more, and a late answer still comes back.
    q.header.tid = 0x78;
    f.deliver(from_lid(kOwnLid, q.pack()));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    f.clock.advance(f.config.upstream.try_timeout * 2);
    CHECK(f.transport.take().empty());
    f.deliver(from_lid(kSmLid, master_status_answer(sent[0].bytes, mad::status::kSaReqInvalid)));
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(mad::tid_of(sent[0].bytes) == 0x78);
    CHECK(f.sa->counters().upstream_requests == 2);
}

TEST_CASE("the master's ClassPortInfo is asked again until learned", "[local_sa][cpi]") {
    // Issue 26 item 2: OpenSM ignores SA MADs during its first sweep; a lost, ignored or BUSY
    // answer must not leave the capabilities unknown until the next resync.
    Fixture f;
    f.sa->start();
    auto sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(mad::load_be16(sent[0].bytes, 16) == mad::attr::kClassPortInfo);
    // Ignored: every try times out.
    f.clock.advance(f.config.upstream.patience() + 50ms);
    CHECK(f.transport.take().size() == static_cast<std::size_t>(f.config.upstream.retries));
    CHECK(!f.sa->class_port_info().master());
    // Asked again after a back-off (1 s), not at once.
    f.clock.advance(500ms);
    CHECK(f.transport.take().empty());
    f.clock.advance(600ms);
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(mad::load_be16(sent[0].bytes, 16) == mad::attr::kClassPortInfo);
    // BUSY on every try: asked again later too (after 2 s).
    for (int i = 0; i <= f.config.upstream.retries; ++i) {
        REQUIRE(sent.size() == 1);
        f.deliver(from_lid(kSmLid, master_status_answer(sent[0].bytes, mad::status::kBusy)));
        f.clock.advance(150ms); // past the BUSY hold-back, within a try
        sent = f.transport.take();
    }
    CHECK(sent.empty());
    CHECK(!f.sa->class_port_info().master());
    f.clock.advance(2s);
    sent = f.transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(mad::load_be16(sent[0].bytes, 16) == mad::attr::kClassPortInfo);
    sa::ClassPortInfo master;
    master.capability_mask = 0x2602;
    auto answer = sent[0].bytes;
    answer[3] = mad::method::kGetResp;
    master.pack(mad::MutableBytes{answer}.subspan(56, sa::ClassPortInfo::kSize));
    f.deliver(from_lid(kSmLid, answer));
    CHECK(f.sa->class_port_info().master());
    // Learned: never asked again.
    f.clock.advance(10min);
    for (const auto& s : f.transport.take())
        CHECK(mad::load_be16(s.bytes, 16) != mad::attr::kClassPortInfo);
}

TEST_CASE("a table's try is sized by its RMPP transfer, not one 200 ms MAD", "[local_sa][rmpp]") {
    // Issue 26 item 8: a client's GetTable miss, its refresh and a relayed table.
    Fixture f;
    const auto unknown =
        upstream::table_try_timeout(f.config.upstream.try_timeout, upstream::kUnknownTableBytes);
    CHECK(unknown > f.config.upstream.patience());
    SECTION("a client's GetTable(PathRecord) miss") {
        f.deliver(from_lid(kOwnLid, path_request(0x42, 0x100005, mad::method::kGetTable)));
        const auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].timeout >= unknown);
    }
    SECTION("a relayed GetTable(NodeRecord)") {
        mad::SaMad q;
        q.header.method = mad::method::kGetTable;
        q.header.attr_id = mad::attr::kNodeRecord;
        q.header.tid = 9;
        f.deliver(from_lid(kOwnLid, q.pack()));
        auto sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].timeout >= unknown);
        // Sized by the last answer from then on: a small table, a short try.
        auto answer = sent[0].bytes;
        answer[3] = mad::method::kGetTableResp;
        f.deliver(from_lid(kSmLid, answer));
        f.transport.take();
        q.header.tid = 10;
        f.deliver(from_lid(kOwnLid, q.pack()));
        sent = f.transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].timeout == f.config.upstream.patience());
    }
}
