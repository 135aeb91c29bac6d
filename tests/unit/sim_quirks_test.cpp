// ibsim's MAD-layer quirks, absorbed in front of the dispatcher (transport/sim).
#include "fake_transport.hpp"

#include "engine/clock.hpp"
#include "engine/local_sa.hpp"
#include "ib/constants.hpp"
#include "transport/sim/sim_quirks.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <cstdlib>

using namespace localsa;
using namespace localsa::test;
using localsa::transport::sim::answer_sminfo;
using localsa::transport::sim::SimQuirks;

namespace {

std::vector<std::uint8_t> sminfo_get(std::uint8_t mgmt_class) {
    std::vector<std::uint8_t> smp(256);
    smp[0] = 1;
    smp[1] = mgmt_class;
    smp[2] = 1;
    smp[3] = mad::method::kGet;
    mad::store_be16(smp, 16, mad::attr::kSmInfo);
    return smp;
}

struct Recorder {
    std::vector<transport::InboundMad> seen;
    transport::InboundHandler handler() {
        return [this](const transport::InboundMad& in) { seen.push_back(in); };
    }
};

} // namespace

TEST_CASE("SMInfo is answered as a NOTACTIVE SM of priority 0", "[sim][sminfo]") {
    auto smp = sminfo_get(mad::mgmt_class::kSubnDirected);
    smp[70] = 0xaa; // stale data must not leak into the answer
    auto resp = answer_sminfo(smp, 0x100003);
    REQUIRE(resp);
    CHECK((*resp)[3] == mad::method::kGetResp);
    CHECK(((*resp)[4] & 0x80) != 0);
    CHECK(mad::load_be64(*resp, 64) == 0x100003);
    CHECK((*resp)[64 + 20] == 0);
    CHECK((*resp)[70] == 0);
    smp[3] = mad::method::kSet;
    CHECK_FALSE(answer_sminfo(smp, 1));
    smp[3] = mad::method::kGet;
    smp.resize(100); // not a whole SMP
    CHECK_FALSE(answer_sminfo(smp, 1));
}

TEST_CASE("SimQuirks answers SMInfo itself and hands every other MAD on", "[sim]") {
    FakeTransport transport;
    Recorder next;
    SimQuirks quirks(transport, next.handler());

    SECTION("an SMInfo Get: answered to its sender, not handed on") {
        quirks(from_lid(kSmLid, sminfo_get(mad::mgmt_class::kSubnLid)));
        auto sent = transport.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].to.lid == kSmLid);
        CHECK(sent[0].bytes[mad::offset::kMethod] == mad::method::kGetResp);
        CHECK(mad::load_be64(sent[0].bytes, 64) == transport.state.gid.guid());
        CHECK(next.seen.empty());
        CHECK(quirks.sminfo_answered() == 1);
    }
    SECTION("another SMP: handed on, for the dispatcher to drop") {
        auto smp = sminfo_get(mad::mgmt_class::kSubnLid);
        mad::store_be16(smp, 16, 0x0015); // PortInfo
        quirks(from_lid(kSmLid, smp));
        CHECK(transport.take().empty());
        REQUIRE(next.seen.size() == 1);
        CHECK(quirks.sminfo_answered() == 0);
    }
    SECTION("a whole request and a short response keep their bytes and length") {
        const auto req = path_request(7, 0x100005);
        quirks(from_lid(kOwnLid, req));
        auto resp = path_request(8, 0x100005);
        resp[mad::offset::kMethod] = mad::method::kGetResp;
        resp.resize(mad::kSaHeaderSize + 64); // a non-RMPP answer's length counts its records
        quirks(from_lid(kSmLid, resp));
        REQUIRE(next.seen.size() == 2);
        CHECK(next.seen[0].bytes == req);
        CHECK(next.seen[1].bytes == resp);
        CHECK(quirks.requests_padded() == 0);
    }
    SECTION("a short SA request (umad2sim hands over its sender's length): padded with zeros") {
        auto req = path_request(7, 0x100005);
        const auto whole = req;
        req.resize(mad::kSaHeaderSize + 64);
        quirks(from_lid(kOwnLid, req));
        REQUIRE(next.seen.size() == 1);
        CHECK(next.seen[0].bytes.size() == mad::kMadSize);
        CHECK(std::equal(req.begin(), req.end(), next.seen[0].bytes.begin()));
        CHECK(std::all_of(next.seen[0].bytes.begin() + static_cast<long>(req.size()),
                          next.seen[0].bytes.end(), [](auto b) { return b == 0; }));
        CHECK(next.seen[0].from.lid == kOwnLid);
        CHECK(quirks.requests_padded() == 1);
    }
    SECTION("shorter than an SA header: handed on as it came, for the dispatcher to drop") {
        quirks(from_lid(kOwnLid, std::vector<std::uint8_t>(30, 1)));
        REQUIRE(next.seen.size() == 1);
        CHECK(next.seen[0].bytes.size() == 30);
    }
}

TEST_CASE("in front of the dispatcher, a short request from umad2sim is answered", "[sim]") {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa(io.get_executor(), clock, transport, LocalSaConfig{});
    SimQuirks quirks(transport, [&](const transport::InboundMad& in) { sa.dispatch(in); });
    auto req = path_request(7, 0x100005);
    req.resize(mad::kSaHeaderSize + 64);
    quirks(from_lid(kOwnLid, req));
    // Read through to the master: the request was taken as a whole Get, not dropped.
    auto sent = transport.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].to.lid == kSmLid);
    CHECK(sa.counters().malformed_dropped == 0);
}

TEST_CASE("umad2sim is recognised by its preloaded library", "[sim]") {
    const char* old = std::getenv("LD_PRELOAD");
    const std::string saved = old ? old : "";
    ::setenv("LD_PRELOAD", "/usr/lib/umad2sim/libumad2sim.so", 1);
    CHECK(transport::sim::umad2sim_loaded());
    ::setenv("LD_PRELOAD", "libfoo.so", 1);
    CHECK_FALSE(transport::sim::umad2sim_loaded());
    if (old)
        ::setenv("LD_PRELOAD", saved.c_str(), 1);
    else
        ::unsetenv("LD_PRELOAD");
}
