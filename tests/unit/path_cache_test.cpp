// The PathRecord cache's compact store: inline and out-of-line entries, the open-addressing
// index (collisions, growth, erase), expiry, eviction and the refresh queue.
#include "engine/cache/path_cache.hpp"
#include "fake_transport.hpp"
#include "ib/constants.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

using namespace localsa;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kMask =
    sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kReversible | sa::pr_mask::kNumbPath;

sa::PathRecord question(std::uint64_t dguid) {
    sa::PathRecord pr;
    pr.sgid = test::gid(0x100003);
    pr.dgid = test::gid(dguid);
    pr.reversible = true;
    pr.numb_path = 1;
    return pr;
}

cache::PathQueryKey key_for(std::uint64_t dguid, std::uint64_t mask = kMask,
                            std::uint8_t method = mad::method::kGet) {
    const auto rec = question(dguid).bytes();
    return cache::PathQueryKey::from_request(method, mask, rec);
}

// The master's record for the question: it echoes the GIDs, NumbPath 0, its own LIDs.
std::array<std::uint8_t, 64> master_record(std::uint64_t dguid, std::uint16_t dlid) {
    auto pr = question(dguid);
    pr.numb_path = 0;
    pr.dlid = dlid;
    pr.slid = test::kOwnLid;
    pr.pkey = 0xffff;
    pr.mtu = 4;
    pr.rate = 3;
    return pr.bytes();
}

cache::PathAnswer answer_with(std::initializer_list<std::array<std::uint8_t, 64>> records,
                              Clock::time_point expires) {
    cache::PathAnswer a;
    for (const auto& r : records)
        a.records.insert(a.records.end(), r.begin(), r.end());
    a.refresh_at = expires - 1min;
    a.expires = expires;
    return a;
}

bool same_bytes(mad::Bytes a, mad::Bytes b) {
    return std::ranges::equal(a, b);
}

} // namespace

TEST_CASE("path cache: one record is stored inline and found again", "[cache]") {
    cache::PathCache c(100);
    const auto now = SteadyClock{}.now();
    const auto rec = master_record(0x200001, 0x10);
    c.store(key_for(0x200001), answer_with({rec}, now + 1h));
    CHECK(c.size() == 1);
    CHECK(c.out_of_line_entries() == 0);
    const auto hit = c.find(key_for(0x200001), now);
    REQUIRE(hit);
    CHECK(hit->status == 0);
    CHECK(hit->record_count() == 1);
    CHECK(same_bytes(hit->records, rec));
    CHECK(hit->expires == now + 1h);
    CHECK(hit->refresh_at <= now + 59min);
    CHECK(hit->refresh_at > now + 59min - 1ms);
    CHECK_FALSE(c.find(key_for(0x200002), now));
    // The two-step look-up (hash and prefetch first) finds the same.
    const auto h = c.prefetch(key_for(0x200001));
    CHECK(h == cache::PathQueryKeyHash{}(key_for(0x200001)));
    REQUIRE(c.find(key_for(0x200001), h, now));
    CHECK(same_bytes(c.find(key_for(0x200001), h, now)->records, rec));
    // The same fields with another mask or method are another question.
    CHECK_FALSE(c.find(key_for(0x200001, kMask | sa::pr_mask::kPKey), now));
    CHECK_FALSE(c.find(key_for(0x200001, kMask, mad::method::kGetTable), now));
    // for_each hands out exactly the stored key and answer.
    std::size_t seen = 0;
    c.for_each([&](const cache::PathQueryKey& k, const cache::PathAnswer& a) {
        ++seen;
        CHECK(k == key_for(0x200001));
        CHECK(same_bytes(a.records, rec));
    });
    CHECK(seen == 1);
}

TEST_CASE("path cache: a key far from its record keeps the whole key", "[cache]") {
    cache::PathCache c(100);
    const auto now = SteadyClock{}.now();
    // The record names other GIDs than asked: more than 4 bytes differ.
    const auto rec = master_record(0x7777777777ULL, 0x10);
    const auto key = key_for(0x200001);
    c.store(key, answer_with({rec}, now + 1h));
    CHECK(c.out_of_line_entries() == 1);
    const auto hit = c.find(key, now);
    REQUIRE(hit);
    CHECK(same_bytes(hit->records, rec));
    CHECK_FALSE(c.find(key_for(0x7777777777ULL), now));
    c.for_each([&](const cache::PathQueryKey& k, const cache::PathAnswer&) { CHECK(k == key); });
    // A key with bytes outside its mask (not from a request) is kept exactly too.
    cache::PathQueryKey odd;
    odd.masked[8] = 7;
    c.store(odd, answer_with({rec}, now + 1h));
    CHECK(c.find(odd, now));
    auto due = c.due_for_refresh(now + 2h, 10);
    CHECK(std::ranges::count(due, odd) == 1);
    CHECK(std::ranges::count(due, key) == 1);
}

TEST_CASE("path cache: several records and no record are stored out of line", "[cache]") {
    cache::PathCache c(100);
    const auto now = SteadyClock{}.now();
    const auto r1 = master_record(0x200001, 0x10), r2 = master_record(0x200001, 0x11),
               r3 = master_record(0x200001, 0x12);
    const auto table_key = key_for(0x200001, kMask, mad::method::kGetTable);
    c.store(table_key, answer_with({r1, r2, r3}, now + 1h));
    cache::PathAnswer none;
    none.status = mad::status::kSaNoRecords;
    none.refresh_at = none.expires = now + 1s;
    c.store(key_for(0x200009), none);
    CHECK(c.out_of_line_entries() == 2);

    const auto table = c.find(table_key, now);
    REQUIRE(table);
    CHECK(table->record_count() == 3);
    CHECK(same_bytes(table->records.subspan(64, 64), r2));
    CHECK_FALSE(table->negative());
    const auto neg = c.find(key_for(0x200009), now);
    REQUIRE(neg);
    CHECK(neg->negative());
    CHECK(neg->status == mad::status::kSaNoRecords);
    CHECK(neg->records.empty());
    // Negative entries are not refreshed, only expire (after their own TTL).
    CHECK(c.due_for_refresh(now + 1h, 10).size() == 1); // the table only
    CHECK_FALSE(c.find(key_for(0x200009), now + 1s));
    CHECK(c.size() == 1);
    // Re-storing a question replaces its answer, in place.
    c.store(table_key, answer_with({r2}, now + 1h));
    CHECK(c.size() == 1);
    CHECK(c.find(table_key, now)->record_count() == 1);
    CHECK(c.out_of_line_entries() == 0);
}

TEST_CASE("path cache: keys with the same hash tag keep their own answers", "[cache]") {
    // Find two questions whose hashes agree in the upper 32 bits: the index's tag and home slot.
    std::unordered_map<std::uint32_t, std::uint64_t> by_tag;
    std::uint64_t a = 0, b = 0;
    for (std::uint64_t g = 0x300000; b == 0; ++g) {
        const auto tag = static_cast<std::uint32_t>(cache::PathQueryKeyHash{}(key_for(g)) >> 32);
        const auto [it, fresh] = by_tag.emplace(tag, g);
        if (!fresh)
            a = it->second, b = g;
    }
    INFO("colliding DGIDs " << a << " and " << b);
    cache::PathCache c(100);
    const auto now = SteadyClock{}.now();
    c.store(key_for(a), answer_with({master_record(a, 0xa)}, now + 1h));
    CHECK_FALSE(c.find(key_for(b), now)); // same tag, other question: a miss
    c.store(key_for(b), answer_with({master_record(b, 0xb)}, now + 1h));
    REQUIRE(c.size() == 2);
    CHECK(mad::load_be16(c.find(key_for(a), now)->records, 40) == 0xa);
    CHECK(mad::load_be16(c.find(key_for(b), now)->records, 40) == 0xb);
    // Erasing the first leaves the second reachable (backward shift over the shared home).
    CHECK(c.erase_if([&](const auto& k, const auto&) { return k == key_for(a); }) == 1);
    CHECK_FALSE(c.find(key_for(a), now));
    REQUIRE(c.find(key_for(b), now));
    CHECK(mad::load_be16(c.find(key_for(b), now)->records, 40) == 0xb);
}

TEST_CASE("path cache: the index grows and erases keep every other key reachable", "[cache]") {
    constexpr std::uint64_t n = 20'000;
    cache::PathCache c(n);
    const auto now = SteadyClock{}.now();
    for (std::uint64_t i = 0; i < n; ++i)
        c.store(
            key_for(0x400000 + i),
            answer_with({master_record(0x400000 + i, static_cast<std::uint16_t>(i))}, now + 1h));
    REQUIRE(c.size() == n);
    CHECK(c.out_of_line_entries() == 0);
    CHECK(c.shapes() == 1);
    CHECK(c.index_capacity() * 4 >= n * 5); // load factor <= 0.8
    CHECK(c.index_capacity() <= n * 4);
    // Erase every third question; everything else must still be found, with its own answer.
    const auto erased = c.erase_if([](const cache::PathQueryKey& k, const auto&) {
        return mad::load_be64(k.masked, 16) % 3 == 0;
    });
    std::size_t thirds = 0;
    for (std::uint64_t i = 0; i < n; ++i)
        thirds += (0x400000 + i) % 3 == 0;
    CHECK(erased == thirds);
    CHECK(c.size() == n - erased);
    std::size_t found = 0, wrong = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
        const auto hit = c.find(key_for(0x400000 + i), now);
        if ((0x400000 + i) % 3 == 0) {
            wrong += hit.has_value();
            continue;
        }
        found += hit.has_value();
        wrong += hit && mad::load_be16(hit->records, 40) != static_cast<std::uint16_t>(i);
    }
    CHECK(wrong == 0);
    CHECK(found == n - erased);
    // Freed entries are reused: storing the erased ones again takes no new chunk of entries.
    for (std::uint64_t i = 0; i < n; ++i)
        if ((0x400000 + i) % 3 == 0)
            c.store(key_for(0x400000 + i), answer_with({master_record(0x400000 + i, 1)}, now + 1h));
    CHECK(c.size() == n);
    // Expired entries are dropped by the look-up that finds them.
    CHECK_FALSE(c.find(key_for(0x400001), now + 2h));
    CHECK(c.size() == n - 1);
    c.clear();
    CHECK(c.size() == 0);
    CHECK(c.shapes() == 0);
    CHECK_FALSE(c.find(key_for(0x400002), now));
}

TEST_CASE("path cache: full, an entry makes room; none at size 0", "[cache]") {
    const auto now = SteadyClock{}.now();
    cache::PathCache c(4);
    for (std::uint64_t i = 0; i < 10; ++i)
        c.store(key_for(0x500000 + i), answer_with({master_record(0x500000 + i, 1)}, now + 1h));
    CHECK(c.size() == 4);
    CHECK(c.find(key_for(0x500009), now)); // the newest is always there
    std::size_t reachable = 0;
    for (std::uint64_t i = 0; i < 10; ++i)
        reachable += c.find(key_for(0x500000 + i), now).has_value();
    CHECK(reachable == 4);
    cache::PathCache off(0);
    off.store(key_for(1), answer_with({master_record(1, 1)}, now + 1h));
    CHECK(off.size() == 0);
    CHECK_FALSE(off.find(key_for(1), now));
}

TEST_CASE("path cache: a question stored again is refreshed once, at its new time", "[cache]") {
    cache::PathCache c(10);
    const auto now = SteadyClock{}.now();
    auto a = answer_with({master_record(0x600000, 1)}, now + 1h);
    a.refresh_at = now + 10s;
    c.store(key_for(0x600000), a);
    a.refresh_at = now + 20s;
    c.store(key_for(0x600000), a);
    CHECK(c.due_for_refresh(now + 15s, 10).empty());
    const auto due = c.due_for_refresh(now + 25s, 10);
    REQUIRE(due.size() == 1);
    CHECK(due[0] == key_for(0x600000));
    CHECK(c.due_for_refresh(now + 25s, 10).empty());
    // Erased and its entry reused by another question: the old queue item is not handed out.
    c.erase_if([](const auto&, const auto&) { return true; });
    a.refresh_at = now + 1h - 1ms;
    c.store(key_for(0x600001), a);
    CHECK(c.due_for_refresh(now + 30s, 10).empty());
}

TEST_CASE("path cache: the refresh queue keeps its order and times over months of uptime",
          "[cache]") {
    // The queue keeps times in milliseconds within a window of 49 days, moved as time goes on:
    // across many moves nothing is handed out early, late or twice.
    cache::PathCache c(64);
    const auto t0 = Clock::time_point{} + std::chrono::hours{24 * 1000};
    auto store_at = [&](std::uint64_t dguid, Clock::time_point refresh_at) {
        auto a = answer_with({master_record(dguid, 8)}, refresh_at + 5min);
        a.refresh_at = refresh_at;
        a.used_at = refresh_at - 1s;
        c.store(key_for(dguid), a);
    };
    for (int day = 0; day < 200; day += 10) {
        const auto now = t0 + std::chrono::hours{24 * day};
        store_at(0x100005, now + 1min + 1ms);
        store_at(0x100006, now + 2min);
        CHECK(c.due_for_refresh(now + 1min, 8, 0s).empty());
        auto due = c.due_for_refresh(now + 1min + 1ms, 8, 0s);
        REQUIRE(due.size() == 1);
        CHECK(due[0] == key_for(0x100005));
        CHECK(c.due_for_refresh(now + 2min - 1ms, 8, 0s).empty());
        due = c.due_for_refresh(now + 2min, 8, 0s);
        REQUIRE(due.size() == 1);
        CHECK(due[0] == key_for(0x100006));
        CHECK(c.due_for_refresh(now + 3min, 8, 0s).empty()); // each handed out once
    }
    // One answer waiting while the window moves past its neighbours' times.
    store_at(0x100007, t0 + std::chrono::hours{24 * 260});
    store_at(0x100008, t0 + std::chrono::hours{24 * 230});
    CHECK(c.due_for_refresh(t0 + std::chrono::hours{24 * 230} - 1ms, 8, 0s).empty());
    auto due = c.due_for_refresh(t0 + std::chrono::hours{24 * 230}, 8, 0s);
    REQUIRE(due.size() == 1);
    CHECK(due[0] == key_for(0x100008));
    CHECK(c.due_for_refresh(t0 + std::chrono::hours{24 * 260} - 1ms, 8, 0s).empty());
    due = c.due_for_refresh(t0 + std::chrono::hours{24 * 260}, 8, 0s);
    REQUIRE(due.size() == 1);
    CHECK(due[0] == key_for(0x100007));
}

TEST_CASE("path cache: storage is resident only as far as it is used", "[cache]") {
    // A fleet of small caches (a node holding a few answers) must not cost a 2 MiB chunk each:
    // 200 caches of 10 entries stay far below 200 x 2 MiB of resident memory.
    const auto resident_kb = [] {
        std::ifstream f("/proc/self/status");
        std::string line;
        while (std::getline(f, line))
            if (line.rfind("VmRSS:", 0) == 0)
                return std::stol(line.substr(6));
        return 0L;
    };
    const auto before = resident_kb();
    std::vector<std::unique_ptr<cache::PathCache>> caches;
    const auto now = SteadyClock{}.now();
    for (int i = 0; i < 200; ++i) {
        caches.push_back(std::make_unique<cache::PathCache>(1000));
        for (std::uint64_t d = 0; d < 10; ++d)
            caches.back()->store(key_for(0x200001 + d),
                                 answer_with({master_record(0x200001 + d, 0x10)}, now + 1h));
    }
    const auto grown_kb = resident_kb() - before;
    CHECK(grown_kb < 20 * 1024);
    for (auto& c : caches) {
        CHECK(c->size() == 10);
        CHECK(c->find(key_for(0x200005), now));
    }
}
