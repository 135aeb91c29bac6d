// Transaction IDs of one sender's requests: the low 32 bits of a MAD's TID (the MAD layer owns
// the high ones). Shared by every part that sends requests and matches their answers.
#pragma once

#include <cstdint>

namespace localsa::mad {

class TidAllocator {
public:
    explicit TidAllocator(std::uint32_t last = 0) : last_(last) {}

    // The next TID: never 0 and never one still in flight (`in_flight.contains(tid)`), so the
    // counter may wrap after 2^32 requests.
    template <class InFlight> std::uint32_t next(const InFlight& in_flight) {
        do {
            ++last_;
        } while (last_ == 0 || in_flight.contains(last_));
        return last_;
    }

private:
    std::uint32_t last_;
};

} // namespace localsa::mad
