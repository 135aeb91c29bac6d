// What the master's Reports remove from the cache and the preload table, and what they keep:
// trap 65 (GID out of service), 64 (in service), 66/67 (multicast group) and 144/145 (the
// issuing port changed). Pinned against the rules as Coherence states them, over hand-made
// entries (every way an answer can name a GID or LID) and over a random cache, checked after
// every Report against a scan of the cache (the oracle: the predicates below).
#include "fake_transport.hpp"

#include "engine/cache/path_cache.hpp"
#include "engine/cache/preload_table.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"
#include "ib/notice.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <random>
#include <unordered_set>

using namespace localsa;
using namespace localsa::test;
using namespace std::chrono_literals;

namespace {

using KeySet = std::unordered_set<cache::PathQueryKey, cache::PathQueryKeyHash>;

const sa::Gid kMgid = *sa::Gid::parse("ff12:401b:ffff::1");

// A LocalSa with Coherence (no subscriptions, no preload: Reports only), its cache filled by hand.
struct ReportedPort {
    boost::asio::io_context io;
    ManualClock clock{io};
    FakeTransport transport;
    LocalSa sa;
    coherence::Coherence coh;
    std::uint64_t tid = 0x9000;

    explicit ReportedPort(std::size_t cache_entries = 100'000)
        : sa(io.get_executor(), clock, transport, config(cache_entries)),
          coh(io.get_executor(), sa.coherence_parts(), coherence_config()) {}

    static LocalSaConfig config(std::size_t cache_entries) {
        LocalSaConfig c;
        c.cache_max_entries = cache_entries;
        return c;
    }
    static coherence::CoherenceConfig coherence_config() {
        coherence::CoherenceConfig c;
        c.subscribe = false;
        c.preload = false;
        return c;
    }

    cache::PathCache& cache() { return sa.coherence_parts().cache; }
    cache::PreloadTable& preload() { return sa.coherence_parts().preload; }

    void store(const cache::PathQueryKey& key, cache::PathAnswer answer) {
        answer.refresh_at = clock.now() + 1h;
        answer.expires = clock.now() + 2h;
        cache().store(key, answer);
    }

    // The master's Report of `trap` about `subject` (traps 64-67), issued by `issuer_lid`.
    void report(std::uint16_t trap, const sa::Gid& subject, std::uint16_t issuer_lid = 0) {
        mad::SaMad r;
        r.header.method = mad::method::kReport;
        r.header.attr_id = mad::attr::kNotice;
        r.header.tid = ++tid;
        sa::Notice n;
        n.trap_number = trap;
        n.issuer_lid = issuer_lid;
        std::copy(subject.raw.begin(), subject.raw.end(), n.data_details.begin() + 6);
        n.pack(r.data);
        sa.dispatch(from_lid(kSmLid, r.pack()));
        transport.take(); // the ReportResp
    }

    KeySet keys() {
        KeySet out;
        cache().for_each([&](const auto& k, const auto&) { out.insert(k); });
        return out;
    }
    bool has(const cache::PathQueryKey& key) { return cache().peek(key).has_value(); }
};

// A question: `mask` names what it constrains of `q`.
cache::PathQueryKey key_of(const sa::PathRecord& q, std::uint64_t mask,
                           std::uint8_t method = mad::method::kGet) {
    return cache::PathQueryKey::from_request(method, mask, q.bytes());
}

sa::PathRecord path(std::uint64_t sguid, std::uint64_t dguid, std::uint16_t slid,
                    std::uint16_t dlid) {
    sa::PathRecord r;
    r.sgid = gid(sguid);
    r.dgid = gid(dguid);
    r.slid = slid;
    r.dlid = dlid;
    r.reversible = true;
    r.pkey = 0xffff;
    r.mtu = 4;
    r.rate = 7;
    r.packet_life = 18;
    return r;
}

cache::PathAnswer answer_of(std::initializer_list<sa::PathRecord> records,
                            std::uint16_t status = 0) {
    cache::PathAnswer a;
    a.status = status;
    for (const auto& r : records) {
        const auto b = r.bytes();
        a.records.insert(a.records.end(), b.begin(), b.end());
    }
    return a;
}

using namespace sa::pr_mask;
constexpr std::uint64_t kByGids = kSgid | kDgid | kReversible | kNumbPath;

// The rules the Reports follow (coherence.cpp), as predicates on one cached answer.
bool names_lid(const cache::PathAnswer& a, std::uint16_t lid) {
    for (std::size_t off = 0; off + sa::PathRecord::kSize <= a.records.size();
         off += sa::PathRecord::kSize)
        if (mad::load_be16(a.records, off + sa::pr_offset::kDlid) == lid ||
            mad::load_be16(a.records, off + sa::pr_offset::kSlid) == lid)
            return true;
    return false;
}

bool report_drops(std::uint16_t trap, const sa::Gid& g, std::uint16_t lid,
                  const cache::PathQueryKey& k, const cache::PathAnswer& a) {
    switch (trap) {
    case sa::trap::kGidOutOfService:
    case sa::trap::kMcGroupCreated:
    case sa::trap::kMcGroupDeleted:
        return cache::answer_involves(k, a, g);
    case sa::trap::kGidInService: {
        // A "no such path" that does not name both ends by GID may be about the port back.
        const bool open_negative = a.records.empty() && k.method == mad::method::kGet &&
                                   (k.comp_mask & (kSgid | kDgid)) != (kSgid | kDgid);
        return k.method == mad::method::kGetTable || open_negative ||
               cache::answer_involves(k, a, g);
    }
    case sa::trap::kCapabilityMaskChange:
    case sa::trap::kSystemImageGuidChange:
        return names_lid(a, lid);
    default:
        return false;
    }
}

} // namespace

TEST_CASE("reports: trap 65 drops every answer that names the GID, wherever, and keeps the rest",
          "[coherence][reports]") {
    ReportedPort port;
    const auto own = 0x100003ULL, gone = 0x200007ULL, other = 0x200005ULL;
    // The usual answer: asked by GIDs, the master's record echoes them.
    const auto usual = key_of(path(own, gone, 0, 0), kByGids);
    port.store(usual, answer_of({path(own, gone, kOwnLid, 11)}));
    // Asked by DLID only: the GID is in the record alone.
    const auto by_lid = key_of(path(own, 0, 0, 11), kSgid | kDlid);
    port.store(by_lid, answer_of({path(own, gone, kOwnLid, 11)}));
    // The GID as the source asked for (a path between two other ports).
    const auto as_source = key_of(path(gone, other, 0, 0), kByGids);
    port.store(as_source, answer_of({path(gone, other, 11, 8)}));
    // The GID as the record's source only.
    const auto record_source = key_of(path(0, other, 0, 8), kDlid);
    port.store(record_source, answer_of({path(gone, other, 11, 8)}));
    // "No such path" to it.
    const auto negative = key_of(path(own, gone, 0, 0), kByGids | kSl);
    port.store(negative, answer_of({}, mad::status::kSaNoRecords));
    // One of several records names it.
    const auto several = key_of(path(own, 0, 0, 0), kSgid, mad::method::kGetTable);
    port.store(several, answer_of({path(own, other, kOwnLid, 8), path(own, gone, kOwnLid, 11)}));
    // Kept: the same LID, the GID in a field the question does not constrain, other ports.
    const auto same_lid = key_of(path(own, other, 0, 0), kByGids | kPKey);
    port.store(same_lid, answer_of({path(own, other, kOwnLid, 11)}));
    const auto other_usual = key_of(path(own, other, 0, 0), kByGids);
    port.store(other_usual, answer_of({path(own, other, kOwnLid, 8)}));
    const auto other_negative = key_of(path(own, other, 0, 0), kByGids | kSl);
    port.store(other_negative, answer_of({}, mad::status::kSaNoRecords));
    const auto unconstrained = key_of(path(own, gone, 0, 8), kSgid | kDlid);
    port.store(unconstrained, answer_of({path(own, other, kOwnLid, 8)}));
    const auto other_table = key_of(path(own, 0, 0, 0), kSgid | kPKey, mad::method::kGetTable);
    port.store(other_table, answer_of({path(own, other, kOwnLid, 8)}));
    REQUIRE(port.cache().size() == 11);

    port.report(sa::trap::kGidOutOfService, gid(gone));
    for (const auto& k : {usual, by_lid, as_source, record_source, negative, several})
        CHECK_FALSE(port.has(k));
    for (const auto& k : {same_lid, other_usual, other_negative, unconstrained, other_table})
        CHECK(port.has(k));
    CHECK(port.sa.counters().invalidated_entries == 6);
}

TEST_CASE("reports: trap 64 drops every GetTable answer, every \"no such path\" by LID and the "
          "answers about the GID",
          "[coherence][reports]") {
    ReportedPort port;
    const auto own = 0x100003ULL, back = 0x200007ULL, other = 0x200005ULL;
    const auto about = key_of(path(own, back, 0, 0), kByGids);
    port.store(about, answer_of({path(own, back, kOwnLid, 11)}));
    const auto negative = key_of(path(own, back, 0, 0), kByGids | kSl);
    port.store(negative, answer_of({}, mad::status::kSaNoRecords));
    const auto table = key_of(path(own, 0, 0, 0), kSgid, mad::method::kGetTable);
    port.store(table, answer_of({path(own, other, kOwnLid, 8)}));
    const auto empty_table = key_of(path(own, 0, 0, 0), kSgid | kPKey, mad::method::kGetTable);
    port.store(empty_table, answer_of({}, mad::status::kSaNoRecords));
    const auto kept = key_of(path(own, other, 0, 0), kByGids);
    port.store(kept, answer_of({path(own, other, kOwnLid, 8)}));
    const auto kept_negative = key_of(path(own, other, 0, 0), kByGids | kSl);
    port.store(kept_negative, answer_of({}, mad::status::kSaNoRecords));
    // "No such path" by LID: the port may be back on that LID.
    const auto negative_by_lid = key_of(path(own, 0, 0, 11), kSgid | kDlid);
    port.store(negative_by_lid, answer_of({}, mad::status::kSaNoRecords));
    const auto negative_from_lid = key_of(path(0, other, 11, 0), kSlid | kDgid);
    port.store(negative_from_lid, answer_of({}, mad::status::kSaNoRecords));

    port.report(sa::trap::kGidInService, gid(back));
    for (const auto& k : {about, negative, table, empty_table, negative_by_lid, negative_from_lid})
        CHECK_FALSE(port.has(k));
    CHECK(port.has(kept));
    CHECK(port.has(kept_negative));
    CHECK(port.cache().size() == 2);
}

TEST_CASE("reports: trap 144 and 145 drop the answers whose records carry the issuer's LID",
          "[coherence][reports]") {
    for (const auto trap : {sa::trap::kCapabilityMaskChange, sa::trap::kSystemImageGuidChange}) {
        INFO("trap " << trap);
        ReportedPort port;
        const auto own = 0x100003ULL, changed = 0x200007ULL, other = 0x200005ULL;
        const auto to_it = key_of(path(own, changed, 0, 0), kByGids);
        port.store(to_it, answer_of({path(own, changed, kOwnLid, 11)}));
        const auto from_it = key_of(path(changed, other, 0, 0), kByGids);
        port.store(from_it, answer_of({path(changed, other, 11, 8)}));
        const auto one_of_several = key_of(path(own, 0, 0, 0), kSgid, mad::method::kGetTable);
        port.store(one_of_several,
                   answer_of({path(own, other, kOwnLid, 8), path(own, changed, kOwnLid, 11)}));
        // Kept: the LID only in the question (no record carries it), a negative answer,
        // another LID to the same GID (a port of LMC > 0).
        const auto asked_only = key_of(path(own, 0, 0, 11), kSgid | kDlid);
        port.store(asked_only, answer_of({path(own, other, kOwnLid, 8)}));
        const auto negative = key_of(path(own, changed, 0, 11), kByGids | kDlid);
        port.store(negative, answer_of({}, mad::status::kSaNoRecords));
        const auto other_lid = key_of(path(own, changed, 0, 0), kByGids | kSl);
        port.store(other_lid, answer_of({path(own, changed, kOwnLid, 12)}));

        port.report(trap, gid(changed), 11);
        for (const auto& k : {to_it, from_it, one_of_several})
            CHECK_FALSE(port.has(k));
        for (const auto& k : {asked_only, negative, other_lid})
            CHECK(port.has(k));

        // From this port's own LID: every answer with a record from it.
        port.report(trap, gid(own), kOwnLid);
        CHECK_FALSE(port.has(asked_only));
        CHECK_FALSE(port.has(other_lid));
        CHECK(port.has(negative));
    }
}

TEST_CASE("reports: trap 66 and 67 drop the answers about the multicast group",
          "[coherence][reports]") {
    ReportedPort port;
    sa::PathRecord to_group = path(0x100003, 0, 0, 0);
    to_group.dgid = kMgid;
    const auto about = key_of(to_group, kByGids);
    port.store(about, answer_of({}, mad::status::kSaNoRecords));
    const auto other = key_of(path(0x100003, 0x200005, 0, 0), kByGids);
    port.store(other, answer_of({path(0x100003, 0x200005, kOwnLid, 8)}));
    port.report(sa::trap::kMcGroupDeleted, kMgid);
    CHECK_FALSE(port.has(about));
    CHECK(port.has(other));
}

TEST_CASE("reports: an answer stored again follows its new records", "[coherence][reports]") {
    ReportedPort port;
    const auto own = 0x100003ULL;
    const auto key = key_of(path(own, 0, 0, 11), kSgid | kDlid);
    port.store(key, answer_of({path(own, 0x200007, kOwnLid, 11)}));
    // Refreshed: the LID now belongs to another port.
    port.store(key, answer_of({path(own, 0x200009, kOwnLid, 11)}));
    port.report(sa::trap::kGidOutOfService, gid(0x200007));
    CHECK(port.has(key));
    port.report(sa::trap::kGidOutOfService, gid(0x200009));
    CHECK_FALSE(port.has(key));
    // Stored again with more records, then with none.
    port.store(key,
               answer_of({path(own, 0x200009, kOwnLid, 11), path(own, 0x20000b, kOwnLid, 13)}));
    port.store(key, answer_of({}, mad::status::kSaNoRecords));
    port.report(sa::trap::kCapabilityMaskChange, gid(0x20000b), 13);
    port.report(sa::trap::kGidOutOfService, gid(0x20000b));
    CHECK(port.has(key));
}

TEST_CASE("reports: a GID named by a great many answers (this port's own) drops them all, and is "
          "tracked again afterwards",
          "[coherence][reports]") {
    ReportedPort port;
    const auto own = 0x100003ULL;
    auto fill = [&](std::uint64_t first, int n) {
        for (int i = 0; i < n; ++i) {
            const auto dest = first + static_cast<std::uint64_t>(i);
            port.store(key_of(path(own, dest, 0, 0), kByGids),
                       answer_of({path(own, dest, kOwnLid, static_cast<std::uint16_t>(dest))}));
        }
    };
    fill(0x200000, 3000);
    port.report(sa::trap::kGidOutOfService, gid(0x200010));
    CHECK(port.cache().size() == 2999);
    // A path between two other ports: it stays.
    const auto elsewhere = key_of(path(0x200020, 0x200021, 0, 0), kByGids);
    port.store(elsewhere, answer_of({path(0x200020, 0x200021, 0x20, 0x21)}));
    port.report(sa::trap::kGidOutOfService, gid(own));
    CHECK(port.cache().size() == 1);
    CHECK(port.has(elsewhere));
    port.report(sa::trap::kGidOutOfService, gid(0x200020));
    CHECK(port.cache().size() == 0);
    fill(0x300000, 20);
    port.report(sa::trap::kGidInService, gid(own));
    CHECK(port.cache().size() == 0);
    fill(0x400000, 3000);
    port.report(sa::trap::kCapabilityMaskChange, gid(own), kOwnLid);
    CHECK(port.cache().size() == 0);
    fill(0x500000, 10);
    port.report(sa::trap::kSystemImageGuidChange, gid(own), kOwnLid);
    CHECK(port.cache().size() == 0);
}

TEST_CASE("reports: while a GID is out of service no answer naming it is served",
          "[coherence][reports]") {
    ReportedPort port;
    const auto own = 0x100003ULL, gone = 0x200007ULL;
    port.report(sa::trap::kGidOutOfService, gid(gone));
    port.report(sa::trap::kGidOutOfService, gid(0x200009)); // several out at once
    auto served_locally = [&](std::uint64_t dest) {
        port.sa.dispatch(from_lid(kOwnLid, path_request(++port.tid, dest)));
        const auto sent = port.transport.take();
        REQUIRE(sent.size() == 1);
        return sent[0].to.lid == kOwnLid;
    };
    auto ask_key = [&](std::uint64_t dest) {
        const auto req = path_request(1, dest);
        return cache::PathQueryKey::from_request(req[3], mad::load_be64(req, 48),
                                                 mad::Bytes{req}.subspan(mad::kSaHeaderSize));
    };
    // Stored after the Report (an answer in flight): named by the question and the record.
    port.store(ask_key(gone), answer_of({path(own, gone, kOwnLid, 11)}));
    // Asked about another port, but the master's record names the GID (its DGID or SGID).
    port.store(ask_key(0x200005), answer_of({path(own, gone, kOwnLid, 11)}));
    port.store(ask_key(0x20000d), answer_of({path(gone, 0x20000d, kOwnLid, 11)}));
    // Unrelated, and "no such path" to it (a negative answer is never stale).
    port.store(ask_key(0x200011), answer_of({path(own, 0x200011, kOwnLid, 12)}));
    port.store(ask_key(0x200009), answer_of({}, mad::status::kSaNoRecords));

    CHECK_FALSE(served_locally(gone));
    CHECK_FALSE(served_locally(0x200005));
    CHECK_FALSE(served_locally(0x20000d));
    CHECK(served_locally(0x200011));
    CHECK(served_locally(0x200009));
    CHECK(port.sa.counters().stale_refused == 3);
    port.report(sa::trap::kGidInService, gid(gone));
    port.store(ask_key(0x200005), answer_of({path(own, gone, kOwnLid, 11)}));
    CHECK(served_locally(0x200005));
}

TEST_CASE("reports: a random cache loses exactly what each Report names", "[coherence][reports]") {
    // Eviction included: the cache holds fewer answers than are stored.
    ReportedPort port(1500);
    std::mt19937_64 rng(7);
    auto pick = [&](std::uint64_t n) { return rng() % n; };
    // GIDs and LIDs: this port's; a few named by many answers; many named by a few.
    auto some_guid = [&]() -> std::uint64_t {
        switch (pick(4)) {
        case 0:
            return 0x100003;
        case 1:
            return 0x200000 + pick(4);
        default:
            return 0x300000 + pick(400);
        }
    };
    auto some_lid = [&]() -> std::uint16_t {
        switch (pick(4)) {
        case 0:
            return kOwnLid;
        case 1:
            return static_cast<std::uint16_t>(8 + pick(4));
        default:
            return static_cast<std::uint16_t>(100 + pick(400));
        }
    };
    auto some_path = [&] {
        auto p = path(some_guid(), some_guid(), some_lid(), some_lid());
        if (pick(20) == 0)
            p.dgid = kMgid;
        return p;
    };
    constexpr std::uint64_t kMasks[] = {kByGids,       kSgid | kDlid, kDgid,         kDlid,
                                        kByGids | kSl, kSgid,         kSlid | kDlid, 0};
    auto store_random = [&] {
        const auto method = pick(8) == 0 ? mad::method::kGetTable : mad::method::kGet;
        const auto q = some_path();
        cache::PathAnswer a;
        const auto records = pick(6);
        if (records == 0)
            a.status = mad::status::kSaNoRecords;
        for (std::uint64_t r = 0; r < (records < 4 ? 1 : records - 2); ++r) {
            if (records == 0)
                break;
            // Mostly the master's echo of the question, sometimes other ports.
            auto rec = q;
            if (pick(4) == 0)
                rec = some_path();
            rec.dlid = some_lid();
            rec.slid = pick(2) ? kOwnLid : some_lid();
            const auto b = rec.bytes();
            a.records.insert(a.records.end(), b.begin(), b.end());
        }
        port.store(key_of(q, kMasks[pick(std::size(kMasks))], method), a);
    };

    std::vector<std::pair<cache::PathQueryKey, cache::PathAnswer>> before;
    for (int round = 0; round < 400; ++round) {
        for (auto n = pick(40) + 1; n > 0; --n)
            store_random();
        // A few stored again (refreshed with other records) and erased.
        before.clear();
        port.cache().for_each([&](const auto& k, const auto& a) { before.emplace_back(k, a); });
        for (int i = 0; i < 3 && !before.empty(); ++i) {
            auto [k, a] = before[pick(before.size())];
            if (pick(2) == 0) {
                a.records.clear();
                a.status = mad::status::kSaNoRecords;
            }
            port.store(k, a);
            port.cache().erase(before[pick(before.size())].first);
        }

        std::uint16_t trap;
        switch (pick(5)) {
        case 0:
            trap = sa::trap::kGidOutOfService;
            break;
        case 1:
            trap = sa::trap::kGidInService;
            break;
        case 2:
            trap = pick(2) ? sa::trap::kMcGroupCreated : sa::trap::kMcGroupDeleted;
            break;
        default:
            trap = pick(2) ? sa::trap::kCapabilityMaskChange : sa::trap::kSystemImageGuidChange;
            break;
        }
        const auto subject =
            (trap == sa::trap::kMcGroupCreated || trap == sa::trap::kMcGroupDeleted)
                ? (pick(2) ? kMgid : gid(some_guid()))
                : gid(some_guid());
        // This port's own GID and LID rarely: they empty most of the cache.
        const auto lid = some_lid();
        if ((subject == gid(0x100003) || lid == kOwnLid) && pick(4) != 0)
            continue;

        KeySet expected;
        port.cache().for_each([&](const auto& k, const auto& a) {
            if (!report_drops(trap, subject, lid, k, a))
                expected.insert(k);
        });
        const auto dropped0 = port.sa.counters().invalidated_entries;
        const auto size0 = port.cache().size();
        port.report(trap, subject, lid);
        INFO("round " << round << ", trap " << trap << ", LID " << lid);
        REQUIRE(port.keys() == expected);
        CHECK(port.cache().size() == expected.size());
        if (trap != sa::trap::kMcGroupCreated && trap != sa::trap::kMcGroupDeleted)
            CHECK(port.sa.counters().invalidated_entries - dropped0 == size0 - expected.size());
        // Trap 65 leaves its GID out of service: trap 64 brings it back for the next round.
        if (trap == sa::trap::kGidOutOfService)
            port.report(sa::trap::kGidInService, subject);
    }
}

TEST_CASE("preload: a Report removes the paths it names and the table answers the rest",
          "[preload][reports]") {
    cache::PreloadTable t;
    const auto now = SteadyClock{}.now();
    const auto own = gid(0x100003);
    // 0x100005 has two LIDs (LMC 1): a Get by its GID is the master's until one goes.
    const auto records =
        table_records({{0x100005, 8}, {0x100005, 9}, {0x100007, 11}, {0x100009, 12}});
    t.replace(std::nullopt, records, now + 1min);
    auto by_gid = [&](std::uint64_t guid) {
        sa::PathRecord q;
        q.sgid = own;
        q.dgid = gid(guid);
        return t.match(q.bytes(), kSgid | kDgid, own, now).has_value();
    };
    auto by_lid = [&](std::uint16_t lid) {
        sa::PathRecord q;
        q.sgid = own;
        q.dlid = lid;
        return t.match(q.bytes(), kSgid | kDlid, own, now).has_value();
    };
    CHECK_FALSE(by_gid(0x100005));
    CHECK(by_lid(8));
    CHECK(t.erase_lid(9) == 1);
    CHECK(t.size() == 3);
    CHECK(by_gid(0x100005)); // one path left to it
    CHECK_FALSE(by_lid(9));
    CHECK(t.erase_gid(gid(0x100007)) == 1);
    CHECK_FALSE(by_gid(0x100007));
    CHECK_FALSE(by_lid(11)); // its LID goes with it
    CHECK(t.erase_gid(gid(0x100007)) == 0);
    CHECK(t.erase_gid(gid(0x100099)) == 0);
    CHECK(t.erase_lid(99) == 0);
    CHECK(t.size() == 2);
    CHECK(t.size_of(std::nullopt) == 2);
    CHECK(by_gid(0x100009));
    CHECK(by_lid(12));

    SECTION("a renewal with the records it had is a change; without them, none") {
        CHECK(t.replace(std::nullopt, records, now + 1min));
        CHECK_FALSE(t.replace(std::nullopt, records, now + 1min));
        CHECK(t.size() == 4);
        CHECK(by_lid(11));
        t.erase_lid(9);
        t.erase_gid(gid(0x100007));
        CHECK_FALSE(
            t.replace(std::nullopt, table_records({{0x100005, 8}, {0x100009, 12}}), now + 1min));
        // The same paths in another order: no Get's answer depends on it (one match or none).
        CHECK_FALSE(
            t.replace(std::nullopt, table_records({{0x100009, 12}, {0x100005, 8}}), now + 1min));
        CHECK(t.replace(std::nullopt, table_records({{0x100009, 12}, {0x100005, 9}}),
                        now + 1min)); // a path's DLID changed
    }
    SECTION("trap 65 about this port, or 144 from its LID, empties its table") {
        t.replace(0x8001, table_records({{0x100005, 8}}), now + 1min);
        CHECK(t.erase_gid(own) == 3);
        CHECK(t.size() == 0);
        t.replace(std::nullopt, records, now + 1min);
        t.replace(0x8001, table_records({{0x100005, 8}}), now + 1min);
        CHECK(t.erase_lid(kOwnLid) == 5);
        CHECK(t.size() == 0);
        CHECK_FALSE(by_lid(12));
        t.replace(std::nullopt, records, now + 1min);
        CHECK(by_lid(12));
    }
}

TEST_CASE("preload: each path is answered with the master's very record, whatever its SL, MTU, "
          "rate, lifetime or subnet prefix",
          "[preload]") {
    cache::PreloadTable t;
    const auto now = SteadyClock{}.now();
    const auto own = gid(0x100003);
    // Paths that share little: a table keeps what they share once, and must give back each.
    std::vector<sa::PathRecord> paths;
    for (std::uint16_t i = 0; i < 40; ++i) {
        sa::PathRecord r;
        r.sgid = own;
        r.dgid = gid(0x200000 + i);
        if (i % 7 == 0)
            r.dgid.raw[7] = 0x42; // another subnet prefix
        r.slid = kOwnLid;
        r.dlid = static_cast<std::uint16_t>(100 + i);
        r.reversible = true;
        r.numb_path = 1;
        r.pkey = 0xffff;
        r.sl = static_cast<std::uint8_t>(i % 3);
        r.mtu_selector = 2;
        r.mtu = static_cast<std::uint8_t>(4 + i % 2);
        r.rate_selector = 2;
        r.rate = static_cast<std::uint8_t>(i % 5 == 0 ? 3 : 7);
        r.packet_life_selector = 2;
        r.packet_life = static_cast<std::uint8_t>(16 + i % 4);
        r.hop_limit = static_cast<std::uint8_t>(i % 7 == 0 ? 64 : 0);
        r.preference = 2;
        paths.push_back(r);
    }
    std::vector<std::uint8_t> records;
    for (const auto& r : paths) {
        const auto b = r.bytes();
        records.insert(records.end(), b.begin(), b.end());
    }
    t.replace(std::nullopt, records, now + 1min);
    REQUIRE(t.size() == paths.size());
    auto expected = [](sa::PathRecord r) {
        r.preference = 0; // a Get's answer
        const auto b = r.bytes();
        cache::PreloadTable::Record out{};
        std::copy(b.begin(), b.end(), out.begin());
        return out;
    };
    auto answers = [&](const sa::PathRecord& r) {
        sa::PathRecord by_gid, by_lid;
        by_gid.sgid = by_lid.sgid = own;
        by_gid.dgid = r.dgid;
        by_lid.dlid = r.dlid;
        const auto a = t.match(by_gid.bytes(), kSgid | kDgid, own, now);
        const auto b = t.match(by_lid.bytes(), kSgid | kDlid, own, now);
        return a && b && *a == expected(r) && *b == expected(r);
    };
    for (const auto& r : paths)
        CHECK(answers(r));
    // A DGID with another prefix but the same interface ID is another port: no answer.
    auto other = paths[3];
    other.dgid.raw[7] ^= 0x42;
    sa::PathRecord q;
    q.sgid = own;
    q.dgid = other.dgid;
    CHECK_FALSE(t.match(q.bytes(), kSgid | kDgid, own, now));

    // Removing some leaves the rest exact, and a renewal with one field changed is a change.
    CHECK(t.erase_gid(paths[5].dgid) == 1);
    CHECK(t.erase_lid(paths[6].dlid) == 1);
    for (std::size_t i = 0; i < paths.size(); ++i)
        CHECK(answers(paths[i]) == (i != 5 && i != 6));
    CHECK(t.replace(std::nullopt, records, now + 1min));
    CHECK_FALSE(t.replace(std::nullopt, records, now + 1min));
    auto changed = records;
    changed[11 * sa::PathRecord::kSize + sa::pr_offset::kQosClassSl + 1] ^= 0x1; // path 11's SL
    CHECK(t.replace(std::nullopt, changed, now + 1min));
}
