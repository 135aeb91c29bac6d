#include "engine/coherence/preloader.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

namespace localsa::coherence {

using namespace std::chrono_literals;

Preloader::Preloader(boost::asio::any_io_executor executor, Clock& clock,
                     transport::MadTransport& transport, upstream::UpstreamClient& upstream,
                     cache::PreloadTable& table, sa::PathRecordService& path_records,
                     Counters& counters,
                     const std::unordered_set<sa::Gid, sa::GidHash>& out_of_service,
                     PreloaderConfig config)
    : clock_(clock), transport_(transport), upstream_(upstream), table_(table),
      path_records_(path_records), counters_(counters), out_of_service_(out_of_service),
      config_(config), timer_(clock, executor), renew_timer_(clock, executor) {}

void Preloader::schedule() {
    if (!config_.enabled) {
        state_ = "disabled";
        return;
    }
    state_ = "waiting";
    timer_.expires_after(jitter_.up_to(config_.spread));
    timer_.async_wait([this](auto ec) {
        if (!ec)
            start();
    });
}

void Preloader::reset() {
    ++generation_;
    table_.clear();
    path_records_.set_table_renewal_failed(false);
    running_ = false;
    stop();
    state_ = config_.enabled ? "waiting" : "disabled";
}

void Preloader::stop() {
    timer_.cancel();
    renew_timer_.cancel();
}

void Preloader::start() {
    if (running_ || !transport_.port().active())
        return;
    // One table per partition, asked with the PKey the kernel's consumers ask with: rdma_cm
    // and ipoib always set the full-member bit, also where the port's table holds the limited
    // one (keyed by 0x7fff, the table would never match their 0xffff). One transaction per node
    // and partition is all a cold start costs the master. A Get without a PKey reads through
    // (the master picks the PKey; the table cannot know which).
    std::set<std::uint16_t> distinct;
    for (auto p : transport_.port().pkeys)
        if ((p & sa::kPKeyPartition) != 0)
            distinct.insert(static_cast<std::uint16_t>(p | sa::kPKeyFullMember));
    std::vector<std::optional<std::uint16_t>> pkeys(distinct.begin(), distinct.end());
    if (pkeys.empty())
        pkeys.emplace_back(std::nullopt);
    running_ = true;
    renewal_ = table_.size() > 0;
    any_changed_ = false;
    state_ = "loading";
    step(std::move(pkeys), 0, generation_);
}

void Preloader::step(std::vector<std::optional<std::uint16_t>> pkeys, std::size_t index,
                     std::uint64_t generation) {
    if (generation != generation_) {
        running_ = false; // a resync started a fresh preload
        return;
    }
    if (index == pkeys.size()) {
        running_ = false;
        if (state_ == "loading")
            state_ = "done";
        spdlog::info("preload {}: {} paths from this port", state_, table_.size());
        preloaded_at_ = clock_.now();
        if (renewal_ && state_ == "partial") {
            // A failed renewal waits for a new use: the master may be gone for long.
            table_.forget_use();
        } else if (renewal_ && !any_changed_) {
            ++unchanged_renewals_;
        } else {
            unchanged_renewals_ = 0;
        }
        path_records_.set_table_fresh_for(renew_interval() +
                                          path_records_.config().positive_ttl / 10);
        path_records_.set_table_renewal_failed(state_ == "partial");
        schedule_renewal();
        return;
    }
    const auto port = transport_.port();
    mad::SaMad q;
    q.header.method = mad::method::kGetTable;
    q.header.attr_id = mad::attr::kPathRecord;
    sa::PathRecord pr;
    pr.sgid = port.gid;
    q.comp_mask = sa::pr_mask::kSgid;
    const auto pkey = pkeys[index];
    if (pkey) {
        pr.pkey = *pkey;
        q.comp_mask |= sa::pr_mask::kPKey;
    }
    pr.pack(q.data);
    ++counters_.preload_transactions;
    upstream::SubmitOptions options;
    options.priority = upstream::Priority::Background;
    // The whole RMPP transfer must fit one try: about 3 records a segment, and a window of
    // segments per try timeout. Sized by this PKey's last table, else by a fabric of 4,096.
    const auto known = table_.size_of(pkey);
    const auto segments = (known ? known : 4096) / 3 + 1;
    options.try_timeout = config_.try_timeout * static_cast<long>(1 + segments / 32);
    upstream_.submit(
        q.pack(),
        [this, pkeys = std::move(pkeys), index, generation, pkey](upstream::Reply r) mutable {
            if (generation != generation_) {
                running_ = false;
                return;
            }
            if (r.outcome == upstream::Outcome::Response) {
                const auto status = mad::load_be16(r.response, mad::offset::kStatus);
                auto recs = sa::response_records(r.response, sa::PathRecord::kSize);
                if ((status == 0 || status == mad::status::kSaNoRecords) && recs.complete) {
                    const auto now = clock_.now();
                    const auto until = trusted_ ? now + sa::PathRecordService::kTrustedHorizon
                                                : now + std::max<Clock::duration>(
                                                            config_.validity, renew_interval() * 2);
                    any_changed_ |= table_.replace(pkey, recs.bytes, until, now);
                    // A table the master built before a GID went out of service (its Report came
                    // first) must not bring the GID back.
                    for (const auto& gone : out_of_service_)
                        table_.erase_gid(gone);
                } else {
                    state_ = "partial";
                    spdlog::warn("preload: GetTable for PKey {} answered {}{}",
                                 pkey ? std::to_string(*pkey) : std::string("(none)"),
                                 mad::status_name(status), recs.complete ? "" : " (truncated)");
                }
            } else {
                state_ = "partial";
                spdlog::warn("preload: GetTable unanswered; the cache reads through meanwhile");
            }
            // One transaction at a time, a short pause between: preload never bursts at the master.
            timer_.expires_after(std::chrono::milliseconds{10});
            timer_.async_wait([this, pkeys = std::move(pkeys), index, generation](auto ec) {
                if (!ec)
                    step(std::move(pkeys), index + 1, generation);
                else
                    running_ = false;
            });
        },
        options);
}

void Preloader::schedule_renewal() {
    // Looked at every 0.1 TTL: a table used late in its life (a job start on an old table) is
    // renewed within 0.1 TTL, before the answers taken from it fall due (PathRecordService
    // gives those 0.2 TTL at least).
    const auto ttl = path_records_.config().positive_ttl;
    renew_timer_.expires_after(std::max<std::chrono::milliseconds>(ttl / 10, 1ms));
    renew_timer_.async_wait([this, generation = generation_](auto ec) {
        if (ec || generation != generation_)
            return;
        // Demand-driven, as the cached answers: a table nobody used since it came costs the
        // master nothing more; one in use is renewed at 0.8 TTL, before the answers it gave
        // fall due (0.9-1.1 TTL).
        const auto now = clock_.now();
        if (trusted_)
            return; // kept until the epoch changes (renew_within)
        if (table_.used() && now >= preloaded_at_ + renew_interval())
            start();
        else if (table_.live(now))
            schedule_renewal();
    });
}

} // namespace localsa::coherence

namespace localsa::coherence {

Clock::duration Preloader::renew_interval() const {
    const auto ttl = path_records_.config().positive_ttl;
    Clock::duration d = ttl * 4 / 5;
    const Clock::duration bound = path_records_.config().max_staleness;
    for (int i = 0; i < unchanged_renewals_ && d < bound; ++i)
        d *= 2;
    return std::max(std::min(d, bound), Clock::duration{ttl * 4 / 5});
}

void Preloader::set_trusted(bool trusted) {
    if (trusted == trusted_)
        return;
    trusted_ = trusted;
    const auto now = clock_.now();
    if (trusted) {
        table_.set_expiry(now + sa::PathRecordService::kTrustedHorizon);
        renew_timer_.cancel();
    } else {
        // Back on the TTL rules: what was kept on the epoch is renewed as if it came now.
        table_.set_expiry(now + config_.validity);
        preloaded_at_ = now;
        unchanged_renewals_ = 0;
        if (!running_ && table_.size() > 0)
            schedule_renewal();
    }
}

void Preloader::renew_within(std::chrono::milliseconds window) {
    if (!config_.enabled || table_.size() == 0)
        return;
    if (!table_.used()) {
        table_.clear();
        return;
    }
    renew_timer_.cancel();
    timer_.expires_after(jitter_.up_to(window));
    timer_.async_wait([this](auto ec) {
        if (!ec)
            start();
    });
}

} // namespace localsa::coherence
