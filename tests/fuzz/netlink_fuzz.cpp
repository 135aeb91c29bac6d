// libFuzzer target: the netlink local path service's decoder and the service behind it, on
// datagrams of any bytes and length (truncated and oversized attributes, unknown ops and types,
// wrong lengths, several messages in one datagram). Beyond "no crash, no sanitizer report" it
// checks the service's contract: every RESOLVE the kernel could have sent gets exactly one
// reply at once (an error) or waits for the local SA (which asks the master at most once; the
// same question in flight is shared), and never anything else; every reply is one well-formed
// message with the request's sequence number.
#include "fuzz_check.hpp"

#include "fake_transport.hpp"

#include "engine/local_sa.hpp"
#include "engine/netlink/local_service.hpp"
#include "transport/netlink/ls_message.hpp"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>

using namespace localsa;
namespace nl = localsa::netlink;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const nl::Bytes datagram{data, size};
    const auto split = nl::split_messages(datagram);
    std::size_t covered = 0;
    for (const auto& m : split.messages) {
        FUZZ_CHECK(m.payload.data() >= data && m.payload.data() + m.payload.size() <= data + size);
        covered += nl::kHeaderSize + m.payload.size();
        const auto d = nl::decode_resolve(m);
        FUZZ_CHECK(d.request.has_value() != (d.error != nullptr));
        if (d.request) {
            FUZZ_CHECK(d.request->device.size() < nl::kDeviceNameMax);
            const auto q = nl::rebuild_query(*d.request, 1);
            FUZZ_CHECK(q.size() == mad::kMadSize);
        }
    }
    FUZZ_CHECK(covered <= size);
    FUZZ_CHECK(split.error || split.messages.empty() == (size == 0) || size < nl::kHeaderSize);

    boost::asio::io_context io;
    test::FakeTransport umad;
    SteadyClock clock;
    nl::LocalService service(io.get_executor(), clock, umad, nl::LocalServiceConfig{});
    LocalSa sa(io.get_executor(), clock, service, LocalSaConfig{});
    std::vector<std::vector<std::uint8_t>> replies;
    service.connect(
        [&](nl::Bytes r) {
            replies.emplace_back(r.begin(), r.end());
            return true;
        },
        [&](const transport::InboundMad& in) { sa.dispatch(in); },
        [](const std::string& device, int) { return device == "other0"; }, sa.counters());
    for (const auto& m : split.messages) {
        replies.clear();
        const auto before_other = sa.counters().nl_other_port;
        const auto before_pending = service.pending();
        service.on_message(m);
        const auto upstream = umad.take();
        const bool kernel_request =
            m.type == nl::ls_type(nl::LsOp::Resolve) && (m.flags & nl::flag::kRequest);
        if (!kernel_request) {
            FUZZ_CHECK(replies.empty() && upstream.empty() && service.pending() == before_pending);
            continue;
        }
        const bool left_to_other = sa.counters().nl_other_port != before_other;
        const bool waiting = service.pending() > before_pending;
        // one outcome: a reply now, waiting for the local SA (which asked the master at most
        // once: the same question in flight is shared), or left to another port's SA
        FUZZ_CHECK(replies.size() + (waiting ? 1 : 0) + (left_to_other ? 1 : 0) == 1);
        FUZZ_CHECK(upstream.size() <= (waiting ? 1u : 0u));
        for (const auto& r : replies) {
            const auto back = nl::split_messages(r);
            FUZZ_CHECK(!back.error && back.messages.size() == 1);
            FUZZ_CHECK(back.messages[0].seq == m.seq);
            // nothing answered yet by the master here: only error replies
            FUZZ_CHECK(back.messages[0].flags == nl::flag::kLsErr);
            FUZZ_CHECK(back.messages[0].payload.empty());
        }
    }
    return 0;
}
