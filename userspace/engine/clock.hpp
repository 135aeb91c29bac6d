// The engine's time. Every part of the engine reads the time and arms its timers through the
// Clock it was given, never through std::chrono::steady_clock or asio's timers directly.
//
// Why: time is an input of the engine (TTLs, refresh, retries, back-off, spread, subscription
// checks), and a test or a simulation must be able to set it. localsad runs on a SteadyClock
// (steady_clock and asio's steady_timer: behaviour and cost as before). Unit tests and the fleet
// simulation run on a ManualClock: time stands still until the driver advances it, and then
// each timer due fires in order, its handler run through the io_context as in production. One
// ManualClock can drive any number of local SAs sharing its io_context (an hour of a fleet in
// seconds). A clock is an instance handed to the parts, not global state: two engines in one
// process can run on different clocks.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace boost::asio {
class io_context;
} // namespace boost::asio

namespace localsa {

class Clock {
public:
    // The steady clock's types, so that times stored in the engine mean the same on every clock.
    using duration = std::chrono::steady_clock::duration;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::steady_clock::time_point;
    // Told once per wait: success when the timer expired, operation_aborted when it was
    // cancelled, re-armed or destroyed first (as asio's timers).
    using WaitHandler = std::function<void(const boost::system::error_code&)>;

    // One timer of a clock (Timer holds it).
    class TimerImpl {
    public:
        virtual ~TimerImpl() = default;
        virtual void expires_at(time_point at) = 0;
        virtual void expires_after(duration d) = 0;
        virtual time_point expiry() const = 0;
        virtual void async_wait(WaitHandler handler) = 0;
        virtual std::size_t cancel() = 0;
    };

    virtual ~Clock() = default;
    virtual time_point now() const = 0;
    // A timer whose handlers run on `executor`.
    virtual std::unique_ptr<TimerImpl> make_timer(boost::asio::any_io_executor executor) = 0;
};

// What the engine arms instead of boost::asio::steady_timer, with the same calls and the same
// semantics: re-arming or cancelling completes pending waits with operation_aborted, and so does
// destroying the timer.
class Timer {
public:
    Timer(Clock& clock, boost::asio::any_io_executor executor)
        : impl_(clock.make_timer(std::move(executor))) {}

    void expires_at(Clock::time_point at) { impl_->expires_at(at); }
    void expires_after(Clock::duration d) { impl_->expires_after(d); }
    Clock::time_point expiry() const { return impl_->expiry(); }
    void async_wait(Clock::WaitHandler handler) { impl_->async_wait(std::move(handler)); }
    std::size_t cancel() { return impl_->cancel(); }

private:
    std::unique_ptr<Clock::TimerImpl> impl_;
};

// Real time: std::chrono::steady_clock and asio's steady_timer. localsad's clock.
class SteadyClock final : public Clock {
public:
    time_point now() const override { return std::chrono::steady_clock::now(); }
    std::unique_ptr<TimerImpl> make_timer(boost::asio::any_io_executor executor) override;
};

// Time that moves only when told to, for tests and simulations. Single-threaded: the clock, its
// timers and the io_context they run on belong to one thread. Timers fire only inside advance()
// and poll(), which run the io_context's ready handlers themselves (the io_context needs no
// run()): a handler runs with now() at its timer's expiry, and whatever it posts runs before the
// next timer fires.
class ManualClock final : public Clock {
public:
    // A day after the steady clock's epoch, as on a machine that has been up for a while:
    // time_point{} stays a moment long past (the engine uses it for "never").
    static constexpr time_point kStart{std::chrono::hours{24}};

    explicit ManualClock(boost::asio::io_context& io, time_point start = kStart);
    ~ManualClock() override;
    ManualClock(const ManualClock&) = delete;
    ManualClock& operator=(const ManualClock&) = delete;

    time_point now() const override;
    std::unique_ptr<TimerImpl> make_timer(boost::asio::any_io_executor executor) override;

    // Moves time forward by `d` (to `t`): runs the ready handlers, then fires each timer due by
    // then in the order of expiry (equal ones in the order they were armed), setting now() to
    // its expiry and running the io_context's ready handlers after each; ends at the target
    // time. Time never goes back: a target in the past only runs what is due now.
    void advance(duration d);
    void advance_to(time_point t);
    // Runs the ready handlers and the timers due now, without moving time.
    void poll() { advance_to(now()); }

    // When the next armed timer expires (nullopt: none is armed): a discrete-event driver may
    // advance_to() it directly.
    std::optional<time_point> next_expiry() const;
    // Timers armed and waiting.
    std::size_t armed() const;
    // Timers fired since construction: what a node's idle hour costs it in wake-ups.
    std::uint64_t fired() const;

    struct State; // shared with the timers, so a timer outliving the clock stays safe to destroy

private:
    void run_ready();

    boost::asio::io_context& io_;
    std::shared_ptr<State> state_;
};

} // namespace localsa
