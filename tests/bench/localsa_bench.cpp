// In-process benchmarks of the local SA's hot path over a fake transport:
//   BM_PathRecordGetWarm  one SubnAdmGet(PathRecord) through LocalSa::dispatch on a warm cache
//                         (parse, validate, key, look-up, encode, hand to the transport), over
//                         4,096 prepared requests to random destinations;
//   BM_PathRecordGetWarmSpread  the same, each request to a new random one of all the cached
//                         destinations (the whole table is touched: memory misses included);
//   BM_KeyAndFind         only the cache key construction and look-up;
//   BM_Encode             only the response encoding (make_records_response);
//   BM_CacheMemory        heap bytes per cached path (mallinfo2 before/after filling the cache
//                         through the real miss path: request -> upstream -> master answer;
//                         small chunks and mmapped blocks both counted, and the cache's entry
//                         chunks, which it maps itself).
//   BM_ReportStall        the master's Reports as a leaf-switch reboot sends them (trap 65 about
//                         each of --reports ports, then trap 64 about each, then trap 144 from
//                         each one's LID) against a cache of N answers and a preload table of N
//                         paths: the longest and the median time one Report holds the event
//                         loop (LocalSa::dispatch of the Report: acknowledge, then Coherence),
//                         and the time of a cache hit with no GID and with --reports GIDs out of
//                         service (the stale check of every hit); last, trap 144 from this
//                         port's own LID, which empties the cache (own_lid_ms).
// --paths=N sets the cache size (default 100000), --reports=R the Reports of each trap in
// BM_ReportStall (default 200). Counters are printed with the results.
#include "daemon/cache_dump.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"
#include "fake_transport.hpp"
#include "ib/notice.hpp"
#include "ib/response.hpp"

#include <benchmark/benchmark.h>
#include <boost/asio/io_context.hpp>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>

using namespace localsa;

namespace {

std::size_t g_paths = 100'000;
std::size_t g_reports = 200;

// Keeps only the last MAD sent (a recording fake would grow without bound in a benchmark).
class SinkTransport final : public transport::MadTransport {
public:
    SinkTransport() { state = test::FakeTransport{}.state; }
    bool send(mad::Bytes mad, const transport::MadAddress&, std::chrono::milliseconds) override {
        ++sends;
        last.assign(mad.begin(), mad.end());
        return true;
    }
    const transport::PortState& port() const override { return state; }
    transport::PortState state;
    std::vector<std::uint8_t> last;
    std::uint64_t sends = 0;
};

std::uint64_t dguid(std::size_t i) {
    return 0x200000 + i;
}

// Heap in use: small chunks plus mmapped ones (glibc serves blocks above its mmap threshold,
// 128 KiB at first, by mmap; they are not in uordblks).
std::size_t heap_in_use() {
    const auto m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

// A LocalSa whose cache holds the master's answers for `n` destinations, filled through the
// same path a miss takes in localsad.
struct WarmSa {
    boost::asio::io_context io;
    SteadyClock clock;
    SinkTransport t;
    std::unique_ptr<LocalSa> sa;

    explicit WarmSa(std::size_t n, bool cache_on = true) {
        LocalSaConfig cfg;
        cfg.cache_max_entries = cache_on ? n + 16 : 0;
        sa = std::make_unique<LocalSa>(io.get_executor(), clock, t, cfg);
        for (std::size_t i = 0; i < n; ++i) {
            sa->dispatch(test::from_lid(test::kOwnLid, test::path_request(i + 1, dguid(i))));
            auto upstream = t.last; // the query to the master
            sa->dispatch(test::from_lid(test::kSmLid,
                                        test::master_path_answer(upstream, 0x100 + i % 60000)));
            // Run the completions of cancelled upstream timers (they would pile up otherwise).
            if (i % 256 == 255)
                io.restart(), io.poll();
        }
        io.restart(), io.poll();
    }
};

void BM_PathRecordGetWarm(benchmark::State& state) {
    static WarmSa warm(g_paths);
    std::mt19937_64 rng(42);
    std::vector<transport::InboundMad> reqs;
    for (int i = 0; i < 4096; ++i)
        reqs.push_back(
            test::from_lid(test::kOwnLid, test::path_request(0x9000 + i, dguid(rng() % g_paths))));
    const auto hits0 = warm.sa->counters().pr_cache_hits;
    std::size_t k = 0;
    for (auto _ : state) {
        warm.sa->dispatch(reqs[k++ & 4095]);
        benchmark::DoNotOptimize(warm.t.last.data());
    }
    const auto hits = warm.sa->counters().pr_cache_hits - hits0;
    if (hits != static_cast<std::uint64_t>(state.iterations()) || warm.t.last.size() != 256 ||
        test::status_of(warm.t.last) != 0)
        state.SkipWithError("not every request was a cache hit with status OK");
    state.counters["cache_entries"] = static_cast<double>(warm.sa->cache().size());
    state.SetItemsProcessed(state.iterations());
}

void BM_PathRecordGetWarmSpread(benchmark::State& state) {
    static WarmSa warm(g_paths);
    auto in = test::from_lid(test::kOwnLid, test::path_request(0x9000, dguid(0)));
    std::uint64_t x = 0x9e3779b97f4a7c15ULL; // xorshift: a cheap random destination
    const auto hits0 = warm.sa->counters().pr_cache_hits;
    for (auto _ : state) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // The DGID's interface ID: MAD offset 56 (record) + 8 (DGID) + 8.
        mad::store_be64(in.bytes, 72, dguid(x % g_paths));
        warm.sa->dispatch(in);
        benchmark::DoNotOptimize(warm.t.last.data());
    }
    const auto hits = warm.sa->counters().pr_cache_hits - hits0;
    if (hits != static_cast<std::uint64_t>(state.iterations()) || warm.t.last.size() != 256 ||
        test::status_of(warm.t.last) != 0)
        state.SkipWithError("not every request was a cache hit with status OK");
    state.SetItemsProcessed(state.iterations());
}

void BM_KeyAndFind(benchmark::State& state) {
    static WarmSa warm(g_paths);
    std::mt19937_64 rng(43);
    std::vector<std::vector<std::uint8_t>> reqs;
    for (int i = 0; i < 4096; ++i)
        reqs.push_back(test::path_request(0x9000 + i, dguid(rng() % g_paths)));
    const auto now = warm.clock.now();
    auto& paths = warm.sa->coherence_parts().cache;
    std::size_t k = 0, found = 0;
    for (auto _ : state) {
        const auto& r = reqs[k++ & 4095];
        const auto key = cache::PathQueryKey::from_request(
            r[3], mad::load_be64(r, 48), mad::Bytes{r}.subspan(mad::kSaHeaderSize));
        found += paths.find(key, now).has_value();
    }
    if (found != static_cast<std::size_t>(state.iterations()))
        state.SkipWithError("miss");
    state.SetItemsProcessed(state.iterations());
}

void BM_Encode(benchmark::State& state) {
    const auto req = test::path_request(7, dguid(7));
    const auto ans = test::master_path_answer(req, 0x123);
    const std::vector<std::uint8_t> rec(ans.begin() + 56, ans.begin() + 120);
    for (auto _ : state) {
        auto out = sa::make_records_response(req, sa::PathRecord::kSize, rec);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_CacheMemory(benchmark::State& state) {
    double per_path = 0, total = 0;
    for (auto _ : state) {
        malloc_trim(0);
        const auto before = heap_in_use();
        auto* warm = new WarmSa(g_paths);
        // The cache's entry chunks are mapped outside the heap: counted with it.
        const auto after = heap_in_use() + warm->sa->cache().mapped_bytes();
        state.PauseTiming();
        total = static_cast<double>(after - before);
        per_path = total / static_cast<double>(g_paths);
        if (warm->sa->cache().size() != g_paths)
            state.SkipWithError("cache not filled");
        delete warm;
        state.ResumeTiming();
    }
    // Where the bytes go: the index and the entries not stored inline.
    {
        WarmSa warm(g_paths);
        const auto& c = warm.sa->cache();
        state.counters["index_slots_per_path"] =
            static_cast<double>(c.index_capacity()) / static_cast<double>(c.size());
        state.counters["out_of_line_entries"] = static_cast<double>(c.out_of_line_entries());
        // The Reports' index: a slot per GID or LID an answer names (this port's are counted).
        state.counters["mention_slots_per_path"] =
            static_cast<double>(c.mention_capacity()) / static_cast<double>(c.size());
    }
    {
        // The same fill with the cache switched off: what grows outside the cache.
        malloc_trim(0);
        const auto before = heap_in_use();
        auto* off = new WarmSa(g_paths, false);
        state.counters["cache_off_bytes_per_path"] =
            static_cast<double>(heap_in_use() - before) / static_cast<double>(g_paths);
        delete off;
    }
    {
        malloc_trim(0);
        const auto before = heap_in_use();
        auto* bare = new cache::PathCache(g_paths + 16);
        for (std::size_t i = 0; i < g_paths; ++i) {
            const auto req = test::path_request(i + 1, dguid(i));
            const auto key = cache::PathQueryKey::from_request(
                req[3], mad::load_be64(req, 48), mad::Bytes{req}.subspan(mad::kSaHeaderSize));
            cache::PathAnswer a;
            a.records.assign(req.begin() + 56, req.begin() + 120);
            bare->store(key, std::move(a));
        }
        state.counters["bare_cache_bytes_per_path"] =
            static_cast<double>(heap_in_use() + bare->mapped_bytes() - before) /
            static_cast<double>(g_paths);
        delete bare;
    }
    state.counters["paths"] = static_cast<double>(g_paths);
    state.counters["bytes_per_path"] = per_path;
    state.counters["heap_bytes"] = total;
    // The parts of one entry (std::unordered_map node: next pointer, key, value, cached hash).
    state.counters["sizeof_key"] = sizeof(cache::PathQueryKey);
    state.counters["sizeof_answer"] = sizeof(cache::PathAnswer);
}

// `localsactl dump` of a full cache: the whole dump's time and the longest slice, i.e. the longest
// the thread that serves MADs is held (--paths=1000000 for the figure in docs/benchmarks.md).
void BM_DumpCache(benchmark::State& state) {
    cache::PathCache cache(g_paths + 16);
    for (std::size_t i = 0; i < g_paths; ++i) {
        const auto req = test::path_request(i + 1, dguid(i));
        const auto key = cache::PathQueryKey::from_request(
            req[3], mad::load_be64(req, 48), mad::Bytes{req}.subspan(mad::kSaHeaderSize));
        cache::PathAnswer a;
        a.records.assign(req.begin() + 56, req.begin() + 120);
        a.refresh_at = a.expires = SteadyClock{}.now() + std::chrono::hours{1};
        cache.store(key, a);
    }
    // Served in slices (one per turn of the event loop): the longest slice is the longest the
    // loop goes without serving a MAD.
    std::size_t bytes = 0, slices = 0;
    double longest_ms = 0;
    const SteadyClock clock;
    for (auto _ : state) {
        auto dump = cache_dump_stream(cache, clock);
        std::string out;
        bytes = slices = 0;
        longest_ms = 0;
        for (bool more = true; more;) {
            out.clear();
            const auto start = std::chrono::steady_clock::now();
            more = dump->next(out);
            const std::chrono::duration<double, std::milli> took =
                std::chrono::steady_clock::now() - start;
            longest_ms = std::max(longest_ms, took.count());
            bytes += out.size();
            ++slices;
        }
    }
    state.counters["paths"] = static_cast<double>(g_paths);
    state.counters["json_bytes"] = static_cast<double>(bytes);
    state.counters["slices"] = static_cast<double>(slices);
    state.counters["longest_slice_ms"] = longest_ms;
}

// The DLID the master answers with for destination `i` (WarmSa, report_table): LIDs repeat
// every 60,000 destinations, as a subnet has at most 48K unicast LIDs.
std::uint16_t dlid_of(std::size_t i) {
    return static_cast<std::uint16_t>(0x100 + i % 60000);
}

// A Report from the master: `trap` about the port `subject` (traps 64-67) or from `issuer_lid`.
std::vector<std::uint8_t> report_mad(std::uint16_t trap, const sa::Gid& subject,
                                     std::uint16_t issuer_lid, std::uint64_t tid) {
    mad::SaMad r;
    r.header.method = mad::method::kReport;
    r.header.attr_id = mad::attr::kNotice;
    r.header.tid = tid;
    sa::Notice n;
    n.trap_number = trap;
    n.issuer_lid = issuer_lid;
    std::copy(subject.raw.begin(), subject.raw.end(), n.data_details.begin() + 6);
    n.pack(r.data);
    return r.pack();
}

// This port's preload table: one path to each of the `n` destinations of WarmSa.
std::vector<std::uint8_t> report_table(std::size_t n) {
    std::vector<std::uint8_t> out;
    out.reserve(n * sa::PathRecord::kSize);
    for (std::size_t i = 0; i < n; ++i) {
        sa::PathRecord r;
        r.sgid = test::gid(0x100003);
        r.dgid = test::gid(dguid(i));
        r.slid = test::kOwnLid;
        r.dlid = dlid_of(i);
        r.reversible = true;
        r.pkey = 0xffff;
        r.mtu = 4;
        r.rate = 7;
        r.packet_life = 18;
        const auto b = r.bytes();
        out.insert(out.end(), b.begin(), b.end());
    }
    return out;
}

struct Stalls {
    std::vector<double> us;
    double max() const { return us.empty() ? 0 : *std::max_element(us.begin(), us.end()); }
    double median() {
        if (us.empty())
            return 0;
        std::nth_element(us.begin(), us.begin() + static_cast<long>(us.size() / 2), us.end());
        return us[us.size() / 2];
    }
};

void BM_ReportStall(benchmark::State& state) {
    spdlog::set_level(spdlog::level::warn); // a Report logs a line: not what is measured
    const auto n = g_paths;
    const auto reports = std::min(g_reports, n / 2);
    const auto stride = n / reports;
    WarmSa warm(n);
    auto& sa = *warm.sa;
    const auto now = warm.clock.now();
    sa.coherence_parts().preload.replace(std::nullopt, report_table(n), now + std::chrono::hours{1},
                                         now);
    coherence::CoherenceConfig cc;
    cc.subscribe = false;
    cc.preload = false;
    coherence::Coherence coh(warm.io.get_executor(), sa.coherence_parts(), cc);

    // Gets to destinations no Report is about: all hits, each through the stale check.
    std::mt19937_64 rng(44);
    std::vector<transport::InboundMad> gets;
    for (int i = 0; i < 4096; ++i) {
        auto d = rng() % n;
        if (d % stride == 0)
            ++d;
        gets.push_back(test::from_lid(test::kOwnLid, test::path_request(0x9000 + i, dguid(d))));
    }
    auto hit_ns = [&] {
        constexpr int kGets = 200'000;
        const auto hits0 = sa.counters().pr_cache_hits;
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kGets; ++i)
            sa.dispatch(gets[static_cast<std::size_t>(i) & 4095]);
        const std::chrono::duration<double, std::nano> took =
            std::chrono::steady_clock::now() - start;
        if (sa.counters().pr_cache_hits - hits0 != kGets)
            state.SkipWithError("a Get was not a cache hit");
        return took.count() / kGets;
    };
    std::uint64_t tid = 0x7000'0000;
    auto report = [&](std::uint16_t trap, std::size_t dest, Stalls& stalls) {
        const auto in = test::from_lid(
            test::kSmLid, report_mad(trap, test::gid(dguid(dest)), dlid_of(dest), ++tid));
        const auto start = std::chrono::steady_clock::now();
        sa.dispatch(in);
        const std::chrono::duration<double, std::micro> took =
            std::chrono::steady_clock::now() - start;
        stalls.us.push_back(took.count());
    };

    Stalls out_of_service, in_service, capability;
    double hit_before = 0, hit_after = 0;
    std::size_t dropped_65 = 0, dropped_144 = 0, preload_left = 0, dropped_own = 0;
    double own_lid_ms = 0;
    for (auto _ : state) {
        hit_before = hit_ns();
        const auto size0 = sa.cache().size();
        for (std::size_t r = 0; r < reports; ++r)
            report(sa::trap::kGidOutOfService, r * stride, out_of_service);
        dropped_65 = size0 - sa.cache().size();
        hit_after = hit_ns(); // `reports` GIDs out of service
        for (std::size_t r = 0; r < reports; ++r)
            report(sa::trap::kGidInService, r * stride, in_service);
        const auto size1 = sa.cache().size();
        for (std::size_t r = 0; r < reports; ++r)
            report(sa::trap::kCapabilityMaskChange, r * stride + 1, capability);
        dropped_144 = size1 - sa.cache().size();
        preload_left = sa.preload().size();
        // Trap 144 from this port's own LID, which every answer and path names: all go.
        const auto size2 = sa.cache().size();
        auto in =
            test::from_lid(test::kSmLid, report_mad(sa::trap::kCapabilityMaskChange,
                                                    test::gid(0x100003), test::kOwnLid, ++tid));
        const auto start = std::chrono::steady_clock::now();
        sa.dispatch(in);
        own_lid_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        dropped_own = size2 - sa.cache().size();
    }
    if (dropped_65 != reports)
        state.SkipWithError("trap 65 did not drop exactly the answers about its GID");
    state.counters["paths"] = static_cast<double>(n);
    state.counters["reports"] = static_cast<double>(reports);
    state.counters["t65_max_us"] = out_of_service.max();
    state.counters["t65_median_us"] = out_of_service.median();
    state.counters["t64_max_us"] = in_service.max();
    state.counters["t64_median_us"] = in_service.median();
    state.counters["t144_max_us"] = capability.max();
    state.counters["t144_median_us"] = capability.median();
    state.counters["t144_dropped"] = static_cast<double>(dropped_144);
    state.counters["preload_left"] = static_cast<double>(preload_left);
    state.counters["hit_ns"] = hit_before;
    state.counters["hit_ns_gids_out"] = hit_after;
    state.counters["own_lid_ms"] = own_lid_ms;
    state.counters["own_lid_dropped"] = static_cast<double>(dropped_own);
}

} // namespace

BENCHMARK(BM_PathRecordGetWarm);
BENCHMARK(BM_PathRecordGetWarmSpread);
BENCHMARK(BM_KeyAndFind);
BENCHMARK(BM_Encode);
BENCHMARK(BM_CacheMemory)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DumpCache)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReportStall)->Iterations(1)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
    // Our own flag first; the rest is Google Benchmark's.
    std::vector<char*> rest;
    for (int i = 0; i < argc; ++i) {
        if (std::strncmp(argv[i], "--paths=", 8) == 0)
            g_paths = std::stoul(argv[i] + 8);
        else if (std::strncmp(argv[i], "--reports=", 10) == 0)
            g_reports = std::stoul(argv[i] + 10);
        else
            rest.push_back(argv[i]);
    }
    int n = static_cast<int>(rest.size());
    benchmark::Initialize(&n, rest.data());
    if (benchmark::ReportUnrecognizedArguments(n, rest.data()))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
