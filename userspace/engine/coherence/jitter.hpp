// A random delay within a window, drawn per node: nodes that see the same event at the same
// moment (an SM change, a fabric-wide reboot) then act apart. xorshift64: cheap, and the draws
// need no quality beyond spreading.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace localsa::coherence {

class Jitter {
public:
    // Seeded from the system's random device (every node draws its own delays), or from
    // `seed` when it is not 0 (tests: the same draws every run).
    explicit Jitter(std::uint64_t seed = 0)
        : state_((seed != 0 ? seed : std::random_device{}()) | std::uint64_t{1} << 40) {}

    // Uniform in [0, window] (whole milliseconds); zero for an empty window.
    std::chrono::milliseconds up_to(std::chrono::milliseconds window) {
        state_ ^= state_ << 13;
        state_ ^= state_ >> 7;
        state_ ^= state_ << 17;
        return std::chrono::milliseconds{
            window.count() > 0 ? static_cast<long>(state_ % (window.count() + 1)) : 0};
    }

private:
    std::uint64_t state_;
};

} // namespace localsa::coherence
