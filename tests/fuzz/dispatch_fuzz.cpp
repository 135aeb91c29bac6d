// libFuzzer target: the whole dispatcher. The input is a small configuration and a sequence of
// operations (requests from various LIDs built from templates and patched, the master's answers
// to what the daemon sent it, raw MADs, failed sends, port changes, refreshes, timer runs), fed
// to LocalSa::dispatch over the fake transport. After every operation the invariants below are
// checked on everything the daemon sent and on its internal bounds.
//
// With a Coherence on the LocalSa (configuration flag 128) clients' event subscriptions are
// fuzzed too: InformInfo Sets from clients (QPN 1 and several QPNs > 1, various traps and
// filters, Subscribe 0/1/2+), the master's answers to the Sets localsad sends it, Reports from
// the master (resends with the same TID), ReportResp from the clients, resyncs. At the end of
// such an input the master answers everything, the clients acknowledge every Report, then every
// client unsubscribes, and the end state is checked.
//
// Invariants:
//  - every MAD handed to the transport is at least an SA header (56 bytes) long;
//  - a response goes to an address that sent a request, with the TID of one of its requests;
//    at most one InformInfo answer per InformInfo request (same address and TID);
//  - a request goes to the current SM LID only, never to LID 0 (no SM), in the SA class, with
//    SM_Key 0 or an SM_Key some requester sent (the daemon never makes one up); or it is a
//    Report(Notice) to a client: first sent to an address (this port's LID, QPN > 1) that holds
//    a subscription the Notice matches, carrying a Notice the master sent, then resent unchanged
//    at most `tries` times in all and never after the client acknowledged it; Q_Key 0x80010000,
//    SM_Key 0 (never the master's), status 0;
//  - a client's Set from QP1, for a vendor trap or for trap 0xFFFF is answered REQ_DENIED at
//    once, Subscribe 2+ REQ_INVALID, an unsubscribe at once (0 or REQ_INVALID); an error answer
//    carries Subscribe 0;
//  - client subscriptions <= max_client_subscriptions, Reports in flight to clients <=
//    fanout.max_in_flight;
//  - at the end: every client Set from this port has been answered; once every client has
//    unsubscribed and the master answered: no client subscription, no Report in flight, and
//    master_extra_subscriptions (Coherence::add_stats) is 0;
//  - a successful PathRecord answer to another port is the master's answer byte for byte (TID
//    aside); one to this port only carries records the master sent;
//  - upstream outstanding <= max_outstanding, queued <= max_queued, PathRecord misses pending
//    <= their sum, cache entries <= cache_max_entries.
#include "fake_transport.hpp"
#include "fuzz_check.hpp"

#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"
#include "ib/constants.hpp"
#include "ib/gid.hpp"
#include "ib/inform_info.hpp"
#include "ib/mad.hpp"
#include "ib/mc_member_record.hpp"
#include "ib/notice.hpp"
#include "ib/path_record.hpp"

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace localsa;
using namespace localsa::mad;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kSmKey = 0x1122334455667788ULL;
// The SM_Key on the master's Reports: never to be seen on a Report sent on to a client.
constexpr std::uint64_t kMasterSmKey = 0x0badc0ffee0ddf00ULL;
constexpr std::uint32_t kGsiQkey = 0x80010000;
constexpr std::size_t kSubscribeOffset = kSaHeaderSize + 23;
// TIDs of the structured client Sets and master Reports, apart from the templates' (< 2^40).
constexpr std::uint64_t kClientTidBase = 0x5e7000000000ULL;
constexpr std::uint64_t kReportTidBase = 0xab0000000000ULL;

// A known finding awaiting its fix can be tolerated, so that a long run looks for other ones:
// LOCALSA_FUZZ_TOLERATE=retry-to-lid0[,...] (docs/fuzzing.md, Findings).
bool tolerated(const char* finding) {
    static const std::string list = [] {
        const char* env = std::getenv("LOCALSA_FUZZ_TOLERATE");
        return "," + std::string(env ? env : "") + ",";
    }();
    return list.find("," + std::string(finding) + ",") != std::string::npos;
}

class Input {
public:
    Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const { return pos_ >= size_; }
    std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
    std::vector<std::uint8_t> bytes(std::size_t n) {
        n = std::min(n, size_ - std::min(pos_, size_));
        std::vector<std::uint8_t> out(data_ + pos_, data_ + pos_ + n);
        pos_ += n;
        return out;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

std::vector<std::uint8_t> sa_request(std::uint8_t m, std::uint16_t attr_id,
                                     std::uint64_t mask = 0) {
    SaMad s;
    s.header.method = m;
    s.header.attr_id = attr_id;
    s.comp_mask = mask;
    return s.pack();
}

std::vector<std::uint8_t> smp_sminfo(std::uint8_t mgmt) {
    std::vector<std::uint8_t> b(kMadSize);
    b[0] = kBaseVersion;
    b[1] = mgmt;
    b[2] = kSmpClassVersion;
    b[3] = method::kGet;
    store_be16(b, 16, attr::kSmInfo);
    return b;
}

// The requests a port sends a local SA, one per template.
std::vector<std::uint8_t> request_template(std::uint8_t which, std::uint8_t arg) {
    const auto dguid = 0x100000 + (arg & 0xf);
    switch (which % 14) {
    case 0: { // PathRecord Get, with one of the masks that matter
        static constexpr std::uint64_t kExtra[] = {0,
                                                   sa::pr_mask::kSl,
                                                   sa::pr_mask::kServiceIdHigh,
                                                   sa::pr_mask::kServiceId,
                                                   sa::pr_mask::kMtuSelector | sa::pr_mask::kMtu,
                                                   sa::pr_mask::kPKey,
                                                   sa::pr_mask::kDlid,
                                                   sa::pr_mask::kQosClass};
        return test::path_request(0, dguid, method::kGet, kExtra[(arg >> 4) & 7], arg >> 7);
    }
    case 1: { // PathRecord GetTable, the preload question (SGID only)
        SaMad s;
        s.header.method = method::kGetTable;
        s.header.attr_id = attr::kPathRecord;
        s.comp_mask = sa::pr_mask::kSgid | ((arg & 1) ? sa::pr_mask::kPKey : 0);
        sa::PathRecord pr;
        pr.sgid = test::gid(0x100003);
        pr.pkey = 0xffff;
        pr.pack(s.data);
        return s.pack();
    }
    case 2: { // PathRecord GetTable SGID -> DGID
        return test::path_request(0, dguid, method::kGetTable);
    }
    case 3: { // NodeRecord Get by LID
        auto b = sa_request(method::kGet, attr::kNodeRecord, 1);
        store_be16(b, kSaHeaderSize, arg);
        return b;
    }
    case 4:
        return sa_request(method::kGet, attr::kClassPortInfo);
    case 5: { // InformInfo Set: subscribe to a generic trap
        auto b = sa_request(method::kSet, attr::kInformInfo);
        sa::InformInfo ii;
        ii.lid_range_begin = 0xffff;
        ii.is_generic = 1;
        ii.subscribe = arg & 1;
        ii.type = 0xffff;
        ii.trap_number = 64 + (arg & 3);
        ii.producer_type = 0xffffff;
        ii.pack(MutableBytes{b}.subspan(kSaHeaderSize));
        return b;
    }
    case 6: { // MCMemberRecord Set (join) or Delete (leave)
        auto b =
            sa_request((arg & 1) ? method::kDelete : method::kSet, attr::kMcMemberRecord, 0x1ffff);
        sa::McMemberRecord mc;
        mc.mgid = sa::Gid::from_parts(0xff12401bffff0000ULL, 0x00000000ffffffffULL);
        mc.port_gid = test::gid(0x100003);
        mc.join_state = 1;
        mc.pkey = 0xffff;
        mc.pack(MutableBytes{b}.subspan(kSaHeaderSize));
        return b;
    }
    case 7: { // Report(Notice) from the master: GID in/out of service, MC create/delete, 144
        auto b = sa_request(method::kReport, attr::kNotice);
        sa::Notice n;
        static constexpr std::uint16_t kTraps[] = {64, 65, 66, 67, 128, 144, 145, 256};
        n.trap_number = kTraps[arg & 7];
        n.issuer_lid = test::kSmLid;
        const auto g = test::gid(dguid);
        std::copy(g.raw.begin(), g.raw.end(), n.data_details.begin() + 6);
        n.pack(MutableBytes{b}.subspan(kSaHeaderSize));
        return b;
    }
    case 8:
        return smp_sminfo(mgmt_class::kSubnLid);
    case 9:
        return smp_sminfo(mgmt_class::kSubnDirected);
    case 10: { // GetMulti(MultiPathRecord), sent with RMPP
        auto b = sa_request(method::kGetMulti, attr::kMultiPathRecord, 0xff);
        RmppHeader r;
        r.version = rmpp::kVersion;
        r.type = rmpp::kTypeData;
        r.flags = rmpp::kFlagActive | rmpp::kFlagFirst | rmpp::kFlagLast;
        r.pack(b);
        return b;
    }
    case 11:
        return sa_request(method::kDelete, attr::kServiceRecord, 1);
    case 12:
        return sa_request(method::kGetTable, attr::kPortInfoRecord, 0);
    default:
        return sa_request(arg, static_cast<std::uint16_t>(arg << 4), arg);
    }
}

struct Requester {
    std::uint16_t lid;
    std::uint32_t qpn;
};
constexpr Requester kRequesters[] = {{5, 1}, {5, 0x48}, {9, 1},      {test::kSmLid, 1},
                                     {6, 1}, {0, 1},    {0xffff, 1}, {2, 0x1234}};

class Harness {
public:
    explicit Harness(Input& in) : in_(in) {
        const auto flags = in.u8();
        const auto limits = in.u8();
        // Timers: either they fire at every POLL (0 ms: every query times out unless answered
        // first) or never during a run; both deterministic.
        const auto timeout = (flags & 1) ? 0ms : std::chrono::milliseconds{3'600'000};
        config_.upstream.try_timeout = timeout;
        config_.upstream.busy_backoff = timeout;
        config_.upstream.retries = (flags & 2) ? 0 : 2;
        config_.upstream.max_outstanding = 1 + (limits & 3);
        config_.upstream.max_queued = (limits >> 2) & 7;
        // Time does not pass here: the node's master budget refills in real time, so it is made
        // large enough never to hold a background query back (its own tests: tests/unit).
        config_.upstream.background_rate = 1'000'000;
        config_.upstream.background_burst = 1'000'000;
        config_.cache_max_entries = limits >> 5;
        config_.answer_sminfo = flags & 4;
        if (flags & 8)
            config_.path_record.positive_ttl = 0ms;
        if (flags & 16)
            config_.path_record.negative_ttl = 0ms;
        if (flags & 32)
            transport_.state.lmc = 1; // LIDs 5 and 6 are this port's
        coherence::CoherenceConfig cc;
        if (flags & 128) {
            // Client event subscriptions, held at the master by a Coherence. Its own timers
            // (port poll, subscription check, refresh every 100 ms) never run: they are either
            // real-time or endless at 0 ms. Port polls are done by port_change() as Coherence
            // would do them; preload is off.
            const auto c = in.u8();
            static constexpr std::size_t kMaxSubscriptions[] = {1024, 1, 2, 4};
            static constexpr std::size_t kMaxInFlight[] = {4096, 1, 2, 8};
            config_.max_client_subscriptions = kMaxSubscriptions[(c >> 2) & 3];
            config_.fanout.max_in_flight = kMaxInFlight[(c >> 4) & 3];
            config_.fanout.try_timeout = (c & 64) ? 0ms : std::chrono::milliseconds{3'600'000};
            cc.subscribe = !(c & 1); // --no-subscribe: every client trap is an extra one
            cc.preload = false;
            cc.spread = 0ms; // a resync's Sets at once, as the unit tests have them
            cc.subscription_check = 0ms;
            cc.port_poll = std::chrono::milliseconds{3'600'000};
            // A refused trap tried again at once; not while every try also times out at once
            // (then no Set could ever be answered in time).
            cc.resubscribe_retry =
                (c & 2) && timeout.count() != 0 ? 0ms : std::chrono::milliseconds{3'600'000};
        }
        sa_ = std::make_unique<LocalSa>(io_.get_executor(), clock_, transport_, config_);
        if (flags & 64)
            sa_->start();
        if (flags & 128) {
            coherence_ = std::make_unique<coherence::Coherence>(io_.get_executor(),
                                                                sa_->coherence_parts(), cc);
            coherence_->resync("start"); // what start() does, without its timers
        } else {
            sa_->on_report([this](const sa::Notice& n, std::uint64_t) {
                // What coherence does with a Report: drop the answers that involve the GID.
                const auto g = n.subject_gid();
                sa_->cache().erase_if(
                    [&](const auto& k, const auto& a) { return cache::answer_involves(k, a, g); });
            });
        }
        check();
    }

    ~Harness() {
        coherence_.reset();
        sa_.reset(); // before the io_context: its timers cancel their waits
    }

    void step() {
        const auto op = in_.u8() % (coherence_ ? 16 : 10);
        if (debug())
            std::fprintf(stderr, "op %d\n", op);
        // clang-format off
        switch (op) {
        case 0: case 1: request(); break;
        case 2: case 3: master_response(); break;
        case 4: raw(); break;
        case 5: (void)poll(); break;
        case 6: failed_send(); break;
        case 7: port_change(); break;
        case 8: refresh(); break;
        case 9: stats(); break;
        case 10: case 11: client_set(); break;
        case 12: master_report(); break;
        case 13: report_ack(); break;
        case 14: master_inform_answer(); break;
        case 15: subscriptions_lost(); break;
        }
        // clang-format on
        check();
    }

    // At the end of an input with client subscriptions: the port comes back, the master answers
    // everything, the clients acknowledge every Report; every client Set must have its answer.
    // Then every client leaves, and nothing may be left held for them.
    void finish() {
        if (!coherence_)
            return;
        transport_.state.state = 4;
        if (transport_.state.sm_lid == 0)
            transport_.state.sm_lid = test::kSmLid;
        coherence_poll();
        if (!drain())
            return; // what waits for those queries cannot be told apart
        check_sets_answered();
        std::vector<events::ClientSubscription> subs;
        const auto& table = sa_->client_subscriptions();
        for (std::size_t i = 0; i < table.size(); ++i)
            subs.push_back(table.at(i));
        for (const auto& sub : subs) {
            auto info = sub.filter;
            info.subscribe = 0;
            send_client_set({sub.subscriber.lid, sub.subscriber.qpn}, info, ++client_tid_);
        }
        check();
        if (!drain())
            return;
        check_sets_answered();
        FUZZ_CHECK(table.size() == 0);
        FUZZ_CHECK(sa_->report_fanout().in_flight() == 0);
        nlohmann::json j;
        coherence_->add_stats(j);
        FUZZ_CHECK(j["master_extra_subscriptions"] == 0);
    }

    // LOCALSA_FUZZ_DEBUG=1: the counters after each input, to see what a seed reaches.
    static bool debug() {
        static const bool on = std::getenv("LOCALSA_FUZZ_DEBUG") != nullptr;
        return on;
    }

    void debug_stats() {
        if (!debug())
            return;
        auto j = sa_->stats();
        if (coherence_)
            coherence_->add_stats(j);
        std::fprintf(stderr, "%s\n", j.dump().c_str());
    }

private:
    void deliver(const Requester& who, std::vector<std::uint8_t> bytes, int status = 0) {
        transport::InboundMad m;
        m.bytes = std::move(bytes);
        m.from.lid = who.lid;
        m.from.qpn = who.qpn;
        m.status = status;
        const auto& b = m.bytes;
        if (status == 0 && b.size() >= 16 && !method::is_response(b[3])) {
            requests_[{who.lid, who.qpn}].insert(tid_of(b));
            if (b.size() >= 44 && load_be64(b, 36) != 0)
                sm_keys_.insert(load_be64(b, 36));
            if (b.size() >= 18 && load_be16(b, 16) == attr::kInformInfo)
                ++inform_requests_[{who.lid, who.qpn, tid_of(b)}];
            if (b[3] == method::kReport) {
                // A Notice the master sent (as dispatch pads it): what a client may be sent.
                auto padded = b;
                padded.resize(std::max(padded.size(), kSaHeaderSize + sa::Notice::kSize));
                master_notices_.emplace(padded.begin() + kSaHeaderSize,
                                        padded.begin() + kSaHeaderSize + sa::Notice::kSize);
            }
        }
        if (status == 0 && b.size() >= kSaHeaderSize && b[3] == method::kReportResp) {
            // A client acknowledges one of our Reports (TID, LID and QPN): never sent again.
            const auto it = fanout_.find(static_cast<std::uint32_t>(tid_of(b)));
            if (it != fanout_.end() && it->second.to.lid == who.lid && it->second.to.qpn == who.qpn)
                it->second.acked = true;
        }
        if (debug() && b.size() >= 18)
            std::fprintf(stderr, "  recv %s %s from LID %u QPN %#x TID %#llx status %#x\n",
                         method_name(b[3]).c_str(), attr_name(load_be16(b, 16)).c_str(), who.lid,
                         who.qpn, static_cast<unsigned long long>(tid_of(b)), load_be16(b, 4));
        sa_->dispatch(m);
    }

    void patch(std::vector<std::uint8_t>& b) {
        const auto n = in_.u8() % 8;
        for (int i = 0; i < n; ++i) {
            const auto off = in_.u8();
            const auto val = in_.u8();
            if (!b.empty())
                b[off % b.size()] = val;
        }
    }

    void truncate(std::vector<std::uint8_t>& b, std::uint8_t len) {
        if (len != 0 && len < b.size())
            b.resize(len);
    }

    void request() {
        const auto& who = kRequesters[in_.u8() % std::size(kRequesters)];
        const auto which = in_.u8();
        const auto arg = in_.u8();
        const auto tid = std::uint64_t{in_.u8()} << 32 | in_.u8();
        const auto flags = in_.u8();
        auto b = request_template(which, arg);
        set_tid(b, tid);
        if (flags & 1)
            store_be64(b, 36, kSmKey);
        if (flags & 2) {
            auto r = RmppHeader::unpack(b);
            r.flags |= rmpp::kFlagActive;
            r.pack(b);
        }
        patch(b);
        truncate(b, in_.u8());
        deliver(who, std::move(b));
    }

    // The master answers one of the requests the daemon sent it (by index, as its TIDs are
    // random), as OpenSM would or with the status, record count, RMPP and length the input asks.
    void master_response() {
        const auto index = in_.u8();
        const auto status_sel = in_.u8();
        const auto records = in_.u8();
        const auto rmpp_sel = in_.u8();
        const auto from_sel = in_.u8();
        if (upstream_.empty())
            return;
        const auto& sent = upstream_[index % upstream_.size()];
        auto m = *SaMad::unpack(sent.bytes);
        m.header.method = (m.header.method == method::kSet ? method::kGet : m.header.method) |
                          method::kResponseBit;
        static constexpr std::uint16_t kStatus[] = {0,
                                                    0,
                                                    0,
                                                    status::kBusy,
                                                    status::kSaNoRecords,
                                                    status::kSaTooManyRecords,
                                                    status::kSaReqInvalid,
                                                    0};
        m.header.status = (status_sel & 7) == 7 ? std::uint16_t(status_sel << 8 | status_sel >> 5)
                                                : kStatus[status_sel & 7];
        m.sm_key = 0;
        const std::size_t n = records % 6;
        const bool pr = m.header.attr_id == attr::kPathRecord;
        m.attr_offset = pr || (records & 0x80) ? 8 : (records >> 3) & 0xf;
        const auto asked = sa::PathRecord::unpack(m.data);
        m.data.assign(std::max<std::size_t>(kSaDataSize, n * 64), 0);
        for (std::size_t i = 0; i < n; ++i) {
            auto r = asked;
            r.dlid = static_cast<std::uint16_t>(0x10 + i + (records & 0x40));
            r.slid = test::kOwnLid;
            r.mtu = 4;
            r.rate = 7;
            r.packet_life = 18;
            r.pkey = 0xffff;
            r.numb_path = 0;
            r.pack(MutableBytes{m.data}.subspan(i * 64, 64));
        }
        if (rmpp_sel & 1) {
            m.rmpp.version = rmpp::kVersion;
            m.rmpp.type = rmpp::kTypeData;
            m.rmpp.flags = rmpp::kFlagActive | rmpp::kFlagFirst | rmpp::kFlagLast;
            const std::size_t d = n * 64;
            m.rmpp.paylen_newwin = (rmpp_sel & 2)
                                       ? std::uint32_t{rmpp_sel} * 17
                                       : static_cast<std::uint32_t>(
                                             d + 20 * std::max<std::size_t>(1, (d + 199) / 200));
        }
        auto b = m.pack();
        if (!(rmpp_sel & 4))
            b.resize(std::max(kMadSize, kSaHeaderSize + n * 64)); // as delivered: whole MAD(s)
        patch(b);
        const auto len = in_.u8();
        if (len != 0)
            b.resize(std::min(b.size(), kSaHeaderSize + len));
        const Requester from{(from_sel & 3) == 3 ? std::uint16_t{9} : sent.to, 1};
        // An answer from another port is not the master's: nothing of it may reach a requester.
        if (from.lid == sent.to)
            remember_master(b);
        deliver(from, std::move(b));
    }

    void remember_master(std::vector<std::uint8_t> b) {
        if (b.size() < kSaHeaderSize)
            return;
        for (std::size_t off = kSaHeaderSize; off + 64 <= b.size(); off += 64)
            master_records_.insert(
                std::vector<std::uint8_t>(b.begin() + off, b.begin() + off + 64));
        set_tid(b, 0);
        master_answers_.insert(std::move(b));
    }

    void raw() {
        const auto& who = kRequesters[in_.u8() % std::size(kRequesters)];
        const std::size_t n = std::size_t(in_.u8() & 1) << 8 | in_.u8();
        auto b = in_.bytes(n);
        if (b.size() >= 4 && method::is_response(b[3]))
            remember_master(b);
        deliver(who, std::move(b));
    }

    // True when every handler ready to run has run.
    bool poll() {
        // Bounded: a refused trap retried after 0 ms (resubscribe_retry) while every Set fails at
        // once (no SM, upstream queue full) would keep one poll() running for ever.
        io_.restart();
        for (int i = 0; i < 64; ++i)
            if (io_.poll_one() == 0)
                return true;
        return false;
    }

    void failed_send() {
        // The MAD layer hands back one of our sends that failed (e.g. ETIMEDOUT).
        auto b = upstream_.empty() ? std::vector<std::uint8_t>(kMadSize) : upstream_.back().bytes;
        deliver({transport_.state.sm_lid, 1}, std::move(b), -110);
    }

    void port_change() {
        const auto v = in_.u8();
        transport_.state.state = (v & 1) ? 2 : 4;
        static constexpr std::uint16_t kSm[] = {test::kSmLid, test::kSmLid, 2, 0};
        transport_.state.sm_lid = kSm[(v >> 1) & 3];
        if (coherence_ && !(v & 8))
            coherence_poll(); // else Coherence notices at a later port change
    }

    // Coherence's next port poll (its timer is an hour away in the harness).
    void coherence_poll() { coherence_->poll_port(); }

    // The subscription check found this port's subscriptions lost at the master (it asks only
    // while the port is active; an answer cannot arrive while it is down).
    void subscriptions_lost() {
        if (transport_.state.active())
            coherence_->resync("subscriptions lost at the master");
    }

    void stats() {
        auto j = sa_->stats();
        if (coherence_)
            coherence_->add_stats(j);
        (void)j.dump();
    }

    // A client's InformInfo Set: who, trap, filter, Subscribe value, TID (fresh or a retry).
    void client_set() {
        static constexpr Requester kClients[] = {{5, 0x48},   {5, 0x49}, {5, 1},        {6, 0x48},
                                                 {5, 0x1234}, {9, 0x48}, {5, 0xffffff}, {5, 0x48}};
        static constexpr std::uint16_t kTraps[] = {64,  65,  66,  67,     144, 145, 128, 128,
                                                   129, 130, 131, 0xffff, 256, 65,  0,   0x1234};
        static constexpr std::uint16_t kLidRanges[][2] = {
            {0xffff, 0}, {test::kSmLid, test::kSmLid}, {5, 9}, {2, 0}};
        const auto who_sel = in_.u8();
        const auto trap_sel = in_.u8();
        const auto filter_sel = in_.u8();
        const auto sub_sel = in_.u8();
        const auto& table = sa_->client_subscriptions();
        if ((sub_sel & 0xc0) == 0xc0 && table.size() > 0) {
            // Unsubscribe exactly one that is held (the random filters seldom name one).
            const auto& sub = table.at(who_sel % table.size());
            auto info = sub.filter;
            info.subscribe = 0;
            send_client_set({sub.subscriber.lid, sub.subscriber.qpn}, info, ++client_tid_);
            return;
        }
        sa::InformInfo info;
        static const sa::Gid kGids[] = {sa::Gid{}, test::gid(0x100001), test::gid(0x100003),
                                        sa::Gid{}};
        info.gid = kGids[filter_sel & 3];
        info.lid_range_begin = kLidRanges[(filter_sel >> 2) & 3][0];
        info.lid_range_end = kLidRanges[(filter_sel >> 2) & 3][1];
        info.is_generic = (trap_sel & 0x30) == 0x30 ? 0 : 1;
        info.subscribe = (sub_sel & 3) == 3 ? 2 + (sub_sel >> 2) : (sub_sel & 1) ^ 1;
        info.type = (filter_sel & 0x10) ? 3 : 0xffff;
        info.trap_number = kTraps[trap_sel & 15];
        info.qpn = (filter_sel & 0x40) ? 0x48 : 0;
        info.resp_time_value = 18;
        info.producer_type = (filter_sel & 0x20) ? 4 : 0xffffff;
        // Bit 7: a retry of the last Set (same TID), as a client that saw no answer sends it.
        const auto tid =
            (who_sel & 0x80) && client_tid_ > kClientTidBase ? client_tid_ : ++client_tid_;
        send_client_set(kClients[who_sel & 7], info, tid);
    }

    void send_client_set(const Requester& who, const sa::InformInfo& info, std::uint64_t tid) {
        SaMad s;
        s.header.method = method::kSet;
        s.header.attr_id = attr::kInformInfo;
        s.header.tid = tid;
        info.pack(s.data);
        const bool answered = own(who.lid);
        if (answered)
            ++expected_answers_[{who.lid, who.qpn, tid}];
        deliver(who, s.pack());
        // What is answered at once, and how.
        std::vector<std::uint16_t> now;
        for (const auto& sent : transport_.sent)
            if (sent.to.lid == who.lid && sent.to.qpn == who.qpn &&
                method::is_response(sent.bytes[3]) && tid_of(sent.bytes) == tid &&
                load_be16(sent.bytes, 16) == attr::kInformInfo) {
                now.push_back(load_be16(sent.bytes, 4));
                if (now.back() != 0)
                    FUZZ_CHECK(sent.bytes[kSubscribeOffset] == 0); // o13-13.1.1
            }
        if (!answered) {
            FUZZ_CHECK(now.empty()); // another port's: refused
            return;
        }
        if (who.qpn <= 1 || !info.is_generic || info.trap_number == 0xffff) {
            FUZZ_CHECK(now.size() == 1 && now[0] == status::kSaDenied);
        } else if (info.subscribe > 1) {
            FUZZ_CHECK(now.size() == 1 && now[0] == status::kSaReqInvalid);
        } else if (info.subscribe == 0) {
            FUZZ_CHECK(now.size() == 1 && (now[0] == 0 || now[0] == status::kSaReqInvalid));
        }
    }

    // A Report(Notice) from the master (or from another LID), or the master's resend of the last.
    void master_report() {
        static constexpr std::uint16_t kTraps[] = {64,  65,  66,  67,  144, 145, 128, 128,
                                                   129, 130, 131, 256, 64,  65,  0,   0xffff};
        static constexpr std::uint16_t kIssuers[] = {test::kSmLid, 5, 9, 0x20};
        static const sa::Gid kIssuerGids[] = {test::gid(0x100001), test::gid(0x100003), sa::Gid{},
                                              test::gid(0x100001)};
        const auto trap_sel = in_.u8();
        const auto notice_sel = in_.u8();
        const auto tid_sel = in_.u8();
        if ((tid_sel & 0x80) && !last_report_.empty()) {
            deliver({transport_.state.sm_lid, 1}, last_report_); // resent: not acknowledged yet?
            return;
        }
        sa::Notice n;
        n.is_generic = (notice_sel & 0xc0) != 0xc0;
        n.type = (notice_sel & 1) ? 4 : 3;
        n.producer_type = (notice_sel & 2) ? 1 : 4;
        n.trap_number = kTraps[trap_sel & 15];
        n.issuer_lid = kIssuers[(notice_sel >> 2) & 3];
        n.issuer_gid = kIssuerGids[(notice_sel >> 4) & 3];
        const auto g = test::gid(0x100000 + (trap_sel >> 4));
        std::copy(g.raw.begin(), g.raw.end(), n.data_details.begin() + 6);
        SaMad r;
        r.header.method = method::kReport;
        r.header.attr_id = attr::kNotice;
        r.header.tid = kReportTidBase + ++report_seq_;
        r.sm_key = (tid_sel & 0x20) ? 0 : kMasterSmKey;
        n.pack(r.data);
        auto b = r.pack();
        const Requester from{(tid_sel & 0x40) ? std::uint16_t{9} : transport_.state.sm_lid, 1};
        if (from.lid == transport_.state.sm_lid)
            last_report_ = b;
        deliver(from, std::move(b));
    }

    // A client's ReportResp to one of the Reports sent on to it: right, wrong TID, wrong LID,
    // wrong QPN.
    void report_ack() {
        const auto index = in_.u8();
        const auto how = in_.u8();
        if (fanout_order_.empty())
            return;
        const auto tid = fanout_order_[index % fanout_order_.size()];
        const auto& r = fanout_.at(tid);
        auto b = r.bytes;
        b[3] = method::kReportResp;
        Requester from{r.to.lid, r.to.qpn};
        static constexpr std::uint16_t kOtherLids[] = {6, 9, test::kSmLid, 0};
        switch (how & 3) {
        case 1:
            set_tid(b, tid + 1 + (how >> 2));
            break;
        case 2:
            from.lid = kOtherLids[(how >> 2) & 3];
            break;
        case 3:
            from.qpn = r.to.qpn + 1;
            break;
        default:
            break;
        }
        deliver(from, std::move(b));
    }

    // The master answers one of localsad's InformInfo Sets: OK, an error, BUSY.
    void master_inform_answer() {
        const auto index = in_.u8();
        const auto status_sel = in_.u8();
        std::vector<const SentQuery*> sets;
        for (const auto& q : upstream_)
            if (q.bytes[3] == method::kSet && load_be16(q.bytes, 16) == attr::kInformInfo)
                sets.push_back(&q);
        if (sets.empty())
            return;
        static constexpr std::uint16_t kStatus[] = {0,
                                                    0,
                                                    0,
                                                    status::kBusy,
                                                    status::kSaReqInvalid,
                                                    status::kSaNoResources,
                                                    status::kSaDenied,
                                                    0};
        const auto& set = *sets[index % sets.size()];
        auto b = set.bytes;
        b[3] = method::kGetResp;
        store_be16(b, 4, (status_sel & 7) == 7 ? status_sel : kStatus[status_sel & 7]);
        store_be64(b, 36, 0);
        deliver({set.to, 1}, std::move(b));
    }

    // The master answers every query localsad sent it (OK), the clients acknowledge every Report
    // in flight, timers run; until a round sends nothing new and leaves no timer ready. False when
    // upstream queries are left in flight all the same: tries that were never sent, as there was
    // no SM then (their timeout is an hour when it is not 0, so they neither expire nor can be
    // answered; a 0 ms resubscribe retry may spin meanwhile, its Sets overflowing behind them).
    bool drain() {
        for (int round = 0; round < 32; ++round) {
            for (const auto& q : std::exchange(unanswered_, {})) {
                auto b = q.bytes;
                b[3] = b[3] == method::kSet ? method::kGetResp : (b[3] | method::kResponseBit);
                store_be16(b, 4, 0);
                store_be64(b, 36, 0);
                remember_master(b);
                deliver({q.to, 1}, std::move(b));
            }
            for (auto& [tid, r] : fanout_) {
                if (r.acked || r.sends >= config_.fanout.tries)
                    continue;
                auto b = r.bytes;
                b[3] = method::kReportResp;
                deliver({r.to.lid, r.to.qpn}, std::move(b));
            }
            const bool idle = poll();
            check();
            if (unanswered_.empty() && idle)
                break;
        }
        const auto& up = sa_->upstream();
        if (unanswered_.empty()) {
            FUZZ_CHECK(sa_->report_fanout().in_flight() == 0);
            if (up.outstanding() == 0 && up.queued() == 0)
                return true;
            if (config_.upstream.try_timeout.count() != 0 &&
                sa_->counters().upstream_requests > upstream_sent_)
                return false; // tries not sent
            if (up.outstanding() == 0 && up.held_back())
                return false; // queries held back by a BUSY for longer than a run lasts
        }
        std::fprintf(stderr, "drain: %zu upstream outstanding, %zu queued, %zu Reports in flight\n",
                     up.outstanding(), up.queued(), sa_->report_fanout().in_flight());
        FUZZ_CHECK(!"drain: queries or Reports still in flight after 32 rounds");
        return false;
    }

    void check_sets_answered() {
        for (const auto& [key, n] : expected_answers_) {
            const auto it = inform_answers_.find(key);
            FUZZ_CHECK(it != inform_answers_.end() && it->second >= n);
        }
    }

    void refresh() {
        // As coherence does when refresh time comes; the clock is moved, not waited for.
        const auto limit = in_.u8() % 8;
        for (const auto& key : sa_->cache().due_for_refresh(clock_.now() + 24h, limit))
            sa_->path_records().refresh(key);
    }

    bool own(std::uint16_t lid) const { return transport_.state.owns_lid(lid); }

    void check() {
        for (auto& s : transport_.take()) {
            const auto& b = s.bytes;
            FUZZ_CHECK(b.size() >= kSaHeaderSize);
            if (debug())
                std::fprintf(stderr, "  sent %s %s to LID %u QPN %#x TID %#llx status %#x\n",
                             method_name(b[3]).c_str(), attr_name(load_be16(b, 16)).c_str(),
                             s.to.lid, s.to.qpn, static_cast<unsigned long long>(tid_of(b)),
                             load_be16(b, 4));
            if (method::is_response(b[3])) {
                const auto it = requests_.find({s.to.lid, s.to.qpn});
                FUZZ_CHECK(it != requests_.end());
                FUZZ_CHECK(it->second.contains(tid_of(b)));
                check_path_answer(s);
                if (load_be16(b, 16) == attr::kInformInfo) {
                    const std::tuple key{s.to.lid, s.to.qpn, tid_of(b)};
                    FUZZ_CHECK(++inform_answers_[key] <= inform_requests_[key]);
                }
            } else if (b[3] == method::kReport) {
                check_client_report(s);
            } else {
                FUZZ_CHECK(s.to.lid == transport_.state.sm_lid);
                FUZZ_CHECK(s.to.lid != 0 || tolerated("retry-to-lid0"));
                FUZZ_CHECK(b[1] == mgmt_class::kSubnAdm);
                const auto key = load_be64(b, 36);
                FUZZ_CHECK(key == 0 || sm_keys_.contains(key));
                ++upstream_sent_;
                upstream_.push_back({b, s.to.lid});
                if (upstream_.size() > 64)
                    upstream_.erase(upstream_.begin());
                if (coherence_)
                    unanswered_.push_back({b, s.to.lid});
            }
        }
        const auto& up = sa_->upstream();
        FUZZ_CHECK(up.outstanding() <= config_.upstream.max_outstanding);
        // Client queries and background queries are queued apart, each up to max_queued; a try
        // the master answered BUSY goes back to the queue's head from the queries in flight.
        FUZZ_CHECK(up.outstanding() + up.queued() <=
                   config_.upstream.max_outstanding + 2 * config_.upstream.max_queued);
        FUZZ_CHECK(sa_->path_records().pending() <=
                   config_.upstream.max_outstanding + config_.upstream.max_queued);
        FUZZ_CHECK(sa_->cache().size() <= config_.cache_max_entries);
        FUZZ_CHECK(sa_->client_subscriptions().size() <= config_.max_client_subscriptions);
        FUZZ_CHECK(sa_->report_fanout().in_flight() <= config_.fanout.max_in_flight);
    }

    // A Report localsad sends on to a client of this port.
    void check_client_report(const test::SentMad& s) {
        const auto& b = s.bytes;
        FUZZ_CHECK(b[1] == mgmt_class::kSubnAdm && load_be16(b, 16) == attr::kNotice);
        FUZZ_CHECK(b.size() >= kSaHeaderSize + sa::Notice::kSize);
        FUZZ_CHECK(s.to.qkey == kGsiQkey);
        FUZZ_CHECK(load_be64(b, 36) == 0); // never the master's SM_Key
        FUZZ_CHECK(load_be16(b, 4) == 0);
        FUZZ_CHECK(s.to.qpn > 1 && own(s.to.lid));
        const auto tid = static_cast<std::uint32_t>(tid_of(b));
        if (const auto it = fanout_.find(tid); it != fanout_.end()) {
            auto& r = it->second;
            FUZZ_CHECK(!r.acked);
            FUZZ_CHECK(r.to.lid == s.to.lid && r.to.qpn == s.to.qpn && r.bytes == b);
            FUZZ_CHECK(++r.sends <= config_.fanout.tries);
            return;
        }
        const std::vector<std::uint8_t> payload(b.begin() + kSaHeaderSize,
                                                b.begin() + kSaHeaderSize + sa::Notice::kSize);
        FUZZ_CHECK(master_notices_.contains(payload));
        const auto notice = sa::Notice::unpack(payload);
        const auto& table = sa_->client_subscriptions();
        bool held = false;
        for (std::size_t i = 0; i < table.size() && !held; ++i) {
            const auto& sub = table.at(i);
            held = sub.subscriber.lid == s.to.lid && sub.subscriber.qpn == s.to.qpn &&
                   events::ClientSubscriptions::matches(sub.filter, notice);
        }
        FUZZ_CHECK(held);
        fanout_.emplace(tid, ClientReport{s.to, b, 1, false});
        fanout_order_.push_back(tid);
        if (fanout_order_.size() > 64)
            fanout_order_.erase(fanout_order_.begin());
    }

    void check_path_answer(const test::SentMad& s) {
        const auto& b = s.bytes;
        if (b[1] != mgmt_class::kSubnAdm || load_be16(b, 16) != attr::kPathRecord ||
            load_be16(b, 4) != status::kOk)
            return;
        if (!own(s.to.lid)) {
            // Another port's question: only the master answers it.
            auto copy = b;
            set_tid(copy, 0);
            FUZZ_CHECK(master_answers_.contains(copy));
            return;
        }
        for (std::size_t off = kSaHeaderSize; off + 64 <= b.size(); off += 64) {
            std::vector<std::uint8_t> rec(b.begin() + off, b.begin() + off + 64);
            if (std::any_of(rec.begin(), rec.end(), [](auto x) { return x != 0; }))
                FUZZ_CHECK(master_records_.contains(rec));
        }
    }

    struct ClientReport {
        transport::MadAddress to;
        std::vector<std::uint8_t> bytes;
        int sends = 0;
        bool acked = false;
    };
    using SetKey = std::tuple<std::uint16_t, std::uint32_t, std::uint64_t>; // LID, QPN, TID

    Input& in_;
    boost::asio::io_context io_;
    SteadyClock clock_;
    test::FakeTransport transport_;
    LocalSaConfig config_;
    std::unique_ptr<LocalSa> sa_;
    std::unique_ptr<coherence::Coherence> coherence_;
    std::uint64_t client_tid_ = kClientTidBase;
    std::uint64_t report_seq_ = 0;
    std::vector<std::uint8_t> last_report_;
    std::map<SetKey, unsigned> inform_requests_; // InformInfo requests, any method
    std::map<SetKey, unsigned> inform_answers_;
    std::map<SetKey, unsigned> expected_answers_; // structured Sets from this port
    std::set<std::vector<std::uint8_t>> master_notices_;
    std::map<std::uint32_t, ClientReport> fanout_; // Reports sent on to clients, by TID
    std::vector<std::uint32_t> fanout_order_;
    // A query localsad sent the master, and the SM LID it went to: only that port answers it.
    struct SentQuery {
        std::vector<std::uint8_t> bytes;
        std::uint16_t to = 0;
    };
    std::vector<SentQuery> unanswered_; // upstream queries, for drain()
    std::uint64_t upstream_sent_ = 0;   // tries that reached the transport
    std::map<std::pair<std::uint16_t, std::uint32_t>, std::set<std::uint64_t>> requests_;
    std::set<std::uint64_t> sm_keys_;
    std::vector<SentQuery> upstream_;
    std::set<std::vector<std::uint8_t>> master_answers_;
    std::set<std::vector<std::uint8_t>> master_records_;
};

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // Log everything into a null sink: the format strings run, nothing is printed.
    auto logger =
        std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>());
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Input in(data, size);
    Harness h(in);
    for (int ops = 0; !in.empty() && ops < 256; ++ops)
        h.step();
    h.debug_stats();
    h.finish();
    return 0;
}
