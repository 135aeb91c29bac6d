// Loss injection for tests: drops a share of the GMPs (every management class but the SMP
// classes 0x01 and 0x81, so SA, CM, performance ... traffic) the relay carries, in both
// directions. SMPs are never dropped: OpenSM's sweeps stay intact and only the traffic a local
// SA and its clients see is lossy. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace simhca_relay {

class LossInjector {
public:
    LossInjector(double rate, std::uint64_t seed) : rate_(rate), rng_(seed) {}

    // True when this MAD (its first bytes: base version, class, ...) is to be dropped.
    bool drop(const std::uint8_t* mad);
    double rate() const { return rate_; }
    void set_rate(double rate) { rate_ = rate; }
    // Reads a rate (0..1) from `path` if it exists and holds one; returns true when it changed.
    bool reload_from(const std::string& path);
    std::uint64_t dropped() const { return dropped_; }

private:
    double rate_;
    std::mt19937_64 rng_;
    std::uniform_real_distribution<double> uniform_{0.0, 1.0};
    std::uint64_t dropped_ = 0;
};

} // namespace simhca_relay
