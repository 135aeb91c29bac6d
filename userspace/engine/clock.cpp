#include "engine/clock.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace localsa {

namespace {

class SteadyTimer final : public Clock::TimerImpl {
public:
    explicit SteadyTimer(boost::asio::any_io_executor executor) : timer_(std::move(executor)) {}

    void expires_at(Clock::time_point at) override { timer_.expires_at(at); }
    void expires_after(Clock::duration d) override { timer_.expires_after(d); }
    Clock::time_point expiry() const override { return timer_.expiry(); }
    void async_wait(Clock::WaitHandler handler) override { timer_.async_wait(std::move(handler)); }
    std::size_t cancel() override { return timer_.cancel(); }

private:
    boost::asio::steady_timer timer_;
};

} // namespace

std::unique_ptr<Clock::TimerImpl> SteadyClock::make_timer(boost::asio::any_io_executor executor) {
    return std::make_unique<SteadyTimer>(std::move(executor));
}

namespace {
class ManualTimer;
} // namespace

struct ManualClock::State {
    using Key = std::pair<time_point, std::uint64_t>; // expiry, then the order armed in
    time_point now;
    std::uint64_t next_seq = 0;
    std::map<Key, ManualTimer*> armed;
    bool advancing = false;
    std::uint64_t fired = 0;
};

namespace {

// Waits on a ManualClock: while any wait is pending, the timer is in the clock's `armed` map
// under its expiry; the clock fires it from there.
class ManualTimer final : public Clock::TimerImpl {
public:
    ManualTimer(std::shared_ptr<ManualClock::State> state, boost::asio::any_io_executor executor)
        : state_(std::move(state)), executor_(std::move(executor)) {}
    ~ManualTimer() override { cancel(); }

    void expires_at(Clock::time_point at) override {
        cancel();
        expiry_ = at;
    }
    void expires_after(Clock::duration d) override { expires_at(state_->now + d); }
    Clock::time_point expiry() const override { return expiry_; }

    void async_wait(Clock::WaitHandler handler) override {
        waits_.push_back(std::move(handler));
        if (!key_) {
            key_ = ManualClock::State::Key{expiry_, state_->next_seq++};
            state_->armed.emplace(*key_, this);
        }
    }

    std::size_t cancel() override {
        if (key_)
            state_->armed.erase(*key_);
        key_.reset();
        return complete(boost::asio::error::operation_aborted);
    }

    // The clock took it off `armed`: its waits complete.
    void fire() {
        key_.reset();
        complete({});
    }

    // The clock goes: its waits will never complete (as an io_context destroyed with handlers
    // pending). They are handed over to be destroyed, which may destroy this timer too (a
    // handler holding its own timer).
    std::vector<Clock::WaitHandler> abandon() {
        key_.reset();
        return std::exchange(waits_, {});
    }

private:
    std::size_t complete(boost::system::error_code ec) {
        auto waits = std::exchange(waits_, {});
        for (auto& handler : waits)
            boost::asio::post(executor_, [handler = std::move(handler), ec] { handler(ec); });
        return waits.size();
    }

    std::shared_ptr<ManualClock::State> state_;
    boost::asio::any_io_executor executor_;
    Clock::time_point expiry_{};
    std::vector<Clock::WaitHandler> waits_;
    std::optional<ManualClock::State::Key> key_;
};

} // namespace

ManualClock::ManualClock(boost::asio::io_context& io, time_point start)
    : io_(io), state_(std::make_shared<State>()) {
    state_->now = start;
}

ManualClock::~ManualClock() {
    std::vector<Clock::WaitHandler> abandoned;
    for (auto& [key, timer] : std::exchange(state_->armed, {}))
        for (auto& handler : timer->abandon())
            abandoned.push_back(std::move(handler));
}

Clock::time_point ManualClock::now() const {
    return state_->now;
}

std::unique_ptr<Clock::TimerImpl> ManualClock::make_timer(boost::asio::any_io_executor executor) {
    return std::make_unique<ManualTimer>(state_, std::move(executor));
}

void ManualClock::advance(duration d) {
    advance_to(state_->now + d);
}

void ManualClock::advance_to(time_point t) {
    // A handler that advances the clock would fire timers inside another timer's handler.
    if (state_->advancing)
        throw std::logic_error("ManualClock::advance called from a handler it runs");
    struct Advancing {
        bool& flag;
        explicit Advancing(bool& f) : flag(f) { flag = true; }
        ~Advancing() { flag = false; }
    } advancing{state_->advancing};
    run_ready();
    while (!state_->armed.empty()) {
        const auto first = state_->armed.begin();
        const auto expiry = first->first.first;
        if (expiry > t)
            break;
        auto* timer = first->second;
        state_->armed.erase(first);
        state_->now = std::max(state_->now, expiry);
        ++state_->fired;
        timer->fire();
        run_ready();
    }
    state_->now = std::max(state_->now, t);
    run_ready();
}

std::optional<Clock::time_point> ManualClock::next_expiry() const {
    if (state_->armed.empty())
        return std::nullopt;
    return state_->armed.begin()->first.first;
}

std::size_t ManualClock::armed() const {
    return state_->armed.size();
}

std::uint64_t ManualClock::fired() const {
    return state_->fired;
}

void ManualClock::run_ready() {
    // poll() leaves the io_context stopped once it ran out of work; the next one starts afresh.
    io_.restart();
    io_.poll();
}

} // namespace localsa
