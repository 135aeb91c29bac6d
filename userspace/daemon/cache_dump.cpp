#include "daemon/cache_dump.hpp"

#include "ib/mad.hpp"
#include "ib/path_record.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>

namespace localsa {

namespace {

nlohmann::json entry_json(const cache::PathQueryKey& key, const cache::PathAnswer& answer,
                          Clock::time_point now) {
    nlohmann::json records = nlohmann::json::array();
    for (std::size_t off = 0; off + sa::PathRecord::kSize <= answer.records.size();
         off += sa::PathRecord::kSize) {
        const auto pr =
            sa::PathRecord::unpack(mad::Bytes{answer.records}.subspan(off, sa::PathRecord::kSize));
        records.push_back({{"sgid", pr.sgid.str()},
                           {"dgid", pr.dgid.str()},
                           {"slid", pr.slid},
                           {"dlid", pr.dlid},
                           {"sl", pr.sl},
                           {"mtu", pr.mtu},
                           {"rate", pr.rate},
                           {"pkt_life", pr.packet_life},
                           {"pkey", pr.pkey}});
    }
    char mask[24];
    std::snprintf(mask, sizeof mask, "0x%016llx", static_cast<unsigned long long>(key.comp_mask));
    return {{"method", mad::method_name(key.method)},
            {"comp_mask", mask},
            {"status", mad::status_name(answer.status)},
            {"expires_in_ms",
             std::chrono::duration_cast<std::chrono::milliseconds>(answer.expires - now).count()},
            {"records", records}};
}

class CacheDumpStream : public control::ReplyStream {
public:
    CacheDumpStream(const cache::PathCache& cache, const Clock& clock, std::size_t per_slice)
        : cache_(cache), clock_(clock), per_slice_(per_slice ? per_slice : 1) {}

    bool next(std::string& out) override {
        if (!started_) {
            out += "{\"entries\":[";
            started_ = true;
        }
        const auto now = clock_.now();
        const bool more =
            cache_.scan(cursor_, per_slice_, [&](const auto& key, const auto& answer) {
                if (!first_)
                    out += ',';
                first_ = false;
                out += entry_json(key, answer, now).dump();
            });
        if (!more)
            out += "]}\n";
        return more;
    }

private:
    const cache::PathCache& cache_;
    const Clock& clock_;
    std::size_t per_slice_;
    cache::PathCache::ScanCursor cursor_;
    bool started_ = false;
    bool first_ = true;
};

} // namespace

std::unique_ptr<control::ReplyStream> cache_dump_stream(const cache::PathCache& cache,
                                                        const Clock& clock, std::size_t per_slice) {
    return std::make_unique<CacheDumpStream>(cache, clock, per_slice);
}

} // namespace localsa
