// A rate limit for per-event log lines (every Report, every denied or accepted subscription): a
// storm of events must not flood syslog or the journal, nor cost the thread that serves MADs a
// formatted line each. The first `burst` events of each interval are logged; the rest are only
// counted, and the next event logged says how many were left out.
#pragma once

#include <chrono>
#include <cstdint>

namespace localsa {

class LogLimiter {
public:
    using Clock = std::chrono::steady_clock;

    struct Decision {
        bool log = false;             // log this event
        std::uint64_t suppressed = 0; // events left out since the last one logged: say so first
    };

    LogLimiter(std::uint32_t burst, Clock::duration interval)
        : burst_(burst), interval_(interval) {}

    Decision admit(Clock::time_point now) {
        if (logged_ == 0 || now - window_start_ >= interval_) {
            window_start_ = now;
            logged_ = 0;
        }
        if (logged_ >= burst_) {
            ++suppressed_;
            return {};
        }
        ++logged_;
        const Decision d{true, suppressed_};
        suppressed_ = 0;
        return d;
    }

private:
    std::uint32_t burst_;
    Clock::duration interval_;
    Clock::time_point window_start_{};
    std::uint32_t logged_ = 0;
    std::uint64_t suppressed_ = 0;
};

// Per-event info lines: 20 per minute per kind, more than the few traps of one fabric change.
inline constexpr std::uint32_t kEventLogBurst = 20;
inline constexpr std::chrono::seconds kEventLogInterval{60};

} // namespace localsa
