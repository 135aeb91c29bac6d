// The fleet's shared port, over a fake wire: TIDs remapped and restored per owner, the in-flight
// limit, slots of lost requests freed, answers to requesters delivered in-process.
#define CATCH_CONFIG_MAIN
#include "fake_transport.hpp"
#include "sim/fleet/shared_port.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using namespace localsa;

namespace {
std::vector<std::uint8_t> request(std::uint64_t tid) {
    return test::path_request(tid, 0x200);
}
transport::MadAddress sm() {
    transport::MadAddress a;
    a.lid = test::kSmLid;
    return a;
}
} // namespace

TEST_CASE("shared port: colliding owner TIDs are remapped and restored") {
    boost::asio::io_context io;
    test::FakeTransport wire;
    fleet::SharedPort port(io.get_executor(), wire, 8, std::chrono::milliseconds{1000});
    std::vector<std::uint64_t> got_a, got_b;
    const auto a =
        port.add_owner([&](transport::InboundMad in) { got_a.push_back(mad::tid_of(in.bytes)); });
    const auto b =
        port.add_owner([&](transport::InboundMad in) { got_b.push_back(mad::tid_of(in.bytes)); });
    REQUIRE(port.send(a, request(0x77), sm(), std::chrono::milliseconds{200}));
    REQUIRE(port.send(b, request(0x77), sm(), std::chrono::milliseconds{200}));
    auto sent = wire.take();
    REQUIRE(sent.size() == 2);
    const auto t0 = mad::tid_of(sent[0].bytes) & mad::kTidLowMask;
    const auto t1 = mad::tid_of(sent[1].bytes) & mad::kTidLowMask;
    CHECK(t0 != t1);
    CHECK(sent[0].to.lid == test::kSmLid);
    // Answers in reverse order, with the MAD layer's bits in the upper half.
    for (int i : {1, 0}) {
        auto resp = test::master_path_answer(sent[i].bytes, 9);
        mad::set_tid(resp, (0xabcdULL << 32) | (mad::tid_of(sent[i].bytes) & mad::kTidLowMask));
        port.on_wire(test::from_lid(test::kSmLid, resp));
    }
    CHECK(got_a == std::vector<std::uint64_t>{0x77});
    CHECK(got_b == std::vector<std::uint64_t>{0x77});
    CHECK(port.in_flight() == 0);
    // A response nobody waits for is counted, not delivered.
    port.on_wire(test::from_lid(test::kSmLid, test::master_path_answer(sent[0].bytes, 9)));
    CHECK(port.stats().unmatched == 1);
    CHECK(got_a.size() == 1);
}

TEST_CASE("shared port: at most max_in_flight on the wire, the rest queued in order") {
    boost::asio::io_context io;
    test::FakeTransport wire;
    fleet::SharedPort port(io.get_executor(), wire, 3, std::chrono::milliseconds{1000});
    std::vector<std::uint64_t> got;
    const auto o =
        port.add_owner([&](transport::InboundMad in) { got.push_back(mad::tid_of(in.bytes)); });
    for (std::uint64_t t = 1; t <= 10; ++t)
        REQUIRE(port.send(o, request(t), sm(), std::chrono::milliseconds{200}));
    CHECK(wire.sent.size() == 3);
    CHECK(port.queued() == 7);
    std::size_t answered = 0;
    while (answered < wire.sent.size()) {
        const auto& s = wire.sent[answered++];
        port.on_wire(test::from_lid(test::kSmLid, test::master_path_answer(s.bytes, 9)));
        CHECK(port.in_flight() <= 3);
    }
    CHECK(wire.sent.size() == 10);
    CHECK(got == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    CHECK(port.stats().max_in_flight_seen == 3);
    CHECK(port.stats().max_queued_seen == 7);
    port.reset_peaks(); // a new phase: its own peaks
    CHECK(port.stats().max_in_flight_seen == 0);
    CHECK(port.stats().max_queued_seen == 0);
}

TEST_CASE("shared port: a request never answered frees its slot after the slot timeout") {
    boost::asio::io_context io;
    test::FakeTransport wire;
    fleet::SharedPort port(io.get_executor(), wire, 1, std::chrono::milliseconds{50});
    const auto o = port.add_owner([](transport::InboundMad) {});
    port.send(o, request(1), sm(), std::chrono::milliseconds{200});
    port.send(o, request(2), sm(), std::chrono::milliseconds{200});
    CHECK(wire.sent.size() == 1);
    io.run_for(std::chrono::milliseconds{400});
    CHECK(wire.sent.size() == 2);
    CHECK(port.stats().expired >= 1);
}

TEST_CASE("node transport: answers to the node's requesters stay in-process, queries go upstream") {
    boost::asio::io_context io;
    test::FakeTransport wire;
    fleet::SharedPort port(io.get_executor(), wire, 8, std::chrono::milliseconds{1000});
    std::vector<std::uint16_t> delivered;
    auto st = wire.state;
    st.lid = 40;
    fleet::NodeTransport node(port, st, [&](mad::Bytes, const transport::MadAddress& to) {
        delivered.push_back(to.lid);
    });
    node.set_owner(port.add_owner([](transport::InboundMad) {}));
    transport::MadAddress requester;
    requester.lid = 40;
    auto answer = test::master_path_answer(request(5), 9);
    CHECK(node.send(answer, requester, std::chrono::milliseconds{0}));
    CHECK(delivered == std::vector<std::uint16_t>{40});
    CHECK(wire.sent.empty());
    CHECK(node.send(request(6), sm(), std::chrono::milliseconds{200}));
    CHECK(wire.sent.size() == 1);
    CHECK(node.port().lid == 40);
}
