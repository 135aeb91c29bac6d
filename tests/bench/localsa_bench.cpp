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
// --paths=N sets the cache size (default 100000). Counters are printed with the results.
#include "daemon/cache_dump.hpp"
#include "engine/local_sa.hpp"
#include "fake_transport.hpp"
#include "ib/response.hpp"

#include <benchmark/benchmark.h>
#include <boost/asio/io_context.hpp>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>

using namespace localsa;

namespace {

std::size_t g_paths = 100'000;

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
    std::size_t k = 0, found = 0;
    for (auto _ : state) {
        const auto& r = reqs[k++ & 4095];
        const auto key = cache::PathQueryKey::from_request(
            r[3], mad::load_be64(r, 48), mad::Bytes{r}.subspan(mad::kSaHeaderSize));
        found += warm.sa->cache().find(key, now).has_value();
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

} // namespace

BENCHMARK(BM_PathRecordGetWarm);
BENCHMARK(BM_PathRecordGetWarmSpread);
BENCHMARK(BM_KeyAndFind);
BENCHMARK(BM_Encode);
BENCHMARK(BM_CacheMemory)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DumpCache)->Iterations(1)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
    // Our own flag first; the rest is Google Benchmark's.
    std::vector<char*> rest;
    for (int i = 0; i < argc; ++i) {
        if (std::strncmp(argv[i], "--paths=", 8) == 0)
            g_paths = std::stoul(argv[i] + 8);
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
