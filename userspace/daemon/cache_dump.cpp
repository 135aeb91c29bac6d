#include "daemon/cache_dump.hpp"

#include "ib/mad.hpp"
#include "ib/path_record.hpp"

#include <chrono>
#include <cstdio>

namespace localsa {

nlohmann::json dump_cache(const cache::PathCache& cache) {
    nlohmann::json entries = nlohmann::json::array();
    const auto now = cache::Clock::now();
    cache.for_each([&](const cache::PathQueryKey& key, const cache::PathAnswer& answer) {
        nlohmann::json records = nlohmann::json::array();
        for (std::size_t off = 0; off + sa::PathRecord::kSize <= answer.records.size();
             off += sa::PathRecord::kSize) {
            const auto pr = sa::PathRecord::unpack(
                mad::Bytes{answer.records}.subspan(off, sa::PathRecord::kSize));
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
        std::snprintf(mask, sizeof mask, "0x%016llx",
                      static_cast<unsigned long long>(key.comp_mask));
        entries.push_back(
            {{"method", mad::method_name(key.method)},
             {"comp_mask", mask},
             {"status", mad::status_name(answer.status)},
             {"expires_in_ms",
              std::chrono::duration_cast<std::chrono::milliseconds>(answer.expires - now).count()},
             {"records", records}});
    });
    return entries;
}

} // namespace localsa
