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
      config_(config), timer_(clock, executor), renew_timer_(clock, executor),
      save_timer_(clock, executor), warm_(config.warm_max), executor_(std::move(executor)) {
    path_records_.set_warm_set(&warm_);
    install_burst_hooks();
    update_miss_burst();
}

Preloader::~Preloader() {
    path_records_.set_warm_set(nullptr);
    path_records_.set_miss_burst({});
    path_records_.set_miss_burst_hooks({});
}

void Preloader::set_config(const PreloaderConfig& config) {
    config_ = config;
    warm_.set_max(config_.warm_max);
    update_miss_burst();
}

std::size_t Preloader::burst_threshold() const {
    const auto n = fabric_ports();
    if (!config_.enabled || config_.burst_share_percent == 0 || n == 0 || full_tables())
        return 0;
    // A table costs the master N records in one transaction, read-through one record and one
    // transaction per destination: asked once the port has missed this share of N, the table
    // costs at most 100/share times the records read-through would have (2 at 50%), and saves
    // all but one of the transactions. Never below 32 destinations.
    return std::max<std::size_t>(32, n * config_.burst_share_percent / 100);
}

std::chrono::milliseconds Preloader::burst_table_delay(std::size_t misses) const {
    const auto n = fabric_ports();
    if (n == 0 || misses == 0)
        return std::chrono::milliseconds{0};
    // About `misses` ports ask N records each: that many records over the master's capacity.
    const auto window_ms = static_cast<double>(misses) * static_cast<double>(n) /
                           std::max(config_.master_capacity, 1U) * 1000.0;
    // OpenSM hands out LIDs densely: a port's LID among N places it evenly, where a random
    // draw would bunch some seconds above the capacity.
    const auto lid = transport_.port().lid;
    const auto slot = static_cast<double>((lid == 0 ? 0 : lid - 1U) % n) / static_cast<double>(n);
    // Not sooner when the requesters wait less: a burst the master cannot answer within their
    // wait is answered BUSY meanwhile (burst_table_late), never pushed onto the master at once.
    return std::chrono::milliseconds{static_cast<long>(window_ms * slot)};
}

bool Preloader::burst_table_late(std::chrono::milliseconds delay) const {
    // Half of what the held misses' requesters wait (--requester-deadline-ms) is left for the
    // master's answer; one that gave up asks the master itself.
    return delay > path_records_.config().requester_deadline / 2 - config_.burst_coalesce;
}

void Preloader::update_miss_burst() {
    sa::MissBurstConfig c;
    c.threshold = burst_threshold();
    c.coalesce = config_.burst_coalesce;
    const auto& was = path_records_.miss_burst();
    if (c.threshold != was.threshold)
        spdlog::info("cold misses: {}", c.threshold ? fmt::format("{} to one partition within a "
                                                                  "second ask its table",
                                                                  c.threshold)
                                                    : std::string("each asked by its own Get"));
    path_records_.set_miss_burst(c);
}

void Preloader::install_burst_hooks() {
    sa::MissBurstHooks hooks;
    hooks.call_after = [this](std::chrono::milliseconds delay, std::optional<std::uint16_t> pkey) {
        auto& timer = burst_timers_.try_emplace(pkey, clock_, executor_).first->second;
        timer.expires_after(delay);
        timer.async_wait([this, pkey](auto ec) {
            if (!ec)
                path_records_.burst_closed(pkey);
        });
    };
    hooks.table_late = [this](std::size_t misses) {
        return burst_table_late(burst_table_delay(misses));
    };
    hooks.ask_table = [this](std::optional<std::uint16_t> pkey, std::size_t misses) {
        auto ask = [this, pkey] {
            ask_table(
                pkey, upstream::Priority::Client,
                [this, pkey](bool ok) {
                    if (ok)
                        // Above the threshold: kept until the epoch changes or it expires, never
                        // renewed (renew_within drops it).
                        path_records_.set_table_fresh_for(table_freshness());
                    path_records_.burst_table_arrived(pkey, ok);
                },
                [] {}); // a resync released the misses (PathRecordService::new_generation)
        };
        const auto delay = burst_table_delay(misses);
        if (delay.count() == 0) {
            ask();
            return;
        }
        spdlog::info("the table for {} cold misses is asked in {} ms (this port's turn among "
                     "the fabric's, at --master-capacity {} records/s)",
                     misses, delay.count(), config_.master_capacity);
        // The coalescing window's timer has fired: it waits for this port's turn now.
        auto& timer = burst_timers_.try_emplace(pkey, clock_, executor_).first->second;
        timer.expires_after(delay);
        timer.async_wait([ask, generation = generation_, this](auto ec) {
            if (!ec && generation == generation_)
                ask();
        });
    };
    path_records_.set_miss_burst_hooks(std::move(hooks));
}

std::size_t Preloader::fabric_ports() const {
    return config_.fabric_ports ? config_.fabric_ports : warm_.fabric_ports;
}

std::size_t Preloader::warm_up_size() const {
    if (!config_.enabled)
        return 0;
    const auto wanted = config_.destinations.size() + (full_tables() ? 0 : warm_.size());
    const auto n = fabric_ports();
    if (n == 0)
        return wanted;
    // 16,384 nodes with 1,024 warm questions each would be 1.7e7 Gets at a power-on: a warm-up
    // asks what the master's transactions allow beside the start, the most recent first.
    const auto fits = static_cast<double>(config_.master_transactions) *
                      std::chrono::duration<double>(kMaxStartWindow).count() /
                      static_cast<double>(n);
    const auto limit = fits > static_cast<double>(config_.start_queries)
                           ? static_cast<std::size_t>(fits) - config_.start_queries
                           : 0;
    return std::min(wanted, limit);
}

std::chrono::milliseconds Preloader::start_window() const {
    const auto queries = static_cast<double>(config_.start_queries + warm_up_size());
    const auto ms = static_cast<long>(queries * static_cast<double>(fabric_ports()) /
                                      std::max(config_.master_transactions, 1U) * 1000.0);
    return std::min(std::chrono::milliseconds{ms}, std::chrono::milliseconds{kMaxStartWindow});
}

bool Preloader::full_tables() const {
    if (config_.max_ports == 0)
        return false;
    // Not known yet (a first start without a warm file): one full table tells it.
    const auto n = fabric_ports();
    return n == 0 || n <= config_.max_ports;
}

void Preloader::schedule() {
    if (!config_.enabled) {
        state_ = "disabled";
        return;
    }
    if (!warm_loaded_ && !config_.warm_file.empty()) {
        warm_loaded_ = true;
        std::string error;
        if (warm_.load(config_.warm_file, error))
            spdlog::info(
                "warm set: {} questions from {}{}", warm_.size(), config_.warm_file.string(),
                warm_.fabric_ports ? fmt::format(" (a fabric of {} ports)", warm_.fabric_ports)
                                   : std::string());
        else
            spdlog::warn("warm set: {}; starting with none", error);
        schedule_save();
        update_miss_burst(); // the fabric's size, from the file
    }
    state_ = "waiting";
    // Tables have their own bound (max_ports: N^2 records within the spread); a warm-up waits
    // for its point in the start window.
    timer_.expires_after(
        jitter_.up_to(full_tables() ? config_.spread : std::max(config_.spread, start_window())));
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
    timer_.cancel(); // the warm set's save goes on
    renew_timer_.cancel();
    failed_.clear();
    retry_delay_ = kRetryFirst;
    state_ = config_.enabled ? "waiting" : "disabled";
}

void Preloader::stop() {
    timer_.cancel();
    renew_timer_.cancel();
    save_timer_.cancel();
}

void Preloader::shutdown() {
    stop();
    if (!config_.warm_file.empty())
        save_warm_set();
}

bool Preloader::save_warm_set() {
    std::string error;
    if (warm_.save(config_.warm_file, error)) {
        if (!save_error_.empty())
            spdlog::info("warm set: written to {} again", config_.warm_file.string());
        save_error_.clear();
        return true;
    }
    // Logged once per distinct failure: a read-only state dir must not fill the journal.
    if (error != save_error_)
        spdlog::warn("warm set not kept: {} (check --state-dir)", error);
    save_error_ = error;
    return false;
}

void Preloader::schedule_save() {
    if (config_.warm_file.empty() || config_.warm_save.count() <= 0)
        return;
    save_timer_.expires_after(config_.warm_save);
    save_timer_.async_wait([this](auto ec) {
        if (ec)
            return;
        save_warm_set();
        schedule_save();
    });
}

void Preloader::warm_up() {
    const auto own = transport_.port().gid;
    std::vector<cache::PathQueryKey> questions;
    for (const auto& d : config_.destinations)
        questions.push_back(d.question(own));
    if (!full_tables())
        for (auto& q : warm_.questions())
            questions.push_back(std::move(q));
    if (questions.size() > warm_up_size())
        questions.resize(warm_up_size());
    if (questions.empty()) {
        if (state_ == "waiting" || state_ == "loading")
            state_ = "warm";
        return;
    }
    running_ = true;
    if (!full_tables())
        state_ = "warming";
    spdlog::info("warm-up: asking {} paths used before or listed ({} ports, full tables above {}: "
                 "{})",
                 questions.size(), fabric_ports(), config_.max_ports,
                 full_tables() ? "these besides" : "not asked");
    warm_step(std::move(questions), 0, generation_);
}

void Preloader::warm_step(std::vector<cache::PathQueryKey> questions, std::size_t index,
                          std::uint64_t generation) {
    if (generation != generation_ || !transport_.port().active()) {
        running_ = false;
        return;
    }
    // The master rate budget's pace: a second's worth of background tokens per second, so the
    // warm-up queues no deeper than the budget lets out (and never past max_queued). Where the
    // fabric's size gives a start window, one at a time spread over it instead (every node
    // warms up after its start, and together they stay within the master's transactions).
    const auto per_second = std::max<std::size_t>(upstream_.config().background_rate, 1);
    const auto window = start_window();
    const auto batch = window.count() > 0 ? std::size_t{1} : per_second;
    const auto pace = window.count() > 0
                          ? std::max<std::chrono::milliseconds>(
                                window / static_cast<long>(questions.size()),
                                std::chrono::milliseconds{1000 / static_cast<long>(per_second)})
                          : std::chrono::milliseconds{std::chrono::seconds{1}};
    const auto end = std::min(questions.size(), index + batch);
    for (; index < end; ++index)
        path_records_.warm(questions[index]);
    if (index == questions.size()) {
        running_ = false;
        if (state_ == "warming")
            state_ = "warm";
        return;
    }
    timer_.expires_after(pace);
    timer_.async_wait([this, questions = std::move(questions), index, generation](auto ec) mutable {
        if (!ec)
            warm_step(std::move(questions), index, generation);
        else
            running_ = false;
    });
}

void Preloader::start() {
    if (running_ || !transport_.port().active())
        return;
    if (!full_tables()) {
        // Above the threshold: no table, and a table kept from before is not renewed.
        if (table_.size() == 0)
            warm_up();
        return;
    }
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
    load(std::move(pkeys), table_.size() > 0);
}

void Preloader::load(std::vector<std::optional<std::uint16_t>> pkeys, bool renewal) {
    timer_.cancel(); // a retry waiting is overtaken
    running_ = true;
    renewal_ = renewal;
    any_changed_ = false;
    failed_.clear();
    state_ = "loading";
    step(std::move(pkeys), 0, generation_);
}

void Preloader::schedule_retry() {
    const auto delay = retry_delay_ / 2 + jitter_.up_to(retry_delay_ / 2);
    spdlog::info("preload: {} table(s) not received, asked again in {} ms", failed_.size(),
                 delay.count());
    retry_delay_ = std::min(retry_delay_ * 2, kRetryMax);
    timer_.expires_after(delay);
    timer_.async_wait([this, pkeys = failed_, generation = generation_](auto ec) mutable {
        if (ec || generation != generation_ || running_ || !transport_.port().active())
            return; // a resync's fresh preload, or one under way, asks them anyway
        load(std::move(pkeys), false);
    });
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
        if (!renewal_ && !config_.destinations.empty())
            warm_up(); // the admin's list, besides the tables (mostly answered from them)
        if (!full_tables()) {
            // The table showed a fabric above the threshold: kept until it expires, not
            // renewed; the next start asks the warm set instead.
            spdlog::info("preload: a fabric of {} ports, above --preload-max-ports {}: the table "
                         "is not renewed, what is used is read through",
                         fabric_ports(), config_.max_ports);
            path_records_.set_table_fresh_for(table_freshness());
            return;
        }
        if (!renewal_ && !failed_.empty()) {
            schedule_retry();
        } else if (!renewal_) {
            retry_delay_ = kRetryFirst;
        }
        if (renewal_ && state_ == "partial") {
            // A failed renewal waits for a new use: the master may be gone for long.
            table_.forget_use();
        } else if (renewal_ && !any_changed_) {
            ++unchanged_renewals_;
        } else {
            unchanged_renewals_ = 0;
        }
        path_records_.set_table_fresh_for(table_freshness());
        path_records_.set_table_renewal_failed(state_ == "partial");
        schedule_renewal();
        return;
    }
    ++counters_.preload_transactions;
    const auto pkey = pkeys[index];
    ask_table(
        pkey, upstream::Priority::Background,
        [this, pkeys = std::move(pkeys), index, generation](bool ok) mutable {
            if (!ok) {
                state_ = "partial";
                failed_.push_back(pkeys[index]);
            }
            // One transaction at a time, a short pause between: preload never bursts at
            // the master.
            timer_.expires_after(std::chrono::milliseconds{10});
            timer_.async_wait([this, pkeys = std::move(pkeys), index, generation](auto ec) {
                if (!ec)
                    step(std::move(pkeys), index + 1, generation);
                else
                    running_ = false;
            });
        },
        [this] { running_ = false; });
}

void Preloader::ask_table(std::optional<std::uint16_t> pkey, upstream::Priority priority,
                          std::function<void(bool ok)> done, std::function<void()> superseded) {
    const auto port = transport_.port();
    mad::SaMad q;
    q.header.method = mad::method::kGetTable;
    q.header.attr_id = mad::attr::kPathRecord;
    sa::PathRecord pr;
    pr.sgid = port.gid;
    q.comp_mask = sa::pr_mask::kSgid;
    if (pkey) {
        pr.pkey = *pkey;
        q.comp_mask |= sa::pr_mask::kPKey;
    }
    pr.pack(q.data);
    upstream::SubmitOptions options;
    options.priority = priority;
    // The whole RMPP transfer must fit one try: about 3 records a segment, and a window of
    // segments per try timeout. Sized by this PKey's last table, else by the fabric's size,
    // else by a fabric of 4,096.
    auto known = table_.size_of(pkey);
    if (known == 0)
        known = fabric_ports();
    const auto segments = (known ? known : 4096) / 3 + 1;
    options.try_timeout = config_.try_timeout * static_cast<long>(1 + segments / 32);
    // A burst's table (asked for requesters): one try. A master that is late with a table is
    // busy with every node's, and asking again would add one; the try waits what all tries
    // would, and at least as long as OpenSM keeps a request queued (max_msg_fifo_timeout,
    // 10 s) plus the transfer: a table it took is answered within that.
    if (priority == upstream::Priority::Client) {
        options.single_try = true;
        *options.try_timeout =
            std::max(*options.try_timeout * static_cast<long>(upstream_.config().retries + 1),
                     std::chrono::milliseconds{std::chrono::seconds{10}} + *options.try_timeout);
    }
    upstream_.submit(
        q.pack(),
        [this, pkey, generation = generation_, done = std::move(done),
         superseded = std::move(superseded)](upstream::Reply r) {
            if (generation != generation_) {
                superseded();
                return;
            }
            bool ok = false;
            if (r.outcome == upstream::Outcome::Response) {
                const auto status = mad::load_be16(r.response, mad::offset::kStatus);
                auto recs = sa::response_records(r.response, sa::PathRecord::kSize);
                if ((status == 0 || status == mad::status::kSaNoRecords) && recs.complete) {
                    ok = true;
                    const auto now = clock_.now();
                    const auto until = trusted_ ? now + sa::PathRecordService::kTrustedHorizon
                                                : now + std::max<Clock::duration>(
                                                            config_.validity, renew_interval() * 2);
                    // The fabric's size, for the choice of the next preload: the largest
                    // partition's table, one record per port as a rule (LMC 0).
                    warm_.fabric_ports =
                        std::max(warm_.fabric_ports, recs.bytes.size() / sa::PathRecord::kSize);
                    any_changed_ |= table_.replace(pkey, recs.bytes, until, now);
                    update_miss_burst();
                    // A table the master built before a GID went out of service (its Report came
                    // first) must not bring the GID back.
                    for (const auto& gone : out_of_service_)
                        table_.erase_gid(gone);
                } else {
                    spdlog::warn("preload: GetTable for PKey {} answered {}{}",
                                 pkey ? std::to_string(*pkey) : std::string("(none)"),
                                 mad::status_name(status), recs.complete ? "" : " (truncated)");
                }
            } else {
                spdlog::warn("preload: GetTable unanswered; the cache reads through meanwhile");
            }
            done(ok);
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
        if (table_.used() && now >= preloaded_at_ + renew_interval() && full_tables())
            start();
        else if (table_.live(now))
            schedule_renewal();
    });
}

} // namespace localsa::coherence

namespace localsa::coherence {

Clock::duration Preloader::table_freshness() const {
    return renew_interval() + path_records_.config().positive_ttl / 10;
}

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
    if (!full_tables()) {
        table_.clear(); // above the threshold: what is in use is renewed answer by answer
        return;
    }
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
