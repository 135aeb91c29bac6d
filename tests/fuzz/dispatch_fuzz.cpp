// libFuzzer target: the whole dispatcher. The input is a small configuration and a sequence of
// operations (requests from various LIDs built from templates and patched, the master's answers
// to what the daemon sent it, raw MADs, failed sends, port changes, refreshes, timer runs), fed
// to LocalSa::dispatch over the fake transport. After every operation the invariants below are
// checked on everything the daemon sent and on its internal bounds.
//
// Invariants:
//  - every MAD handed to the transport is at least an SA header (56 bytes) long;
//  - a response goes to an address that sent a request, with the TID of one of its requests;
//  - a request goes to the current SM LID only, never to LID 0 (no SM), in the SA class, with
//    SM_Key 0 or an SM_Key some requester sent (the daemon never makes one up);
//  - a successful PathRecord answer to another port is the master's answer byte for byte (TID
//    aside); one to this port only carries records the master sent;
//  - upstream outstanding <= max_outstanding, queued <= max_queued, PathRecord misses pending
//    <= their sum, cache entries <= cache_max_entries.
#include "fuzz_check.hpp"
#include "fake_transport.hpp"

#include "daemon/local_sa.hpp"
#include "mad/constants.hpp"
#include "mad/mad.hpp"
#include "sa/gid.hpp"
#include "sa/inform_info.hpp"
#include "sa/mc_member_record.hpp"
#include "sa/notice.hpp"
#include "sa/path_record.hpp"

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace localsa;
using namespace localsa::mad;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kSmKey = 0x1122334455667788ULL;

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

std::vector<std::uint8_t> sa_request(std::uint8_t m, std::uint16_t attr_id, std::uint64_t mask = 0) {
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
        static constexpr std::uint64_t kExtra[] = {
            0, sa::pr_mask::kSl, sa::pr_mask::kServiceIdHigh, sa::pr_mask::kServiceId,
            sa::pr_mask::kMtuSelector | sa::pr_mask::kMtu, sa::pr_mask::kPKey,
            sa::pr_mask::kDlid, sa::pr_mask::kQosClass};
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
        auto b = sa_request((arg & 1) ? method::kDelete : method::kSet, attr::kMcMemberRecord,
                            0x1ffff);
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
constexpr Requester kRequesters[] = {{5, 1},  {5, 0x48}, {9, 1}, {test::kSmLid, 1},
                                     {6, 1},  {0, 1},    {0xffff, 1}, {2, 0x1234}};

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
        config_.cache_max_entries = limits >> 5;
        config_.answer_sminfo = flags & 4;
        if (flags & 8)
            config_.path_record.positive_ttl = 0ms;
        if (flags & 16)
            config_.path_record.negative_ttl = 0ms;
        if (flags & 32)
            transport_.state.lmc = 1; // LIDs 5 and 6 are this port's
        sa_ = std::make_unique<LocalSa>(io_.get_executor(), transport_, config_);
        if (flags & 64)
            sa_->start();
        sa_->on_report([this](const sa::Notice& n, std::uint64_t) {
            // What coherence does with a Report: drop the answers that involve the GID.
            const auto g = n.subject_gid();
            sa_->cache().erase_if([&](const auto& k, const auto& a) {
                return cache::answer_involves(k, a, g);
            });
        });
        check();
    }

    ~Harness() {
        sa_.reset(); // before the io_context: its timers cancel their waits
    }

    void step() {
        switch (in_.u8() % 10) {
        case 0: case 1: request(); break;
        case 2: case 3: master_response(); break;
        case 4: raw(); break;
        case 5: poll(); break;
        case 6: failed_send(); break;
        case 7: port_change(); break;
        case 8: refresh(); break;
        case 9: (void)sa_->stats().dump(); break;
        }
        check();
    }

private:
    void deliver(const Requester& who, std::vector<std::uint8_t> bytes, int status = 0) {
        transport::InboundMad m;
        m.bytes = std::move(bytes);
        m.from.lid = who.lid;
        m.from.qpn = who.qpn;
        m.status = status;
        if (status == 0 && m.bytes.size() >= 16 && !method::is_response(m.bytes[3])) {
            requests_[{who.lid, who.qpn}].insert(tid_of(m.bytes));
            if (m.bytes.size() >= 44 && load_be64(m.bytes, 36) != 0)
                sm_keys_.insert(load_be64(m.bytes, 36));
        }
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
        const auto& request = upstream_[index % upstream_.size()];
        auto m = *SaMad::unpack(request);
        m.header.method =
            (m.header.method == method::kSet ? method::kGet : m.header.method) | method::kResponseBit;
        static constexpr std::uint16_t kStatus[] = {0, 0, 0, status::kBusy, status::kSaNoRecords,
                                                    status::kSaTooManyRecords,
                                                    status::kSaReqInvalid, 0};
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
            m.rmpp.paylen_newwin = (rmpp_sel & 2) ? std::uint32_t{rmpp_sel} * 17
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
        remember_master(b);
        const Requester from{(from_sel & 3) == 3 ? std::uint16_t{9} : transport_.state.sm_lid, 1};
        deliver(from, std::move(b));
    }

    void remember_master(std::vector<std::uint8_t> b) {
        if (b.size() < kSaHeaderSize)
            return;
        for (std::size_t off = kSaHeaderSize; off + 64 <= b.size(); off += 64)
            master_records_.insert(std::vector<std::uint8_t>(b.begin() + off, b.begin() + off + 64));
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

    void poll() {
        io_.restart();
        io_.poll();
    }

    void failed_send() {
        // The MAD layer hands back one of our sends that failed (e.g. ETIMEDOUT).
        auto b = upstream_.empty() ? std::vector<std::uint8_t>(kMadSize) : upstream_.back();
        deliver({transport_.state.sm_lid, 1}, std::move(b), -110);
    }

    void port_change() {
        const auto v = in_.u8();
        transport_.state.state = (v & 1) ? 2 : 4;
        static constexpr std::uint16_t kSm[] = {test::kSmLid, test::kSmLid, 2, 0};
        transport_.state.sm_lid = kSm[(v >> 1) & 3];
    }

    void refresh() {
        // As coherence does when refresh time comes; the clock is moved, not waited for.
        const auto limit = in_.u8() % 8;
        for (const auto& key : sa_->cache().due_for_refresh(cache::Clock::now() + 24h, limit))
            sa_->path_records().refresh(key);
    }

    bool own(std::uint16_t lid) const { return transport_.state.owns_lid(lid); }

    void check() {
        for (auto& s : transport_.take()) {
            const auto& b = s.bytes;
            FUZZ_CHECK(b.size() >= kSaHeaderSize);
            if (method::is_response(b[3])) {
                const auto it = requests_.find({s.to.lid, s.to.qpn});
                FUZZ_CHECK(it != requests_.end());
                FUZZ_CHECK(it->second.contains(tid_of(b)));
                check_path_answer(s);
            } else {
                FUZZ_CHECK(s.to.lid == transport_.state.sm_lid);
                FUZZ_CHECK(s.to.lid != 0 || tolerated("retry-to-lid0"));
                FUZZ_CHECK(b[1] == mgmt_class::kSubnAdm);
                const auto key = load_be64(b, 36);
                FUZZ_CHECK(key == 0 || sm_keys_.contains(key));
                upstream_.push_back(b);
                if (upstream_.size() > 64)
                    upstream_.erase(upstream_.begin());
            }
        }
        const auto& up = sa_->upstream();
        FUZZ_CHECK(up.outstanding() <= config_.upstream.max_outstanding);
        FUZZ_CHECK(up.queued() <= config_.upstream.max_queued);
        FUZZ_CHECK(sa_->path_records().pending() <=
                   config_.upstream.max_outstanding + config_.upstream.max_queued);
        FUZZ_CHECK(sa_->cache().size() <= config_.cache_max_entries);
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

    Input& in_;
    boost::asio::io_context io_;
    test::FakeTransport transport_;
    LocalSaConfig config_;
    std::unique_ptr<LocalSa> sa_;
    std::map<std::pair<std::uint16_t, std::uint32_t>, std::set<std::uint64_t>> requests_;
    std::set<std::uint64_t> sm_keys_;
    std::vector<std::vector<std::uint8_t>> upstream_;
    std::set<std::vector<std::uint8_t>> master_answers_;
    std::set<std::vector<std::uint8_t>> master_records_;
};

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // Log everything into a null sink: the format strings run, nothing is printed.
    auto logger = std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>());
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Input in(data, size);
    Harness h(in);
    for (int ops = 0; !in.empty() && ops < 256; ++ops)
        h.step();
    return 0;
}
