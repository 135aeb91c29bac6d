// The netlink local path service: the messages against byte layouts built from the kernel's
// own uapi structs (rdma/rdma_netlink.h, rdma/ib_user_sa.h), and the service over the local SA
// and a fake transport (the master played by the test).
#include "fake_transport.hpp"

#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"
#include "engine/netlink/local_service.hpp"
#include "ib/response.hpp"
#include "transport/netlink/ls_message.hpp"
#include "transport/netlink/ls_socket.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <linux/netlink.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_netlink.h>
#include <set>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;
namespace nl = localsa::netlink;

static_assert(nl::kGroupLs == RDMA_NL_GROUP_LS);
static_assert(nl::kClientLs == RDMA_NL_LS);
static_assert(nl::kProtocolRdma == NETLINK_RDMA);
static_assert(nl::ls_type(nl::LsOp::Resolve) ==
              RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_RESOLVE));
static_assert(nl::ls_type(nl::LsOp::SetTimeout) ==
              RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_SET_TIMEOUT));
static_assert(nl::flag::kLsErr == RDMA_NL_LS_F_ERR);
static_assert(nl::kTypeError == NLMSG_ERROR);
static_assert(nl::attr::kMandatory == RDMA_NLA_F_MANDATORY);
static_assert(nl::attr::kPathRecord == LS_NLA_TYPE_PATH_RECORD);
static_assert(nl::attr::kTimeout == LS_NLA_TYPE_TIMEOUT);
static_assert(nl::attr::kServiceId == LS_NLA_TYPE_SERVICE_ID);
static_assert(nl::attr::kDgid == LS_NLA_TYPE_DGID && nl::attr::kSgid == LS_NLA_TYPE_SGID);
static_assert(nl::attr::kTclass == LS_NLA_TYPE_TCLASS && nl::attr::kPkey == LS_NLA_TYPE_PKEY);
static_assert(nl::attr::kQosClass == LS_NLA_TYPE_QOS_CLASS);
static_assert(nl::kResolveHeaderSize == NLMSG_ALIGN(sizeof(rdma_ls_resolve_header)));
static_assert(nl::kDeviceNameMax == LS_DEVICE_NAME_MAX);
static_assert(nl::kPathRecordDataSize == sizeof(ib_path_rec_data));
static_assert(nl::path_flag::kGmp == IB_PATH_GMP && nl::path_flag::kPrimary == IB_PATH_PRIMARY);
static_assert(nl::path_flag::kOutbound == IB_PATH_OUTBOUND &&
              nl::path_flag::kInbound == IB_PATH_INBOUND);
static_assert(nl::path_flag::kBidirectional == IB_PATH_BIDIRECTIONAL);
static_assert(static_cast<int>(nl::PathUse::All) == LS_RESOLVE_PATH_USE_ALL);
static_assert(static_cast<int>(nl::PathUse::Unidirectional) == LS_RESOLVE_PATH_USE_UNIDIRECTIONAL);

namespace {

// A RESOLVE as ib_nl_make_request builds it (ibnl_put_msg, ib_nl_set_path_rec_attrs).
class KernelResolve {
public:
    KernelResolve(std::uint32_t seq, const char* device, std::uint8_t port, std::uint8_t use)
        : bytes_(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(rdma_ls_resolve_header))) {
        auto* h = reinterpret_cast<nlmsghdr*>(bytes_.data());
        h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_RESOLVE);
        h->nlmsg_flags = NLM_F_REQUEST;
        h->nlmsg_seq = seq;
        auto* rh = reinterpret_cast<rdma_ls_resolve_header*>(bytes_.data() + NLMSG_HDRLEN);
        std::strncpy(reinterpret_cast<char*>(rh->device_name), device, LS_DEVICE_NAME_MAX);
        rh->port_num = port;
        rh->path_use = use;
    }
    // nla_put(skb, RDMA_NLA_F_MANDATORY | type, len, data)
    KernelResolve& put(std::uint16_t type, const void* data, std::size_t len,
                       std::uint16_t flags = RDMA_NLA_F_MANDATORY,
                       std::optional<std::uint16_t> claimed_len = std::nullopt) {
        const auto at = bytes_.size();
        bytes_.resize(at + NLA_ALIGN(NLA_HDRLEN + len), 0);
        auto* a = reinterpret_cast<nlattr*>(bytes_.data() + at);
        a->nla_len = claimed_len.value_or(static_cast<std::uint16_t>(NLA_HDRLEN + len));
        a->nla_type = static_cast<std::uint16_t>(flags | type);
        std::memcpy(bytes_.data() + at + NLA_HDRLEN, data, len);
        return *this;
    }
    std::vector<std::uint8_t> bytes() const {
        auto out = bytes_;
        reinterpret_cast<nlmsghdr*>(out.data())->nlmsg_len = static_cast<std::uint32_t>(out.size());
        return out;
    }

private:
    std::vector<std::uint8_t> bytes_;
};

const std::uint8_t kDgid[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0x05};
const std::uint8_t kSgid[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0x03};

// What rdma_cm's route query (cma_query_ib_route, AF_IB) puts in its RESOLVE.
KernelResolve rdma_cm_resolve(std::uint32_t seq, const char* device = "fake0", int port = 1) {
    const std::uint64_t sid = 0x0000000001060000ULL; // host order, as the kernel sends it
    const std::uint16_t pkey = 0xffff;
    KernelResolve r(seq, device, static_cast<std::uint8_t>(port), LS_RESOLVE_PATH_USE_ALL);
    r.put(LS_NLA_TYPE_SERVICE_ID, &sid, sizeof sid)
        .put(LS_NLA_TYPE_DGID, kDgid, 16)
        .put(LS_NLA_TYPE_SGID, kSgid, 16)
        .put(LS_NLA_TYPE_PKEY, &pkey, sizeof pkey);
    return r;
}

// The DGID of port GUID `guid` (the subnet prefix fe80::).
std::array<std::uint8_t, 16> dgid_of(std::uint64_t guid) {
    std::array<std::uint8_t, 16> g{};
    std::copy(kDgid, kDgid + 8, g.begin());
    for (int i = 0; i < 8; ++i)
        g[15 - i] = static_cast<std::uint8_t>(guid >> (8 * i));
    return g;
}

// rdma_cm's RESOLVE (rdma_cm_resolve) for another destination.
KernelResolve rdma_cm_resolve_to(std::uint32_t seq, const std::array<std::uint8_t, 16>& dgid) {
    const std::uint64_t sid = 0x0000000001060000ULL;
    const std::uint16_t pkey = 0xffff;
    KernelResolve r(seq, "fake0", 1, LS_RESOLVE_PATH_USE_ALL);
    r.put(LS_NLA_TYPE_SERVICE_ID, &sid, sizeof sid)
        .put(LS_NLA_TYPE_DGID, dgid.data(), 16)
        .put(LS_NLA_TYPE_SGID, kSgid, 16)
        .put(LS_NLA_TYPE_PKEY, &pkey, sizeof pkey);
    return r;
}

// What IPoIB's path query (path_rec_start) puts in its RESOLVE: no ServiceID, not reversible.
KernelResolve ipoib_resolve(std::uint32_t seq, std::uint64_t dguid) {
    const auto dgid = dgid_of(dguid);
    const std::uint8_t tclass = 0;
    const std::uint16_t pkey = 0xffff;
    KernelResolve r(seq, "fake0", 1, LS_RESOLVE_PATH_USE_UNIDIRECTIONAL);
    r.put(LS_NLA_TYPE_DGID, dgid.data(), 16)
        .put(LS_NLA_TYPE_SGID, kSgid, 16)
        .put(LS_NLA_TYPE_TCLASS, &tclass, 1)
        .put(LS_NLA_TYPE_PKEY, &pkey, sizeof pkey);
    return r;
}

nl::Message only_message(const std::vector<std::uint8_t>& datagram) {
    auto split = nl::split_messages(datagram);
    REQUIRE(split.error == nullptr);
    REQUIRE(split.messages.size() == 1);
    return split.messages[0];
}

} // namespace

TEST_CASE("a RESOLVE built from the kernel's structs decodes", "[netlink]") {
    const std::uint8_t tclass = 3;
    const std::uint16_t qos = 0x123;
    auto r = rdma_cm_resolve(77);
    r.put(LS_NLA_TYPE_TCLASS, &tclass, 1).put(LS_NLA_TYPE_QOS_CLASS, &qos, 2);
    const auto bytes = r.bytes();
    const auto d = nl::decode_resolve(only_message(bytes));
    REQUIRE(d.request);
    CHECK(d.request->seq == 77);
    CHECK(d.request->device == "fake0");
    CHECK(d.request->port == 1);
    CHECK(d.request->path_use == nl::PathUse::All);
    CHECK(d.request->service_id == 0x0000000001060000ULL);
    CHECK(std::memcmp(d.request->dgid->data(), kDgid, 16) == 0);
    CHECK(std::memcmp(d.request->sgid->data(), kSgid, 16) == 0);
    CHECK(d.request->pkey == 0xffff);
    CHECK(d.request->tclass == 3);
    CHECK(d.request->qos_class == 0x123);
}

TEST_CASE("malformed RESOLVEs are refused with a reason, unknown attributes skipped", "[netlink]") {
    SECTION("an unknown optional attribute is skipped, an unknown mandatory one refused") {
        const std::uint32_t x = 1;
        auto r = rdma_cm_resolve(1);
        r.put(LS_NLA_TYPE_IPV4, &x, 4, 0).put(0x1ff, &x, 4, 0);
        CHECK(nl::decode_resolve(only_message(r.bytes())).request);
        r.put(0x1fe, &x, 4); // as ib_sa sends its attributes: RDMA_NLA_F_MANDATORY
        CHECK(nl::decode_resolve(only_message(r.bytes())).error);
    }
    SECTION("a GID of the wrong length") {
        KernelResolve r(1, "fake0", 1, 0);
        r.put(LS_NLA_TYPE_DGID, kDgid, 15);
        CHECK(nl::decode_resolve(only_message(r.bytes())).error);
    }
    SECTION("an attribute claiming more than the message holds") {
        KernelResolve r(1, "fake0", 1, 0);
        r.put(LS_NLA_TYPE_DGID, kDgid, 16, RDMA_NLA_F_MANDATORY, 200);
        CHECK(nl::decode_resolve(only_message(r.bytes())).error);
    }
    SECTION("an attribute shorter than its header") {
        KernelResolve r(1, "fake0", 1, 0);
        r.put(LS_NLA_TYPE_DGID, kDgid, 16, RDMA_NLA_F_MANDATORY, 2);
        CHECK(nl::decode_resolve(only_message(r.bytes())).error);
    }
    SECTION("a truncated attribute header") {
        KernelResolve r(1, "fake0", 1, 0);
        r.put(LS_NLA_TYPE_DGID, kDgid, 16);
        auto b = r.bytes();
        b.resize(b.size() + 2);
        reinterpret_cast<nlmsghdr*>(b.data())->nlmsg_len = static_cast<std::uint32_t>(b.size());
        CHECK(nl::decode_resolve(only_message(b)).error);
    }
    SECTION("path_use out of range") {
        KernelResolve r(1, "fake0", 1, LS_RESOLVE_PATH_USE_MAX);
        r.put(LS_NLA_TYPE_DGID, kDgid, 16);
        CHECK(nl::decode_resolve(only_message(r.bytes())).error);
    }
    SECTION("no path attribute") {
        CHECK(nl::decode_resolve(only_message(KernelResolve(1, "fake0", 1, 0).bytes())).error);
    }
    SECTION("a device name without its terminator") {
        std::string name(LS_DEVICE_NAME_MAX, 'x');
        KernelResolve r(1, "", 1, 0);
        auto b = r.put(LS_NLA_TYPE_DGID, kDgid, 16).bytes();
        std::memcpy(b.data() + NLMSG_HDRLEN, name.data(), name.size());
        CHECK(nl::decode_resolve(only_message(b)).error);
    }
    SECTION("shorter than the family header") {
        auto b = rdma_cm_resolve(1).bytes();
        b.resize(NLMSG_HDRLEN + 10);
        reinterpret_cast<nlmsghdr*>(b.data())->nlmsg_len = static_cast<std::uint32_t>(b.size());
        CHECK(nl::decode_resolve(only_message(b)).error);
    }
    SECTION("a reply (no NLM_F_REQUEST) or another op") {
        auto b = rdma_cm_resolve(1).bytes();
        reinterpret_cast<nlmsghdr*>(b.data())->nlmsg_flags = 0;
        CHECK(nl::decode_resolve(only_message(b)).error);
        reinterpret_cast<nlmsghdr*>(b.data())->nlmsg_type =
            RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_IP_RESOLVE);
        CHECK(nl::decode_resolve(only_message(b)).error);
    }
    SECTION("a message length past the datagram, or a truncated header") {
        auto b = rdma_cm_resolve(1).bytes();
        reinterpret_cast<nlmsghdr*>(b.data())->nlmsg_len = static_cast<std::uint32_t>(b.size() + 4);
        auto split = nl::split_messages(b);
        CHECK(split.messages.empty());
        CHECK(split.error);
        b.resize(10);
        CHECK(nl::split_messages(b).error);
    }
    SECTION("two messages in one datagram") {
        auto b = rdma_cm_resolve(1).bytes();
        const auto second = rdma_cm_resolve(2).bytes();
        b.insert(b.end(), second.begin(), second.end());
        auto split = nl::split_messages(b);
        CHECK(!split.error);
        REQUIRE(split.messages.size() == 2);
        CHECK(split.messages[1].seq == 2);
    }
}

TEST_CASE("replies have the layout ib_nl_handle_resolve_resp reads", "[netlink]") {
    nl::PathRecordData rec;
    rec.flags = nl::path_flags(nl::PathUse::All, true);
    for (std::size_t i = 0; i < rec.record.size(); ++i)
        rec.record[i] = static_cast<std::uint8_t>(i);
    const std::vector<nl::PathRecordData> four(4, rec);
    const auto b = nl::encode_resolve_reply(9, four);
    const auto* h = reinterpret_cast<const nlmsghdr*>(b.data());
    CHECK(h->nlmsg_len == b.size());
    CHECK(h->nlmsg_type == RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_RESOLVE));
    CHECK(h->nlmsg_seq == 9);
    CHECK((h->nlmsg_flags & NLM_F_REQUEST) == 0);
    CHECK((h->nlmsg_flags & RDMA_NL_LS_F_ERR) == 0);
    // no family header: the attributes start at nlmsg_data; at most 3 (the kernel's limit)
    std::size_t at = NLMSG_HDRLEN, n = 0;
    while (at < b.size()) {
        const auto* a = reinterpret_cast<const nlattr*>(b.data() + at);
        CHECK(a->nla_type == LS_NLA_TYPE_PATH_RECORD); // compared raw by the kernel
        CHECK(a->nla_len == NLA_HDRLEN + sizeof(ib_path_rec_data));
        const auto* d = reinterpret_cast<const ib_path_rec_data*>(b.data() + at + NLA_HDRLEN);
        CHECK(d->flags == (IB_PATH_PRIMARY | IB_PATH_GMP | IB_PATH_BIDIRECTIONAL));
        CHECK(std::memcmp(d->path_rec, rec.record.data(), 64) == 0);
        at += NLA_ALIGN(a->nla_len);
        ++n;
    }
    CHECK(n == 3);

    const auto e = nl::encode_resolve_error(11);
    const auto* eh = reinterpret_cast<const nlmsghdr*>(e.data());
    CHECK(e.size() == NLMSG_HDRLEN);
    CHECK(eh->nlmsg_len == NLMSG_HDRLEN);
    CHECK(eh->nlmsg_flags == RDMA_NL_LS_F_ERR);
    CHECK(eh->nlmsg_seq == 11);

    const auto t = nl::encode_set_timeout(3, 800);
    const auto* th = reinterpret_cast<const nlmsghdr*>(t.data());
    CHECK(th->nlmsg_type == RDMA_NL_GET_TYPE(RDMA_NL_LS, RDMA_NL_LS_OP_SET_TIMEOUT));
    CHECK(th->nlmsg_flags == NLM_F_REQUEST);
    CHECK(th->nlmsg_len == NLMSG_HDRLEN + NLA_HDRLEN + 4);
    const auto* ta = reinterpret_cast<const nlattr*>(t.data() + NLMSG_HDRLEN);
    CHECK(ta->nla_type == LS_NLA_TYPE_TIMEOUT);
    std::uint32_t ms = 0;
    std::memcpy(&ms, t.data() + NLMSG_HDRLEN + NLA_HDRLEN, 4);
    CHECK(ms == 800);
}

TEST_CASE("path flags are those the kernel's mask takes", "[netlink]") {
    using nl::PathUse;
    // ib_nl_process_good_resolve_rsp: UNIDIRECTIONAL needs PRIMARY|OUTBOUND, ALL PRIMARY (in
    // 6.1 and 6.12 alike; tests/kernel/ls_flags_test.cpp judges these against that code itself)
    CHECK(nl::kernel_accepts(PathUse::All, nl::path_flags(PathUse::All, true)));
    CHECK(
        nl::kernel_accepts(PathUse::Unidirectional, nl::path_flags(PathUse::Unidirectional, true)));
    CHECK(nl::kernel_accepts(PathUse::Unidirectional,
                             nl::path_flags(PathUse::Unidirectional, false)));
    CHECK(nl::kernel_accepts(PathUse::Gmp, nl::path_flags(PathUse::Gmp, true)));
    CHECK(!nl::kernel_accepts(PathUse::Gmp, nl::path_flags(PathUse::Gmp, false)));
    CHECK(!nl::kernel_accepts(PathUse::All, IB_PATH_OUTBOUND));
    // rdma_cm (cma_query_handler) takes a record with GMP as its path
    CHECK((nl::path_flags(PathUse::All, true) & IB_PATH_GMP));
}

TEST_CASE("SET_TIMEOUT is the answer budget plus a margin, within the kernel's bounds",
          "[netlink]") {
    nl::LocalServiceConfig c;
    CHECK(c.kernel_timeout_ms() == 800);
    c.answer_budget = 10ms;
    c.kernel_margin = 0ms;
    CHECK(c.kernel_timeout_ms() == 100);
    c.answer_budget = std::chrono::hours{1};
    CHECK(c.kernel_timeout_ms() == 200'000);
}

namespace {

struct ServiceFixture {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport umad;
    nl::LocalServiceConfig nl_config;
    std::unique_ptr<nl::LocalService> service;
    std::unique_ptr<LocalSa> sa;
    std::vector<std::vector<std::uint8_t>> to_kernel;
    bool other_port_served = false;

    explicit ServiceFixture(std::chrono::milliseconds budget = 100ms,
                            const LocalSaConfig& sa_config = {}) {
        nl_config.answer_budget = budget;
        service = std::make_unique<nl::LocalService>(io.get_executor(), clock, umad, nl_config);
        sa = std::make_unique<LocalSa>(io.get_executor(), clock, *service, sa_config);
        service->connect(
            [this](nl::Bytes m) {
                to_kernel.emplace_back(m.begin(), m.end());
                return true;
            },
            [this](const transport::InboundMad& in) { sa->dispatch(in); },
            [this](const std::string&, int) { return other_port_served; }, sa->counters());
    }
    void kernel_sends(const std::vector<std::uint8_t>& datagram) {
        for (const auto& m : nl::split_messages(datagram).messages)
            service->on_message(m);
    }
    std::vector<std::vector<std::uint8_t>> take_kernel() { return std::exchange(to_kernel, {}); }
};

} // namespace

TEST_CASE("a RESOLVE is the Get ib_sa would send, answered with the master's record", "[netlink]") {
    ServiceFixture f;
    f.kernel_sends(rdma_cm_resolve(41).bytes());
    auto up = f.umad.take();
    REQUIRE(up.size() == 1);
    CHECK(up[0].to.lid == kSmLid);
    // The Get rdma_cm's ib_sa_path_rec_get would have sent (cma_query_ib_route, AF_IB):
    // DGID, SGID, PKey, NumbPath 1, Reversible 1, ServiceID, with the TID of the master.
    mad::SaMad expected;
    expected.header.method = mad::method::kGet;
    expected.header.attr_id = mad::attr::kPathRecord;
    sa::PathRecord pr;
    std::copy(kDgid, kDgid + 16, pr.dgid.raw.begin());
    std::copy(kSgid, kSgid + 16, pr.sgid.raw.begin());
    pr.service_id = 0x0000000001060000ULL;
    pr.pkey = 0xffff;
    pr.numb_path = 1;
    pr.reversible = true;
    expected.comp_mask = sa::pr_mask::kDgid | sa::pr_mask::kSgid | sa::pr_mask::kPKey |
                         sa::pr_mask::kNumbPath | sa::pr_mask::kReversible |
                         sa::pr_mask::kServiceId;
    pr.pack(expected.data);
    const auto want = expected.pack();
    REQUIRE(up[0].bytes.size() == want.size());
    CHECK(std::equal(want.begin() + 16, want.end(), up[0].bytes.begin() + 16)); // but the TID
    CHECK(f.take_kernel().empty()); // nothing before the master answers

    const auto master = master_path_answer(up[0].bytes, 8);
    f.sa->dispatch(from_lid(kSmLid, master));
    auto replies = f.take_kernel();
    REQUIRE(replies.size() == 1);
    const auto reply = only_message(replies[0]);
    CHECK(reply.seq == 41);
    CHECK(reply.flags == 0);
    REQUIRE(reply.payload.size() == NLA_HDRLEN + sizeof(ib_path_rec_data));
    const auto* d = reinterpret_cast<const ib_path_rec_data*>(reply.payload.data() + NLA_HDRLEN);
    CHECK(d->flags == (IB_PATH_PRIMARY | IB_PATH_GMP | IB_PATH_BIDIRECTIONAL));
    // byte for byte the master's record
    CHECK(std::memcmp(d->path_rec, master.data() + mad::kSaHeaderSize, 64) == 0);
    CHECK(f.sa->counters().nl_resolves == 1);
    CHECK(f.sa->counters().nl_answered == 1);

    // again: from the cache, the master not asked
    f.kernel_sends(rdma_cm_resolve(42).bytes());
    CHECK(f.umad.take().empty());
    replies = f.take_kernel();
    REQUIRE(replies.size() == 1);
    CHECK(only_message(replies[0]).seq == 42);
    CHECK(std::memcmp(only_message(replies[0]).payload.data() + NLA_HDRLEN + 8,
                      master.data() + mad::kSaHeaderSize, 64) == 0);
    CHECK(f.sa->counters().pr_cache_hits == 1);
    CHECK(f.sa->counters().nl_answered == 2);
    CHECK(f.service->pending() == 0);
}

TEST_CASE("another listener's replies are noticed, never answered", "[netlink]") {
    ServiceFixture f;
    auto b = rdma_cm_resolve(7).bytes();
    reinterpret_cast<nlmsghdr*>(b.data())->nlmsg_flags = 0; // a reply, as ibacm multicasts it
    auto m = only_message(b);
    m.sender = 4242;
    f.service->on_message(m);
    m.flags = NLM_F_REQUEST; // nor a request from anyone but the kernel
    f.service->on_message(m);
    CHECK(f.take_kernel().empty());
    CHECK(f.umad.take().empty());
    CHECK(f.sa->counters().nl_foreign_replies == 1);
    CHECK(f.sa->counters().nl_resolves == 0);
}

TEST_CASE("what cannot be answered gets the error reply at once", "[netlink]") {
    ServiceFixture f;
    const auto is_error = [](const std::vector<std::uint8_t>& b, std::uint32_t seq) {
        const auto m = only_message(b);
        return m.seq == seq && m.flags == RDMA_NL_LS_F_ERR && m.payload.empty();
    };
    SECTION("another device or port, served by no local SA") {
        f.kernel_sends(rdma_cm_resolve(5, "mlx5_0").bytes());
        f.kernel_sends(rdma_cm_resolve(6, "fake0", 2).bytes());
        auto r = f.take_kernel();
        REQUIRE(r.size() == 2);
        CHECK(is_error(r[0], 5));
        CHECK(is_error(r[1], 6));
        CHECK(f.umad.take().empty());
        CHECK(f.sa->counters().nl_errors == 2);
    }
    SECTION("another port a local SA serves: left to it") {
        f.other_port_served = true;
        f.kernel_sends(rdma_cm_resolve(5, "fake0", 2).bytes());
        CHECK(f.take_kernel().empty());
        CHECK(f.sa->counters().nl_other_port == 1);
    }
    SECTION("a malformed RESOLVE") {
        KernelResolve r(8, "fake0", 1, 0);
        r.put(LS_NLA_TYPE_DGID, kDgid, 12);
        f.kernel_sends(r.bytes());
        auto out = f.take_kernel();
        REQUIRE(out.size() == 1);
        CHECK(is_error(out[0], 8));
        CHECK(f.sa->counters().nl_malformed == 1);
    }
    SECTION("the port is not active") {
        f.umad.state.state = 1;
        f.kernel_sends(rdma_cm_resolve(3).bytes());
        auto out = f.take_kernel();
        REQUIRE(out.size() == 1);
        CHECK(is_error(out[0], 3));
    }
    SECTION("the master answers NO_RECORDS: the kernel asks the SA itself") {
        f.kernel_sends(rdma_cm_resolve(4).bytes());
        auto up = f.umad.take();
        REQUIRE(up.size() == 1);
        f.sa->dispatch(
            from_lid(kSmLid, master_status_answer(up[0].bytes, mad::status::kSaNoRecords)));
        auto out = f.take_kernel();
        REQUIRE(out.size() == 1);
        CHECK(is_error(out[0], 4));
    }
    SECTION("no answer within the budget") {
        f.kernel_sends(rdma_cm_resolve(12).bytes());
        REQUIRE(f.umad.take().size() == 1);
        f.clock.advance(f.nl_config.answer_budget + 50ms);
        auto out = f.take_kernel();
        REQUIRE(out.size() == 1);
        CHECK(is_error(out[0], 12));
        CHECK(f.sa->counters().nl_timeouts == 1);
        CHECK(f.service->pending() == 0);
    }
}

TEST_CASE("a unidirectional RESOLVE asks no reversible path", "[netlink]") {
    nl::ResolveRequest r;
    r.dgid = nl::GidBytes{};
    r.path_use = nl::PathUse::Unidirectional;
    r.tclass = 5;
    r.qos_class = 0x2a;
    const auto q = nl::rebuild_query(r, 1);
    const auto mask = mad::load_be64(q, mad::offset::kCompMask);
    CHECK(mask == (sa::pr_mask::kDgid | sa::pr_mask::kNumbPath | sa::pr_mask::kTClass |
                   sa::pr_mask::kQosClass));
    const auto pr = sa::PathRecord::unpack(mad::Bytes{q}.subspan(mad::kSaHeaderSize));
    CHECK(!pr.reversible);
    CHECK(pr.numb_path == 1);
    CHECK(pr.tclass == 5);
    CHECK(pr.qos_class == 0x2a);
}

TEST_CASE("the answer to a query asked before a LID change still reaches the kernel", "[netlink]") {
    ServiceFixture f;
    f.kernel_sends(rdma_cm_resolve(51).bytes());
    auto up = f.umad.take();
    REQUIRE(up.size() == 1);
    f.umad.state.lid = kOwnLid + 100;
    f.sa->dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    auto replies = f.take_kernel();
    REQUIRE(replies.size() == 1);
    CHECK(only_message(replies[0]).seq == 51);
    CHECK(only_message(replies[0]).flags == 0);
    CHECK(f.umad.take().empty()); // nothing went to the port as a stray MAD
}

TEST_CASE("other members of RDMA_NL_GROUP_LS are read from /proc/net/netlink", "[netlink]") {
    const std::string path = "/tmp/localsa-unit-proc-net-netlink";
    {
        std::ofstream out(path);
        out << "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    "
               "Inode\n"
            // ours, an ibacm-like member, a member of another RDMA group, a member of group 3 of
            // another protocol, the kernel's own socket (port ids above pid_max: no process)
            << "0000000000000001 20  3000000000 00000004 0        0        0     2        0        "
               "1\n"
            << "0000000000000002 20  3000000001 00000004 0        0        0     2        0        "
               "2\n"
            << "0000000000000003 20  3000000002 00000002 0        0        0     2        0        "
               "3\n"
            << "0000000000000004 0   3000000003 00000004 0        0        0     2        0        "
               "4\n"
            << "0000000000000005 20  0          00000000 0        0        0     2        0        "
               "5\n";
    }
    CHECK(nl::other_ls_listeners(3000000000u, path.c_str()) == 1);
    CHECK(nl::other_ls_listeners(3000000001u, path.c_str()) == 1);
    CHECK(nl::other_ls_listeners(9999, path.c_str()) == 2);
    CHECK(nl::other_ls_listeners(3000000000u, "/nonexistent") == 0);
    std::remove(path.c_str());
}

TEST_CASE("a message the kernel refused is counted and said", "[netlink]") {
    ServiceFixture f;
    // NLMSG_ERROR: errno -EPERM, then the refused message's header
    std::vector<std::uint8_t> b(NLMSG_HDRLEN + sizeof(nlmsgerr));
    auto* h = reinterpret_cast<nlmsghdr*>(b.data());
    h->nlmsg_len = static_cast<std::uint32_t>(b.size());
    h->nlmsg_type = NLMSG_ERROR;
    h->nlmsg_seq = 3;
    reinterpret_cast<nlmsgerr*>(b.data() + NLMSG_HDRLEN)->error = -EPERM;
    f.kernel_sends(b);
    CHECK(f.sa->counters().send_errors == 1);
    CHECK(f.take_kernel().empty());
    reinterpret_cast<nlmsgerr*>(b.data() + NLMSG_HDRLEN)->error = 0; // an ack: nothing to say
    f.kernel_sends(b);
    CHECK(f.sa->counters().send_errors == 1);
    // Not an errno the kernel sends, but bytes off a socket: said, never negated into overflow.
    for (const std::int32_t odd : {std::numeric_limits<std::int32_t>::min(), 5}) {
        reinterpret_cast<nlmsgerr*>(b.data() + NLMSG_HDRLEN)->error = odd;
        f.kernel_sends(b);
    }
    CHECK(f.sa->counters().send_errors == 3);
}

TEST_CASE("another port's local SA counts only while it listens on its control socket",
          "[netlink]") {
    const std::string path = "/tmp/localsa-unit-sibling-" + std::to_string(::getpid()) + ".sock";
    ::unlink(path.c_str());
    CHECK(!nl::unix_socket_listening(path)); // no file
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    CHECK(nl::unix_socket_listening(path)); // a live sibling
    // Its backlog full (a sibling busy on its event loop): still alive.
    const int c1 = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    const int c2 = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(c1, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::connect(c2, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    CHECK(nl::unix_socket_listening(path));
    ::close(c1);
    ::close(c2);
    // Killed (SIGKILL, or an unlink refused at exit): the file stays, nobody listens.
    ::close(fd);
    CHECK(nl::unix_socket_listening(path) == false);
    ::unlink(path.c_str());
}

TEST_CASE("a burst of one question: one query to the master, every RESOLVE answered", "[netlink]") {
    // 300 kernel path queries to one cold destination (issue 26): beyond the local SA's 256
    // waiters on one question nothing was answered, and each of those went to the master
    // after the kernel's timeout.
    ServiceFixture f;
    constexpr std::uint32_t kBurst = 300;
    for (std::uint32_t seq = 1; seq <= kBurst; ++seq)
        f.kernel_sends(rdma_cm_resolve(seq).bytes());
    auto up = f.umad.take();
    REQUIRE(up.size() == 1);
    CHECK(f.take_kernel().empty());
    f.sa->dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    auto replies = f.take_kernel();
    REQUIRE(replies.size() == kBurst);
    std::set<std::uint32_t> seqs;
    for (const auto& r : replies) {
        const auto m = only_message(r);
        CHECK(m.flags == 0);
        CHECK(m.payload.size() == NLA_HDRLEN + sizeof(ib_path_rec_data));
        seqs.insert(m.seq);
    }
    CHECK(seqs.size() == kBurst);
    CHECK(f.sa->counters().nl_answered == kBurst);
    CHECK(f.sa->counters().pr_waiters_overflow == 0);
    CHECK(f.service->pending() == 0);
    CHECK(f.umad.take().empty());
}

TEST_CASE("a burst the master does not answer: every RESOLVE gets the error reply at the budget",
          "[netlink]") {
    ServiceFixture f;
    for (std::uint32_t seq = 1; seq <= 300; ++seq)
        f.kernel_sends(rdma_cm_resolve(seq).bytes());
    REQUIRE(f.umad.take().size() == 1);
    f.clock.advance(f.nl_config.answer_budget + 10ms);
    auto replies = f.take_kernel();
    CHECK(replies.size() == 300);
    for (const auto& r : replies)
        CHECK(only_message(r).flags == RDMA_NL_LS_F_ERR);
    CHECK(f.service->pending() == 0);
}

// Issue 26, item 6: a RESOLVE the local SA gives up on (no query possible, no room to wait, its
// requester's deadline passed) gets the error reply then, not at the budget: the kernel sends
// the MAD to the SA at once. A MAD requester given up on the same way hears nothing, as from
// the master, and retries.
namespace {

// The daemon's budget by default (3 tries of 200 ms): longer than the requester deadline.
constexpr auto kBudget = 600ms;

bool is_error_reply(const std::vector<std::uint8_t>& b, std::uint32_t seq) {
    const auto m = only_message(b);
    return m.seq == seq && m.flags == RDMA_NL_LS_F_ERR && m.payload.empty();
}

bool is_records_reply(const std::vector<std::uint8_t>& b, std::uint32_t seq) {
    const auto m = only_message(b);
    return m.seq == seq && m.flags == 0 && !m.payload.empty();
}

// One query in flight to the master, `queued` more behind it.
LocalSaConfig one_in_flight(std::size_t queued) {
    LocalSaConfig c;
    c.upstream.max_outstanding = 1;
    c.upstream.max_queued = queued;
    return c;
}

std::size_t sent_to(const std::vector<SentMad>& sent, std::uint16_t lid) {
    return static_cast<std::size_t>(std::count_if(
        sent.begin(), sent.end(), [lid](const SentMad& s) { return s.to.lid == lid; }));
}

} // namespace

TEST_CASE("give-up: a RESOLVE whose Get the full upstream queue refuses gets the error at once",
          "[netlink][giveup]") {
    ServiceFixture f(kBudget, one_in_flight(0));
    f.kernel_sends(rdma_cm_resolve_to(1, dgid_of(0x100005)).bytes());
    REQUIRE(f.umad.take().size() == 1);
    f.kernel_sends(rdma_cm_resolve_to(2, dgid_of(0x100007)).bytes()); // no room behind it
    CHECK(f.sa->counters().upstream_overflow == 1);
    auto out = f.take_kernel();
    REQUIRE(out.size() == 1);
    CHECK(is_error_reply(out[0], 2));
    CHECK(f.sa->counters().nl_given_up == 1);
    CHECK(f.service->pending() == 1);
    // A MAD requester refused the same way hears nothing.
    f.sa->dispatch(from_lid(kOwnLid, path_request(0x77, 0x100009)));
    CHECK(f.sa->counters().upstream_overflow == 2);
    CHECK(f.umad.take().empty());
    CHECK(f.take_kernel().empty());
}

TEST_CASE("give-up: a RESOLVE while the port knows no master gets the error at once",
          "[netlink][giveup]") {
    ServiceFixture f(kBudget);
    f.umad.state.sm_lid = 0;
    SECTION("a Get the local SA reads through") {
        f.kernel_sends(rdma_cm_resolve(1).bytes());
    }
    SECTION("a Get to a multicast DGID, which the local SA relays") {
        auto mgid = dgid_of(0x1234);
        mgid[0] = 0xff;
        mgid[1] = 0x12;
        f.kernel_sends(rdma_cm_resolve_to(1, mgid).bytes());
        CHECK(f.sa->counters().pr_forwarded == 1);
    }
    auto out = f.take_kernel();
    REQUIRE(out.size() == 1);
    CHECK(is_error_reply(out[0], 1));
    CHECK(f.service->pending() == 0);
    f.sa->dispatch(from_lid(kOwnLid, path_request(0x77, 0x100009)));
    CHECK(f.umad.take().empty());
    CHECK(f.take_kernel().empty());
}

TEST_CASE("give-up: a RESOLVE the dispatcher refuses gets the error at once", "[netlink][giveup]") {
    ServiceFixture f(kBudget);
    f.umad.state.lid = 0; // ACTIVE, its LID not read yet: the request is not this port's
    f.kernel_sends(rdma_cm_resolve(1).bytes());
    CHECK(f.sa->counters().foreign_requests == 1);
    auto out = f.take_kernel();
    REQUIRE(out.size() == 1);
    CHECK(is_error_reply(out[0], 1));
    CHECK(f.service->pending() == 0);
}

TEST_CASE("give-up: the RESOLVE beyond the local SA's waiters on one question gets the error at "
          "once",
          "[netlink][giveup]") {
    ServiceFixture f(kBudget);
    const auto resolve = rdma_cm_resolve(1000).bytes();
    const auto request = *nl::decode_resolve(only_message(resolve)).request;
    // The port's kernel asks the same path by MAD as well (sa_redirect): the local SA's bound of
    // requesters waiting on one question is reached.
    for (std::uint64_t tid = 1; tid <= sa::PathRecordService::kMaxWaitersPerQuestion; ++tid)
        f.sa->dispatch(from_lid(kOwnLid, nl::rebuild_query(request, tid)));
    auto up = f.umad.take();
    REQUIRE(up.size() == 1);
    f.kernel_sends(resolve);
    CHECK(f.sa->counters().pr_waiters_overflow == 1);
    auto out = f.take_kernel();
    REQUIRE(out.size() == 1);
    CHECK(is_error_reply(out[0], 1000));
    CHECK(f.service->pending() == 0);
    // A MAD requester beyond the bound hears nothing.
    f.sa->dispatch(from_lid(kOwnLid, nl::rebuild_query(request, 9999)));
    CHECK(f.sa->counters().pr_waiters_overflow == 2);
    CHECK(f.umad.take().empty());
    CHECK(f.take_kernel().empty());
    // The master's answer reaches the requesters that waited, and nothing more to the kernel.
    f.sa->dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    CHECK(sent_to(f.umad.take(), kOwnLid) == sa::PathRecordService::kMaxWaitersPerQuestion);
    CHECK(f.take_kernel().empty());
}

TEST_CASE("give-up: a RESOLVE whose Get expires queued at the requester's deadline gets the "
          "error then",
          "[netlink][giveup]") {
    ServiceFixture f(kBudget, one_in_flight(16));
    f.kernel_sends(rdma_cm_resolve_to(1, dgid_of(0x100005)).bytes());
    auto up = f.umad.take();
    REQUIRE(up.size() == 1);
    f.kernel_sends(rdma_cm_resolve_to(2, dgid_of(0x100007)).bytes()); // queued behind it
    f.sa->dispatch(from_lid(kOwnLid, path_request(0x77, 0x100009)));  // a MAD requester too
    CHECK(f.umad.take().empty());
    // Past the requester deadline (200 ms), within the budget: the first query is answered,
    // and the queue finds the others' requesters gone.
    f.clock.advance(300ms);
    CHECK(f.take_kernel().empty());
    f.sa->dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    CHECK(f.sa->counters().upstream_expired == 2);
    auto out = f.take_kernel();
    REQUIRE(out.size() == 2);
    CHECK(is_records_reply(out[0], 1));
    CHECK(is_error_reply(out[1], 2));
    CHECK(f.service->pending() == 0);
    CHECK(f.umad.take().empty()); // nothing to the master, nothing to the MAD requester
}

TEST_CASE("give-up: RESOLVEs held for a burst and released past their deadline get the error "
          "then",
          "[netlink][giveup][burst]") {
    ServiceFixture f(kBudget);
    // Above --preload-max-ports (10) on a fabric of 100 ports: a burst is 50 distinct misses.
    coherence::CoherenceConfig cc;
    cc.spread = 0ms;
    cc.subscribe = false;
    cc.subscription_check = 0ms;
    cc.preload_max_ports = 10;
    cc.fabric_ports = 100;
    cc.master_capacity = 100'000'000; // takes every table at once: no pacing
    coherence::Coherence coh(f.io.get_executor(), f.sa->coherence_parts(), cc);
    coh.start();
    f.clock.advance(10ms);
    f.umad.take();
    REQUIRE(f.sa->path_records().miss_burst().threshold == 50);
    // IPoIB on a job start: 60 destinations at once, held for the partition's table.
    constexpr std::uint32_t kMisses = 60;
    for (std::uint32_t i = 0; i < kMisses; ++i)
        f.kernel_sends(ipoib_resolve(1 + i, 0x200000 + i).bytes());
    f.clock.advance(5ms);
    auto sent = f.umad.take();
    REQUIRE(sent.size() == 1);
    REQUIRE(sent[0].bytes[mad::offset::kMethod] == mad::method::kGetTable);
    CHECK(f.sa->counters().burst_held == kMisses);
    // The table does not come (an error past the requester deadline): the misses are released,
    // none is sent, and the kernel asks the SA for each at once.
    f.clock.advance(300ms);
    CHECK(f.take_kernel().empty());
    f.sa->dispatch(
        from_lid(kSmLid, master_status_answer(sent[0].bytes, mad::status::kSaNoResources)));
    CHECK(f.sa->path_records().burst_held() == 0);
    // (The start's own queries, ClassPortInfo and the epoch's read, come at random points of
    // its window: only PathRecords count here.)
    const auto after = f.umad.take();
    CHECK(std::none_of(after.begin(), after.end(), [](const auto& m) {
        return mad::load_be16(m.bytes, 16) == mad::attr::kPathRecord;
    }));
    auto out = f.take_kernel();
    REQUIRE(out.size() == kMisses);
    std::set<std::uint32_t> seqs;
    for (const auto& r : out) {
        CHECK(only_message(r).flags == RDMA_NL_LS_F_ERR);
        seqs.insert(only_message(r).seq);
    }
    CHECK(seqs.size() == kMisses);
    CHECK(f.sa->counters().nl_given_up == kMisses);
    CHECK(f.sa->counters().nl_timeouts == 0);
    CHECK(f.service->pending() == 0);
}

TEST_CASE("the RESOLVE beyond the service's own bound on one question gets the error at once",
          "[netlink][giveup]") {
    ServiceFixture f(kBudget);
    constexpr auto kMax = static_cast<std::uint32_t>(nl::LocalService::kMaxWaitingPerQuestion);
    for (std::uint32_t seq = 1; seq <= kMax; ++seq)
        f.kernel_sends(rdma_cm_resolve(seq).bytes());
    auto up = f.umad.take();
    REQUIRE(up.size() == 1);
    CHECK(f.take_kernel().empty());
    CHECK(f.service->pending() == kMax);
    f.kernel_sends(rdma_cm_resolve(kMax + 1).bytes());
    auto out = f.take_kernel();
    REQUIRE(out.size() == 1);
    CHECK(is_error_reply(out[0], kMax + 1));
    f.sa->dispatch(from_lid(kSmLid, master_path_answer(up[0].bytes, 8)));
    CHECK(f.take_kernel().size() == kMax);
    CHECK(f.sa->counters().nl_answered == kMax);
    CHECK(f.service->pending() == 0);
}
