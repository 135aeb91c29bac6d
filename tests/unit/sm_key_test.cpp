// SM_Key rules: a requester's SM_Key goes to the master unchanged and nowhere else; it is never
// logged (at any level) and never put into the daemon's own queries.
#include "fake_transport.hpp"

#include "engine/local_sa.hpp"
#include "ib/notice.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

using namespace localsa;
using namespace localsa::test;

namespace {

constexpr std::uint64_t kKey = 0x8badf00dcafe1234;

// Every log line at trace level goes into `text` while it lives.
struct CapturedLog {
    std::ostringstream text;
    std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
    CapturedLog() {
        auto logger = std::make_shared<spdlog::logger>(
            "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
        logger->set_level(spdlog::level::trace);
        spdlog::set_default_logger(logger);
    }
    ~CapturedLog() { spdlog::set_default_logger(previous); }
};

std::vector<std::uint8_t> keyed(std::vector<std::uint8_t> mad) {
    mad::store_be64(mad, 36, kKey);
    return mad;
}

std::vector<std::uint8_t> node_record_request(std::uint64_t tid) {
    mad::SaMad q;
    q.header.method = mad::method::kGet;
    q.header.attr_id = mad::attr::kNodeRecord;
    q.header.tid = tid;
    q.comp_mask = 1;
    q.data[1] = 8;
    return q.pack();
}

std::uint64_t key_of(const std::vector<std::uint8_t>& mad) {
    return mad::load_be64(mad, 36);
}

} // namespace

TEST_CASE("SM_Keys pass through unchanged, are never logged and never used for own queries",
          "[local_sa][sm_key]") {
    CapturedLog log;
    boost::asio::io_context io;
    SteadyClock clock;
    FakeTransport transport;
    LocalSaConfig config;
    config.upstream.try_timeout = std::chrono::milliseconds{1};
    config.upstream.retries = 1;
    LocalSa sa(io.get_executor(), clock, transport, config);
    auto run_timers = [&] {
        io.restart();
        io.run_for(std::chrono::milliseconds{20});
    };

    // Keyed PathRecord Gets from this port, a keyed NodeRecord Get; another port's is refused.
    sa.dispatch(from_lid(kOwnLid, keyed(path_request(1, 0x100005))));
    sa.dispatch(from_lid(kOwnLid, keyed(path_request(2, 0x100007))));
    sa.dispatch(from_lid(kOwnLid, keyed(node_record_request(3))));
    sa.dispatch(from_lid(9, keyed(path_request(2, 0x100007))));
    auto sent = transport.take();
    REQUIRE(sent.size() == 3);
    for (const auto& s : sent) {
        CHECK(s.to.lid == kSmLid);
        CHECK(key_of(s.bytes) == kKey); // relayed with the requester's key
    }
    CHECK(sa.counters().pr_forwarded == 2);
    CHECK(sa.counters().foreign_requests == 1);
    CHECK(sa.cache().size() == 0);

    // The master answers the first; the answer goes back as the master sent it.
    auto answer = master_path_answer(sent[0].bytes, 8);
    mad::store_be64(answer, 36, kKey);
    sa.dispatch(from_lid(kSmLid, answer));
    auto back = transport.take();
    REQUIRE(back.size() == 1);
    CHECK(back[0].to.lid == kOwnLid);
    CHECK(key_of(back[0].bytes) == kKey);
    CHECK(sa.cache().size() == 0); // a keyed question is never cached

    // The others time out: their retries carry the requester's key, nothing else does.
    run_timers();
    for (const auto& s : transport.take())
        CHECK(key_of(s.bytes) == kKey);
    run_timers();
    transport.take();

    // Malformed keyed input: dropped or answered locally without echoing the key.
    auto rmpp_get = keyed(path_request(4, 0x100005));
    rmpp_get[24] = 1;
    rmpp_get[26] = 0x01;
    sa.dispatch(from_lid(kOwnLid, rmpp_get));
    auto bad_version = keyed(path_request(5, 0x100005));
    bad_version[2] = 1;
    sa.dispatch(from_lid(kOwnLid, bad_version));
    for (const auto& s : transport.take()) {
        CHECK(s.to.lid == kOwnLid);
        CHECK(key_of(s.bytes) == 0);
    }
    // A keyed request failing OpenSM's own checks is the master's: OpenSM drops a wrong key
    // before any check, so no local error answer (it goes up with the key unchanged).
    auto half_sid = keyed(path_request(6, 0x100005, mad::method::kGet, 1));
    sa.dispatch(from_lid(kOwnLid, half_sid));
    auto relayed = transport.take();
    REQUIRE(relayed.size() == 1);
    CHECK(relayed[0].to.lid == kSmLid);
    CHECK(key_of(relayed[0].bytes) == kKey);

    // The daemon's own queries: a miss, a refresh, ClassPortInfo.
    sa.dispatch(from_lid(kOwnLid, path_request(7, 0x100009)));
    sa.start();
    auto own = transport.take();
    REQUIRE(own.size() == 2);
    auto miss_answer = master_path_answer(own[0].bytes, 12);
    sa.dispatch(from_lid(kSmLid, miss_answer));
    transport.take();
    REQUIRE(sa.cache().size() == 1);
    sa.cache().for_each([&](const cache::PathQueryKey& key, const cache::PathAnswer&) {
        sa.path_records().refresh(key);
    });
    for (const auto& s : transport.take())
        own.push_back(s);
    REQUIRE(own.size() == 3);
    for (const auto& s : own) {
        CHECK(s.to.lid == kSmLid);
        CHECK(key_of(s.bytes) == 0);
    }

    // A keyed Report from the master: acknowledged to the master only.
    mad::SaMad r;
    r.header.method = mad::method::kReport;
    r.header.attr_id = mad::attr::kNotice;
    r.header.tid = 0x99;
    r.sm_key = kKey;
    sa::Notice n;
    n.trap_number = sa::trap::kGidOutOfService;
    n.pack(r.data);
    sa.dispatch(from_lid(kSmLid, r.pack()));
    for (const auto& s : transport.take())
        CHECK(s.to.lid == kSmLid);

    const auto text = log.text.str();
    INFO(text);
    CHECK(!text.empty()); // the log was on
    for (const char* form : {"8badf00dcafe1234", "8BADF00DCAFE1234", "10064964684273816116",
                             "8b ad f0 0d", "cafe1234", "CAFE1234", "3405648436"})
        CHECK(text.find(form) == std::string::npos);
}
